"""A bound-and-bottleneck performance model fitted to measured runs.

Bandwidth is limited by the narrowest stage: the clients (nodes x per-client bandwidth), the storage targets
the data spans (stripes of a shared file, or the OSTs the files of file-per-process land on, x per-target
bandwidth) and the file system's peak. A shared file written by several ranks pays a penalty for lock
contention, and small requests fall off a knee. Metadata rates are modelled as ranks x per-rank rate up to a
ceiling. Parameters are fitted in log space per (system, file system, op) by a grid search over values the
runs themselves suggest; the residuals give the uncertainty. Everything here is pure.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable, Sequence

from ..model.run import DATA_OPS, Run

if TYPE_CHECKING:
    import numpy as np

INF = float("inf")
# relative half-width (log space) used when a fit rests on one or two runs: we do not know its error
MIN_LOG_SIGMA = 0.08


@dataclass(frozen=True)
class Point:
    """The model's view of one run or one candidate setting."""

    clients: float          # client nodes (inf: not stated, i.e. an aggregate over many clients)
    ranks: float
    targets: float          # storage targets the data spans
    shared: bool            # several ranks in one file
    transfer: float | None  # bytes per request
    klass: str | None = None  # API and collective mode, e.g. "MPIIO/coll" (see `io_class`)


def io_class(api: str | None, collective: bool | None) -> str:
    """The API class a run or a candidate belongs to: `POSIX/-`, `MPIIO/coll`, `MPIIO/indep`, ..."""
    mode = "-" if collective is None else ("coll" if collective else "indep")
    return f"{api or '?'}/{mode}"


@dataclass(frozen=True)
class Fit:
    """Fitted parameters of one (system, file system, op) group."""

    system: str
    filesystem: str | None
    op: str
    unit: str
    kind: str                        # bandwidth | rate
    per_client: float
    per_target: float
    peak: float
    shared_penalty: float = 1.0
    knee: float = 0.0                # bytes: value x t/(t+knee)
    log_sigma: float = MIN_LOG_SIGMA
    class_factors: tuple[tuple[str, float], ...] = ()   # per API class, fitted when runs measure several
    n_runs: int = 0
    run_ids: tuple[str, ...] = field(default=(), compare=False)
    clients_min: float = 0.0         # the client counts the runs measured (inf: an aggregate over many clients)
    clients_max: float = INF

    def predict(self, p: Point) -> float:
        if self.kind == "rate":
            v = min(p.ranks * self.per_client, self.peak)
        else:
            v = min(p.clients * self.per_client, p.targets * self.per_target, self.peak)
            if p.shared and p.ranks > 1:
                v *= self.shared_penalty
            if p.transfer and self.knee:
                v *= p.transfer / (p.transfer + self.knee)
        if self.class_factors and p.klass:
            v *= dict(self.class_factors).get(p.klass, 1.0)
        return float(v)

    def extrapolates(self, p: Point) -> bool:
        """Whether `p` lies outside the client counts the fit was measured at (its error is then much larger:
        see `kb validate`)."""
        return not self.clients_min <= p.clients <= self.clients_max

    def interval(self, value: float, z: float = 1.64) -> tuple[float, float]:
        w = math.exp(z * self.log_sigma)
        return value / w, value * w


def run_point(r: Run, ost_count: int | None = None, default_stripes: int | None = None) -> Point:
    """How a measured run maps onto the model's inputs. Unstated client counts mean an aggregate peak."""
    ranks = r.ranks or (r.nodes * (r.ranks_per_node or 1) if r.nodes else None)
    clients = r.nodes or (ranks if ranks else None)
    osts = r.ost_count or ost_count
    stripes = r.stripe_count if r.stripe_count not in (None, 0) else (default_stripes or 1)
    if stripes == -1:
        stripes = osts or 1
    shared = r.layout == "shared"
    n = ranks or INF
    if shared or n == 1:
        targets = float(stripes)
    else:
        targets = n * stripes
    if osts:
        targets = min(targets, float(osts))
    if (r.fs_type or "lustre") not in ("lustre", "beegfs"):
        targets = INF                # no user striping: data spread over every target

    return Point(clients=float(clients) if clients else INF, ranks=float(n), targets=targets, shared=shared,
                 transfer=float(r.transfer_size) if r.transfer_size else None, klass=io_class(r.api, r.collective))


def _candidates(values: "np.ndarray", extra: Sequence[float] = (), k: int = 10) -> "np.ndarray":
    import numpy as np
    v = values[np.isfinite(values) & (values > 0)]
    if v.size > k:
        v = np.quantile(v, np.linspace(0, 1, k))
    return np.unique(np.concatenate([v, np.asarray(extra, dtype=float)]))


