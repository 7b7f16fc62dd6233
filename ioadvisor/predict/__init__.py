"""The performance model behind the advice: measured runs in, a fitted physical model per (system, file system,
op) out. The model itself (limits, softmin, robust MAP fit, posterior draws) is in `physical`; this module maps
runs and candidate settings onto it and keeps what the advice engine needs of a fit. Everything here is pure.
"""
from __future__ import annotations

import math

from ..frozen import field, frozen, NamedTuple
from ..lustre import count_set, ost_limit, stripes_of
from ..lustre import striped as lustre_striped
from ..model.run import DATA_OPS, WRITE_OPS, Run, bytes_moved
from . import physical as ph
from .physical import INF, MIN_LOG_SIGMA, Z90, Posterior

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Mapping, Sequence

# runs of one group fitted at most (an evenly spread subsample beyond): enough to pin ten parameters
MAX_FIT_RUNS = 400
# the interval of a prediction outside what the runs measured widens: by this fraction of the log sd per factor
# of two of client count beyond the measured ones, and by this log sd for an API class no run measured
EXTRAPOLATION_WIDENING = 0.25
UNMEASURED_CLASS_SD = 0.5


class Point(NamedTuple):
    """The model's view of one run or one candidate setting."""

    clients: float          # client nodes (inf: not stated, i.e. an aggregate over many clients)
    ranks: float
    targets: float = INF    # storage targets the data spans (kept for display: stripes x files, capped)
    shared: bool = False    # several ranks in one file
    transfer: float | None = None   # bytes per request
    klass: str | None = None        # API and collective mode, e.g. "MPIIO/coll" (see `io_class`)
    stripes: float | None = None    # stripes per file (None: derive from targets)
    osts: float | None = None       # OSTs of the file system (None: unknown)
    striped: bool = True            # False: no user striping (the file system spreads data itself)
    layout: str | None = None       # shared / fpp, for metadata rates (one directory vs one per rank)
    bytes: float | None = None      # bytes the job moves (None: unknown; the advice predicts a cold cache)
    writes: bool = False            # the op writes
    stripe_size: float | None = None   # bytes per stripe (None: the file system's default)
    stripes_known: bool = True      # False: a run that did not say its stripe count, on a file system whose
                                    # default is not known either

    def physical(self) -> ph.PPoint:
        stripes = self.stripes
        if stripes is None:
            t = self.targets if math.isfinite(self.targets) else 1.0
            stripes = t if (self.shared or self.ranks <= 1) else max(t / max(self.ranks, 1.0), 1.0)
        return ph.PPoint(nodes=self.clients, ranks=self.ranks, stripes=float(stripes),
                         osts=ost_limit(self.osts), shared=self.shared, transfer=self.transfer,
                         klass=self.klass or "?/-", layout=self.layout or ("shared" if self.shared else None),
                         striped=self.striped and math.isfinite(self.targets) if self.stripes is None
                         else self.striped, bytes=self.bytes, writes=self.writes, stripe_size=self.stripe_size,
                         stripes_known=self.stripes_known)


def io_class(api: str | None, collective: bool | None) -> str:
    """The API class a run or a candidate belongs to: `POSIX/-`, `MPIIO/coll`, `MPIIO/indep`, ..."""
    mode = "-" if collective is None else ("coll" if collective else "indep")
    return f"{api or '?'}/{mode}"


