"""The 95% confidence interval of the mean of repeated measurements (Student's t), one computation for the
importers (IOR, mdtest) and the benchmark's repetitions."""
from __future__ import annotations

import functools
import math


@functools.lru_cache(maxsize=None)
def t95(df: int) -> float:
    """Two-sided 95% quantile of Student's t with `df` degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("t quantile needs at least one degree of freedom")
    # imported at the first interval computed: commands that compute none do not load scipy
    from scipy.stats import t
    return float(t.ppf(0.975, df))


def ci95(mean: float, sample_sd: float | None, n: int | None) -> tuple[float | None, float | None]:
    """Student-t 95% interval of a mean of `n` measurements with sample deviation `sample_sd`;
    (None, None) when it cannot be computed. The low end is clipped at 0 (rates are never negative)."""
    if n is None or n < 2 or sample_sd is None or sample_sd < 0:
        return None, None
    half = t95(n - 1) * sample_sd / math.sqrt(n)
    return max(0.0, mean - half), mean + half
