"""Repetition statistics: mean, min, max, sample standard deviation and a Student-t 95% confidence interval.

The two-sided 97.5% quantiles of Student's t distribution are tabulated here so that no scipy is needed.
"""
from __future__ import annotations

import math
from typing import Sequence

# t_{0.975, df} for df = 1..30
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
# larger df: (df, t); between rows interpolate linearly in 1/df, which is how printed tables are meant to be read
_T975_LARGE = ((30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980), (math.inf, 1.960))


def t975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if df <= 30:
        return _T975[df - 1]
    for (d0, t0), (d1, t1) in zip(_T975_LARGE, _T975_LARGE[1:]):
        if d0 <= df <= d1:
            x0, x1, x = 1 / d0, (0.0 if d1 == math.inf else 1 / d1), 1 / df
            return t1 + (t0 - t1) * (x - x1) / (x0 - x1)
    return 1.960


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
        half = t975(n - 1) * sd / math.sqrt(n)
        out.update(sd=sd, ci95_low=max(0.0, mean - half), ci95_high=mean + half)
    return out