@frozen
class Fit:
    """A fitted (system, file system, op) group: the posterior of the physical model and what it rests on."""

    system: str
    filesystem: str | None
    op: str
    unit: str
    kind: str                        # bandwidth | rate
    posterior: Posterior
    n_runs: int = 0
    run_ids: tuple[str, ...] = field(default=(), compare=False)
    clients_min: float = 0.0         # the client counts the runs measured (inf: an aggregate over many clients)
    clients_max: float = INF
    stripes_measured: tuple[float, ...] = ()   # distinct stripe counts the runs measured (empty: none stated)
    klasses: tuple[str, ...] = ()              # API classes the runs measured
    interval_scale: float = 1.0                # calibration of the interval width (validation: 90% coverage)

    @property
    def log_sigma(self) -> float:
        return self.posterior.log_sigma

    def predict(self, p: Point) -> float:
        return self.posterior.predict(p.physical())

    def draws(self, p: Point) -> list[float]:
        return self.posterior.predict_draws(p.physical())

    def binding(self, p: Point) -> str:
        if self.kind != "bandwidth":      # a rate: random data requests (the targets' IOPS) or metadata operations
            if p.ranks <= 1:
                return "per-rank rate"
            return "target iops" if self.op in DATA_OPS else "metadata server"
        return ph.binding(self.posterior.params(), p.physical())

    def limits(self, p: Point) -> dict[str, float]:
        return ph.limits(self.posterior.params(), p.physical()) if self.kind == "bandwidth" else {}

    def extrapolates(self, p: Point) -> bool:
        """Whether `p` lies outside the client counts (or API classes) the fit was measured at."""
        if not self.clients_min <= p.clients <= self.clients_max:
            return True
        return bool(self.klasses) and p.klass is not None and p.klass not in self.klasses

    def distance(self, p: Point) -> float:
        """How far (in factors of two of client count) `p` lies outside the measured client counts."""
        c = p.clients
        if not math.isfinite(c) or self.clients_min <= c <= self.clients_max:
            return 0.0
        lo, hi = max(self.clients_min, 1.0), self.clients_max
        if c < lo:
            return math.log2(lo / max(c, 1.0))
        return math.log2(c / hi) if math.isfinite(hi) else 0.0

    def log_sd(self, p: Point) -> float:
        return self.widen(p, self.posterior.log_sd(p.physical()))

    def widen(self, p: Point, sd: float) -> float:
        """The log sd of a prediction at `p` whose posterior (parameters and one run's noise) gives `sd`: an
        unmeasured scale or API class makes it wider with the distance, not hidden; calibrated for coverage."""
        sd *= 1.0 + EXTRAPOLATION_WIDENING * self.distance(p)
        if self.klasses and p.klass is not None and p.klass not in self.klasses:
            sd = math.sqrt(sd ** 2 + UNMEASURED_CLASS_SD ** 2)
        return sd * self.interval_scale

    def interval(self, value: float, p: Point | None = None, z: float = Z90) -> tuple[float, float]:
        sd = self.log_sd(p) if p is not None else self.log_sigma * self.interval_scale
        w = ph.PY.exp(z * sd)       # an interval wider than a float can hold reaches 0 and infinity
        return value / w, value * w


def run_point(r: Run, ost_count: int | None = None, default_stripes: int | None = None) -> Point:
    """How a measured run maps onto the model's inputs. Unstated client counts mean an aggregate peak."""
    ranks = r.ranks or (r.nodes * (r.ranks_per_node or 1) if r.nodes else None)
    clients = r.nodes or (ranks if ranks else None)
    osts = r.ost_count or ost_count
    stripes = float(stripes_of(r.stripe_count, osts, default_stripes))
    shared = r.layout == "shared"
    n = float(ranks) if ranks else INF
    striped = lustre_striped(r.fs_type or "lustre")
    if shared or n == 1:
        targets = stripes
    else:
        targets = n * stripes
    targets = min(targets, ost_limit(osts))
    if not striped:
        targets = INF
    if not math.isfinite(n) and clients:
        n = float(clients)
    return Point(clients=float(clients) if clients else INF, ranks=n, targets=targets, shared=shared,
                 transfer=float(r.transfer_size) if r.transfer_size else None, klass=io_class(r.api, r.collective),
                 stripes=stripes, osts=float(osts) if osts else None, striped=striped, layout=r.layout,
                 bytes=bytes_moved(r), writes=r.op in WRITE_OPS,
                 stripe_size=float(r.stripe_size) if r.stripe_size else None,
                 stripes_known=count_set(r.stripe_count) or bool(default_stripes))


def center_priors(disk: str | None = None, ost_rate: float | None = None, nic: float | None = None) -> dict:
    """Prior means (log space) from what a center file says of its hardware."""
    out = {}
    if ost_rate:
        out["log_ost"] = math.log(ost_rate)
    elif disk:
        out["log_ost"] = math.log({"nvme": 5000.0, "ssd": 2000.0, "hdd": 700.0}.get(disk.lower(), 1000.0))
    if nic:
        out["log_node"] = math.log(nic)
    return out


def fit_group(system: str, filesystem: str | None, op: str, runs: Sequence[Run], *,
              ost_count: int | None = None, default_stripes: int | None = None, max_runs: int = MAX_FIT_RUNS,
              priors: Mapping[str, float] | None = None) -> Fit | None:
    """Fit one group's parameters to its runs; None without runs."""
    runs = [r for r in runs if r.value and r.value > 0 and math.isfinite(r.value)]
    if not runs:
        return None
    unit = runs[0].unit
    runs = [r for r in runs if r.unit == unit]
    if len(runs) > max_runs:           # a deterministic, evenly spread subsample keeps fitting fast
        step = len(runs) / max_runs
        runs = [runs[int(i * step)] for i in range(max_runs)]
    kind = "rate" if op not in DATA_OPS or unit != "MiB/s" else "bandwidth"
    pts = [run_point(r, ost_count, default_stripes) for r in runs]
    post = ph.fit(kind, [p.physical() for p in pts], [r.value for r in runs], center_priors=priors)
    clients = [p.clients for p in pts]
    stripes = sorted({p.stripes for p, r in zip(pts, runs) if count_set(r.stripe_count) and p.stripes})
    return Fit(system=system, filesystem=filesystem, op=op, unit=unit, kind=kind, posterior=post, n_runs=len(runs),
               run_ids=tuple(r.id for r in runs if r.id), clients_min=min(clients), clients_max=max(clients),
               stripes_measured=tuple(stripes), klasses=tuple(sorted({p.klass for p in pts if p.klass})))


