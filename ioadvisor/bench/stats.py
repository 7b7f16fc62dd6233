"""Repetition statistics: mean, min, max, sample standard deviation and a Student-t 95% confidence interval."""
from __future__ import annotations

import math
from typing import Sequence

from ..model.stats import ci95


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """Mean, min, max, sd (n-1) and the 95% CI of the mean; sd and CI are None for a single value."""
    n = len(values)
    if n == 0:
        raise ValueError("no values to summarize")
    mean = sum(values) / n
    out: dict[str, float | int | None] = {"n": n, "mean": mean, "min": min(values), "max": max(values),
                                          "sd": None, "ci95_low": None, "ci95_high": None}
    if n > 1:
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
        low, high = ci95(mean, sd, n)
        out.update(sd=sd, ci95_low=low, ci95_high=high)
    return out