def fit_group(system: str, filesystem: str | None, op: str, runs: Sequence[Run], *,
              ost_count: int | None = None, default_stripes: int | None = None, max_runs: int = 400) -> Fit | None:
    """Fit one group's parameters to its runs; None without runs."""
    import numpy as np   # imported here: advice from cached fits never needs it
    runs = [r for r in runs if r.value and r.value > 0]
    if not runs:
        return None
    if len(runs) > max_runs:           # a deterministic, evenly spread subsample keeps fitting fast
        step = len(runs) / max_runs
        runs = [runs[int(i * step)] for i in range(max_runs)]
    unit = runs[0].unit
    runs = [r for r in runs if r.unit == unit]
    kind = "rate" if op not in DATA_OPS or unit != "MiB/s" else "bandwidth"
    pts = [run_point(r, ost_count, default_stripes) for r in runs]
    y = np.log(np.array([r.value for r in runs]))
    clients = np.array([p.clients for p in pts])
    ranks = np.array([p.ranks for p in pts])
    targets = np.array([p.targets for p in pts])
    shared = np.array([p.shared and p.ranks > 1 for p in pts])
    transfer = np.array([p.transfer or np.nan for p in pts])
    vals = np.exp(y)
    big = float(vals.max()) * 1e3
    if kind == "rate":
        c_c = _candidates(vals / ranks, [big])
        t_c = np.array([INF])
        a_c = ranks
    else:
        c_c = _candidates(vals / clients, [big])
        t_c = _candidates(vals / targets, [big])
        a_c = clients
    p_c = _candidates(vals, [])
    s_c = np.array([1.0]) if not (shared.any() and (~shared).any()) else np.array([1.0, .85, .7, .55, .4, .3, .2])
    ts = transfer[np.isfinite(transfer)]
    k_c = np.array([0.0])
    if kind == "bandwidth" and np.unique(ts).size >= 2 and ts.min() < 262144:
        k_c = np.array([0.0, 16384, 65536, 262144, 1048576])
    # all combinations, vectorised: shape (combos, runs)
    C, T, P, S, K = (g.ravel() for g in np.meshgrid(c_c, t_c, p_c, s_c, k_c, indexing="ij"))
    with np.errstate(invalid="ignore", over="ignore"):
        pred = np.minimum(np.minimum(C[:, None] * a_c[None, :], T[:, None] * targets[None, :]), P[:, None])
        pred = pred * np.where(shared[None, :], S[:, None], 1.0)
        tr = np.where(np.isfinite(transfer), transfer, np.inf)[None, :]
        pred = pred * np.where(np.isfinite(tr), tr / (tr + K[:, None]), 1.0)
        err = np.log(pred) - y[None, :]
    loss = (err ** 2).sum(axis=1)
    # among equally good fits prefer the conservative one (smallest limits): it never promises unseen speed
    tie = 1e-9 * (np.log(np.minimum(C, big)) + np.log(np.minimum(T, big)) + np.log(P))
    best = int(np.argmin(loss + tie))
    resid = err[best].copy()
    n = len(runs)
    # API classes (POSIX, MPI-IO collective, independent ...): a factor each, from their mean residual, shrunk
    # towards 1 by one pseudo-run so that one odd run does not swing a whole class
    classes = [io_class(r.api, r.collective) for r in runs]
    factors: list[tuple[str, float]] = []
    if len(set(classes)) >= 2:
        for k in sorted(set(classes)):
            idx = [i for i, c in enumerate(classes) if c == k]
            shift = -float(resid[idx].sum()) / (len(idx) + 1)
            factors.append((k, math.exp(shift)))
            resid[idx] += shift
    sigma = float(np.sqrt((resid ** 2).sum() / max(n - 1, 1))) if n > 1 else 0.0
    # few runs: widen (the fit can match 2-3 runs exactly without knowing its true error)
    sigma = max(sigma, MIN_LOG_SIGMA * (1 + 3 / math.sqrt(n)))
    return Fit(system=system, filesystem=filesystem, op=op, unit=unit, kind=kind, per_client=float(C[best]),
               per_target=float(T[best]), peak=float(P[best]), shared_penalty=float(S[best]), knee=float(K[best]),
               log_sigma=sigma, class_factors=tuple(factors), n_runs=n, run_ids=tuple(r.id for r in runs if r.id),
               clients_min=float(clients.min()), clients_max=float(clients.max()))


def group_runs(runs: Iterable[Run]) -> dict[tuple[str, str | None, str], list[Run]]:
    """Runs grouped by (system, file system, op), the unit a model is fitted on."""
    out: dict[tuple[str, str | None, str], list[Run]] = {}
    for r in runs:
        out.setdefault((r.system, r.filesystem, r.op), []).append(r)
    return out


# metadata operations that only look up (served in parallel from the metadata server's cache) and those that
# change the namespace (serialised by its journal and directory locks): they saturate at different client counts
_LOOKUPS = ("file_stat", "dir_stat", "file_read")