def group_runs(runs: Iterable[Run]) -> dict[tuple[str, str | None, str], list[Run]]:
    """Runs grouped by (system, file system, op), the unit a model is fitted on."""
    out: dict[tuple[str, str | None, str], list[Run]] = {}
    for r in runs:
        out.setdefault((r.system, r.filesystem, r.op), []).append(r)
    return out


# metadata operations that only look up (served in parallel from the metadata server's cache) and those that
# change the namespace (serialised by its journal and directory locks) saturate at different rank counts
_LOOKUPS = ("file_stat", "dir_stat", "file_read")


def _family(op: str, kind: str) -> str:
    """Ops whose scaling is set by the same part of a system: sequential bandwidth (client links and targets),
    random IOPS (the targets' IOPS), metadata lookups, metadata updates (the metadata server)."""
    if kind == "bandwidth":
        return "bandwidth"
    if op in DATA_OPS:
        return "iops"
    return "metadata/lookup" if op in _LOOKUPS else "metadata/update"


# shape parameters a group with thin data borrows from its siblings of the same system and file system
_POOLED = {"bandwidth": ("gamma_shared", "gamma_fpp", "placement", "exchange", "log_stream", "log_node", "log_ost",
                         "log_pair", "log_shared_file"),
           "rate": ("decline", "log_shared", "log_sat")}


def fit_all(runs: Iterable[Run], ost_counts: dict[str | None, int | None] | None = None,
            default_stripes: dict[str | None, int | None] | None = None,
            priors: Mapping[str | None, Mapping[str, float]] | None = None,
            memo: dict | None = None) -> dict[tuple[str, str | None, str], Fit]:
    """Fits for every (system, file system, op) group of `runs`. A second pass refits each group with the shape
    parameters' prior centred on the median of its siblings (same system and file system, same kind): reads
    and writes share the disks' contention and placement, so one well-measured op informs a thin one.
    `memo` (a dict kept by the caller) reuses the fit of a group whose runs and priors did not change, which
    makes leaving runs out of one group cheap (validation)."""
    groups = group_runs(runs)

    def fit_one(key: tuple, rs: list, pri: Mapping[str, float] | None) -> Fit | None:
        osts, dflt = (ost_counts or {}).get(key[1]), (default_stripes or {}).get(key[1])
        if memo is None:
            return fit_group(*key, rs, ost_count=osts, default_stripes=dflt, priors=pri)
        mk = (key, tuple(sorted(id(r) for r in rs)), osts, dflt, tuple(sorted((pri or {}).items())))
        if mk not in memo:
            memo[mk] = fit_group(*key, rs, ost_count=osts, default_stripes=dflt, priors=pri)
        return memo[mk]

    first: dict[tuple, Fit] = {}
    for key, rs in groups.items():
        f = fit_one(key, rs, (priors or {}).get(key[1]))
        if f is not None:
            first[key] = f
    out = dict(first)
    for key, f in first.items():
        same = [(k, g) for k, g in first.items() if k != key and k[:2] == key[:2] and g.kind == f.kind]
        sib = [g for k, g in same if _family(k[2], g.kind) == _family(key[2], f.kind)]
        if not sib and _family(key[2], f.kind).startswith("metadata"):
            # no sibling of the same family: any metadata op of the same server is the next best witness
            sib = [g for k, g in same if _family(k[2], g.kind).startswith("metadata")]
        if not sib:
            continue
        pooled: dict[str, float] = dict((priors or {}).get(key[1]) or {})
        for name in _POOLED[f.kind]:
            vals = sorted(dict(g.posterior.theta)[name] for g in sib
                          if name in dict(g.posterior.theta) and name not in g.posterior.prior_only)
            if vals:
                pooled.setdefault(name, vals[len(vals) // 2])
        if not pooled:
            continue
        out[key] = fit_one(key, groups[key], pooled) or f
    return out


__all__ = ["Fit", "Point", "INF", "MIN_LOG_SIGMA", "fit_all", "fit_group", "group_runs", "io_class", "run_point",
           "center_priors"]
