"""Linearised experimental design on a fitted model: which new measurements would shrink the posterior most.

The fit's posterior is approximated as Laplace (the Gauss-Newton precision of the standardised residuals at the
optimum, data rows plus prior rows), as `physical.fit` does. A new run at point x with log-space noise s adds
g(x) g(x)^T / s^2 to the precision, where g(x) is the gradient of the log prediction at x with respect to the
parameters. The parameter variance of the log prediction at a target t is g(t)^T C g(t); after measuring x it is

    g(t)^T C g(t) - (g(t)^T C g(x))^2 / (s^2 + g(x)^T C g(x))          (a rank-one update of C)

so the expected effect of every candidate on every target is one matrix product: a linearised A-optimal design,
cheap and deterministic. Nothing here touches the KB; numpy is imported by the functions that need it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from . import EXTRAPOLATION_WIDENING, UNMEASURED_CLASS_SD
from . import physical as ph

STEP = 1e-4          # central-difference step for the gradients (parameters are logs or O(1) shapes)


def _model(kind: str) -> Any:
    # the model's vectorised evaluators (the same functions `physical.fit` fits)
    return ph._bw if kind == "bandwidth" else ph._rate


def log_gradients(post: ph.Posterior, points: Sequence[ph.PPoint]) -> "Any":
    """d log(prediction) / d theta at each point (rows) for the posterior's MAP parameters (columns, in the
    order of `post.theta`), by central differences on the vectorised model."""
    import numpy as np
    names = [k for k, _ in post.theta]
    theta = np.array([v for _, v in post.theta])
    if not points:
        return np.zeros((0, len(names)))
    caps = [k for k in names if k.startswith("cap:")] if post.kind == "bandwidth" else []
    X = ph.array_inputs(points, caps)
    f = _model(post.kind)
    out = np.zeros((len(points), len(names)))

    def logpred(x: "np.ndarray") -> "np.ndarray":
        with np.errstate(all="ignore"):
            v = np.asarray(f(dict(zip(names, x)), X, np), dtype=float)
        return np.log(np.clip(np.nan_to_num(v, nan=1e-300, posinf=1e300), 1e-300, None))

    for j in range(len(names)):
        hi, lo = theta.copy(), theta.copy()
        hi[j] += STEP
        lo[j] -= STEP
        out[:, j] = (logpred(hi) - logpred(lo)) / (2 * STEP)
    return np.nan_to_num(out)


def prior_sd(post: ph.Posterior, values: Sequence[float] = (1.0,)) -> "Any":
    """The prior standard deviation of each parameter of the posterior (the model's own prior table)."""
    import numpy as np
    names = [k for k, _ in post.theta]
    klasses = [k[4:] for k in names if k.startswith("cap:")]
    # the cache's priors too: `_priors` adds them only where a group's runs moved different volumes
    table = {**ph._CACHE_PRIORS, **ph._priors(post.kind, klasses, None, list(values))}
    return np.array([table[k][1] if k in table else ph.API_CAP_SD for k in names])


def covariance(post: ph.Posterior, points: Sequence[ph.PPoint]) -> "Any":
    """Laplace covariance of the parameters given the runs at `points`: (J^T J)^-1 with the data rows
    standardised by the model's noise scale and the prior rows by the prior sd, widened as the fit widens it
    when the runs scatter more than that scale."""
    import numpy as np
    J = log_gradients(post, points) / ph.OBS_SIGMA
    H = J.T @ J + np.diag(1.0 / prior_sd(post) ** 2)
    scale = max(1.0, (post.log_sigma / ph.OBS_SIGMA) ** 2)
    return np.linalg.pinv(H) * scale


def noise_sd(post: ph.Posterior) -> float:
    """The log-space noise of one new run, as the fit's covariance scaling assumes it."""
    return max(ph.OBS_SIGMA, post.log_sigma)


def _distance(c: Any, lo: Any, hi: Any) -> Any:
    """`Fit.distance` on arrays: factors of two of client count outside [lo, hi] (0 inside or unstated)."""
    import numpy as np
    with np.errstate(all="ignore"):
        lo1 = np.maximum(lo, 1.0)
        below = np.where(c < lo1, np.log2(lo1 / np.maximum(c, 1.0)), 0.0)
        above = np.where((c > hi) & np.isfinite(hi), np.log2(c / hi), 0.0)
        d = np.where(np.isfinite(c), below + above, 0.0)
    return np.nan_to_num(d)


@dataclass
class Group:
    """One fitted group in a design: its parameter covariance, the targets whose predictive variance counts
    (each with a weight) and the candidates' gradients. The predictive variance of a target is the one
    `Fit.log_sd` states: (parameter variance + one run's noise) widened outside the measured client counts and
    for an API class no run measured, times the interval calibration. A candidate widens the measured client
    range and measures its API class, so it narrows extrapolated targets beyond what the parameters alone say."""

    cov: Any                    # parameters x parameters
    targets: Any                # gradients, targets x parameters
    weight: Any                 # targets
    candidates: Any             # gradients, candidates x parameters
    active: Any                 # candidates (bool): whether the candidate measures this group at all
    noise: float                # log sd of one new run
    sigma: float                # log sd of one run in the predictive interval (the fit's residual scale)
    t_clients: Any              # targets' client counts
    c_clients: Any              # candidates' client counts
    lo: float                   # client counts measured so far
    hi: float
    t_class: Any                # targets' API class ids
    c_class: Any                # candidates' API class ids
    measured: set[int]          # API class ids measured so far
    classes_known: bool = True  # False: the fit knows no API classes (no widening for an unmeasured one)
    scale: float = 1.0          # interval calibration

    def _k(self, measured_extra: Any = None) -> Any:
        import numpy as np
        if not self.classes_known:
            return np.zeros(len(self.t_class)) if measured_extra is None else \
                np.zeros((len(self.t_class), len(measured_extra)))
        un = ~np.isin(self.t_class, sorted(self.measured))
        if measured_extra is None:
            return np.where(un, UNMEASURED_CLASS_SD ** 2, 0.0)
        hit = self.t_class[:, None] == measured_extra[None, :]
        return np.where(un[:, None] & ~hit, UNMEASURED_CLASS_SD ** 2, 0.0)

    def param_var(self) -> Any:
        import numpy as np
        return np.einsum("ij,jk,ik->i", self.targets, self.cov, self.targets)

    def target_var(self) -> Any:
        """Each target's predictive log variance now."""
        f = 1.0 + EXTRAPOLATION_WIDENING * _distance(self.t_clients, self.lo, self.hi)
        return (f ** 2 * (self.param_var() + self.sigma ** 2) + self._k()) * self.scale ** 2

    def gains(self) -> Any:
        """The weighted predictive variance each candidate would remove from the targets (one per candidate)."""
        import numpy as np
        A = self.targets @ self.cov @ self.candidates.T                     # targets x candidates
        q = np.einsum("ij,jk,ik->i", self.candidates, self.cov, self.candidates)
        dv = np.where(self.active[None, :], A ** 2 / (self.noise ** 2 + q)[None, :], 0.0)
        lo = np.where(self.active, np.minimum(self.lo, self.c_clients), self.lo)
        hi = np.where(self.active, np.maximum(self.hi, self.c_clients), self.hi)
        f = 1.0 + EXTRAPOLATION_WIDENING * _distance(self.t_clients[:, None], lo[None, :], hi[None, :])
        cls = np.where(self.active, self.c_class, -1)
        after = (f ** 2 * (self.param_var()[:, None] - dv + self.sigma ** 2) + self._k(cls)) * self.scale ** 2
        return (self.weight[:, None] * (self.target_var()[:, None] - after)).sum(axis=0)

    def add(self, i: int) -> None:
        """Measure candidate `i`: the rank-one update of the covariance, the client range and the classes."""
        import numpy as np
        if not self.active[i]:
            return
        g = self.candidates[i]
        Cg = self.cov @ g
        self.cov = self.cov - np.outer(Cg, Cg) / (self.noise ** 2 + g @ Cg)
        self.lo = float(min(self.lo, self.c_clients[i]))
        self.hi = float(max(self.hi, self.c_clients[i]))
        self.measured.add(int(self.c_class[i]))


def greedy(groups: Sequence[Group], budget: int, allowed: Sequence[bool] | None = None) -> Iterator[tuple[int, float]]:
    """Pick `budget` candidates one after the other, each the one that removes the most weighted target variance
    given those already picked (a candidate may be picked again: a repeat measurement also informs). Yields
    (candidate index, variance removed) as each is picked, with `groups` updated to include it."""
    import numpy as np
    if not groups:
        return
    n = groups[0].candidates.shape[0]
    ok = np.ones(n, dtype=bool) if allowed is None else np.asarray(allowed, dtype=bool)
    for _ in range(budget):
        total = np.zeros(n)
        for g in groups:
            total += g.gains()
        total[~ok] = -math.inf
        i = int(np.argmax(total))
        if not math.isfinite(total[i]):
            break
        for g in groups:
            g.add(i)
        yield i, float(total[i])


__all__ = ["Group", "covariance", "greedy", "log_gradients", "noise_sd", "prior_sd"]