def _families(op: str, kind: str) -> tuple[str, ...]:
    """The families of ops, closest first, whose scaling with clients is set by the same part of a system:
    metadata lookups and metadata updates (then any metadata op) share the metadata server, random-I/O ops the
    targets' IOPS, sequential read and write the client links and targets."""
    if kind == "bandwidth":
        return ("bandwidth",)
    if op in DATA_OPS:
        return ("iops",)
    return ("metadata/lookup" if op in _LOOKUPS else "metadata/update", "metadata")


def _scale_counts(fit: Fit, runs: Sequence[Run], ost_count: int | None,
                  default_stripes: int | None) -> tuple[set[float], set[float], bool]:
    """The client (rank, for rates) counts and the target counts a group's runs measured, and whether the best
    value measured at each count rises with the count (the runs then show where the ceiling sets in)."""
    pts = [(run_point(r, ost_count, default_stripes), r.value) for r in runs
           if r.value and r.value > 0 and r.unit == fit.unit]
    best: dict[float, float] = {}
    for p, v in pts:
        n = p.ranks if fit.kind == "rate" else p.clients
        best[n] = max(best.get(n, 0.0), v)
    seq = [best[n] for n in sorted(best)]
    rising = len(seq) >= 2 and all(b > a for a, b in zip(seq, seq[1:]))
    return set(best), {p.targets for p, _ in pts}, rising


def _with_saturation_prior(fit: Fit, counts: set[float], targets: set[float], saturation: float,
                           spread: float) -> Fit:
    """A group measured at one client (rank) count cannot tell the per-client value from the ceiling: the grid
    search then picks the smallest limits that match, i.e. it predicts the one measured value for every count.
    Here the count at which sibling ops of the same system saturate (ceiling / per-client value) fills in the
    limit the runs do not determine. Its uncertainty widens by the spread of the siblings' saturation points."""
    (n,) = counts
    sigma = max(fit.log_sigma, spread)
    if math.isfinite(n) and n < saturation:
        # the runs measured the per-client side below saturation: the ceiling was unseen
        per_client = min(fit.per_client, fit.peak / n)
        peak = per_client * saturation
        per_target = fit.per_target
        if len(targets) == 1:
            # one target count as well: nothing says the targets, rather than the client, bound those runs
            (t,) = targets
            if math.isfinite(t) and t > 0:
                per_target = max(per_target, peak / t)
        return replace(fit, per_client=per_client, per_target=per_target, peak=peak, log_sigma=sigma)
    # the runs measured an aggregate (or a count past saturation): the per-client value was unseen
    return replace(fit, per_client=fit.peak / saturation, log_sigma=sigma)


def fit_all(runs: Iterable[Run], ost_counts: dict[str | None, int | None] | None = None,
            default_stripes: dict[str | None, int | None] | None = None) -> dict[tuple[str, str | None, str], Fit]:
    """Fits for every (system, file system, op) group of `runs`. Groups measured at a single client (rank) count
    borrow the saturation point of the groups of the same system, file system and family that measured
    several (see `_with_saturation_prior`)."""
    fits = {}
    counts: dict[tuple, set[float]] = {}
    targets: dict[tuple, set[float]] = {}
    rising: dict[tuple, bool] = {}
    for key, rs in group_runs(runs).items():
        osts, dflt = (ost_counts or {}).get(key[1]), (default_stripes or {}).get(key[1])
        f = fit_group(*key, rs, ost_count=osts, default_stripes=dflt)
        if f is not None:
            fits[key] = f
            counts[key], targets[key], rising[key] = _scale_counts(f, rs, osts, dflt)
    # saturation counts of groups that measured at least two client counts, one of them finite, with values rising
    # with the count: a group as fast (or slower) at more clients was saturated already, or has contention the
    # model does not describe (a peak and a lower sustained plateau), and shows no saturation point
    sat: dict[tuple, list[float]] = {}
    for key, f in fits.items():
        c = counts[key]
        if len(c) >= 2 and any(math.isfinite(x) for x in c) and rising[key] and 0 < f.per_client < f.peak:
            for fam in _families(key[2], f.kind):
                sat.setdefault((key[0], key[1], fam), []).append(math.log(f.peak / f.per_client))
    for key, f in fits.items():
        logs = next((sat[k] for fam in _families(key[2], f.kind) if (k := (key[0], key[1], fam)) in sat), None)
        if len(counts[key]) == 1 and logs:
            m = statistics.median(logs)
            spread = math.sqrt(sum((x - m) ** 2 for x in logs) / (len(logs) - 1)) if len(logs) > 1 else 0.0
            fits[key] = _with_saturation_prior(f, counts[key], targets[key], math.exp(m), spread)
    return fits
