"""A physical model of parallel-I/O bandwidth and metadata rates, fitted per (system, file system, op).

Bandwidth is the smooth minimum (softmin) of the limits that bind a job:

- clients: nodes x min(streams per node x per-stream rate, per-node rate); for collective MPI-IO on a shared file
  the data funnels through the aggregators instead: ROMIO's and Cray MPICH's Lustre drivers use about one
  aggregator per stripe by default, capped by the nodes (`cb_nodes`), with an exchange cost that grows with the
  ranks each aggregator collects from;
- storage targets: a shared file spans its stripes, and each OST's throughput falls as the streams on it grow
  (extent-lock and seek contention, `gamma_shared`); file per process spans the OSTs its files land on, and the
  busiest OST decides: N files of s stripes on M OSTs leave the busiest with between ceil(N s / M) (round-robin
  placement) and the expected maximum of a binomial load (random placement), mixed by `placement`;
- extent locks: client nodes writing one shared file independently conflict on an OST object's lock when more
  of them write it than there are stripes (or their transfers straddle stripes); each hand-over flushes the
  holder's dirty pages and costs a lock round trip per transfer, so the OST's share falls to
  `sync` x t / (t + lock knee x (writers per object - 1)); collective writes (one aggregator per stripe) do not;
- the servers' cache, where the runs moved different volumes: the share of the data it holds is served faster,
  to the disks' limits and to each stream's (whose rate, a few requests in flight, is set by the latency);
- the file system's peak, and a ceiling per API class (HDF5, NetCDF, MPI-IO collective/independent) measured only
  where runs of that class exist;
- small requests pay a knee: value x t / (t + knee).

Metadata and IOPS rates: ranks x per-rank rate up to a ceiling per layout (a shared directory serialises on its
lock), falling beyond saturation by `decline` (servers that slow down with more clients).

Parameters are fitted by robust maximum a posteriori in log space (soft-L1 loss on the log residuals, Gaussian
priors on every parameter) with scipy; the Laplace approximation at the optimum gives a posterior from which a
few draws are kept, so the advice can weigh options by their probability of a real gain without scipy or numpy.
Prediction from a fitted parameter set is pure Python.
"""
from __future__ import annotations

import math
from functools import cached_property

from ..frozen import field, frozen, NamedTuple
from ..lustre import ost_limit
from ..model.validate import MIN_VALUE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

INF = float("inf")
MIN_FIT_VALUE = min(MIN_VALUE.values())   # the least value a fit takes as measured (one byte per second)
SOFTMIN_P = 6.0              # sharpness of the smooth minimum: two equal limits give 89% of either
OBS_SIGMA = 0.25             # log-space scale of one run's noise (production machines: 15-25% run to run)
MIN_LOG_SIGMA = 0.08
N_DRAWS = 64                 # posterior draws kept: a gain probability of 0.8 is 51 of them
Z90 = 1.645

# parameter: (prior mean, prior sd, lower, upper); rates in MiB/s (ops/s for rates), log-space where named log_
_BW_PRIORS: dict[str, tuple[float, float, float, float]] = {
    "log_stream": (math.log(1200.0), 1.5, math.log(1.0), math.log(1e6)),
    "log_node": (math.log(5000.0), 1.5, math.log(1.0), math.log(1e7)),
    "log_ost": (math.log(1000.0), 1.5, math.log(1.0), math.log(1e6)),
    "log_pair": (math.log(800.0), 1.5, math.log(1.0), math.log(1e6)),
    "log_peak": (math.log(1e5), 3.0, math.log(1.0), math.log(1e9)),
    "gamma_shared": (0.3, 0.3, 0.0, 1.5),
    "gamma_fpp": (0.1, 0.2, 0.0, 1.0),
    "placement": (0.5, 0.35, 0.0, 1.0),
    "log_knee": (math.log(32768.0), 2.0, math.log(1.0), math.log(1 << 28)),
    "exchange": (0.05, 0.15, 0.0, 2.0),
    # one shared file on a file system that spreads data itself (GPFS, NFS): token and lock traffic
    "log_shared_file": (0.0, 0.5, math.log(0.01), 0.0),
}
# the servers' cache, fitted only where the runs moved different volumes: its size (bytes) and how much faster
# than the disks it serves (a benchmark that reads back what it just wrote finds its data there when it fits)
_CACHE_PRIORS: dict[str, tuple[float, float, float, float]] = {
    "log_cache": (math.log(float(1 << 40)), 3.0, math.log(float(1 << 28)), math.log(float(1 << 60))),
    "log_boost": (0.0, 1.0, 0.0, math.log(50.0)),
}
CACHE_SHARPNESS = 4.0        # hit fraction 1 / (1 + (bytes / cache)^4): a streaming scan larger than an LRU
                             # cache finds almost nothing in it
_RATE_PRIORS: dict[str, tuple[float, float, float, float]] = {
    "log_rank": (math.log(2000.0), 2.0, math.log(1e-3), math.log(1e8)),
    # the rank count at which the metadata server saturates: ceiling / per-rank rate
    "log_sat": (math.log(64.0), 2.5, 0.0, math.log(1e7)),
    "decline": (0.1, 0.3, 0.0, 1.0),
    "log_shared": (math.log(0.6), 1.0, math.log(1e-4), 0.0),     # shared directory / file vs one per rank
}
API_CAP_SD = 2.5
# extent locks (see the module docstring): the share of an OST's write rate left once its object's lock moves
# between client nodes (`log_sync`, the holder's dirty pages flushed first), and the knee in bytes per transfer
# and extra writer (`log_lock`: a lock round trip of about 0.3 ms at 200 MB/s per OST is 64 KiB; wide)
_LOCK_PRIORS: dict[str, tuple[float, float, float, float]] = {
    "log_sync": (math.log(0.5), 1.0, math.log(0.01), 0.0),
    "log_lock": (math.log(float(64 << 10)), 1.5, math.log(1024.0), math.log(float(1 << 30))),
}
DEFAULT_STRIPE_SIZE = 1 << 20


class PPoint(NamedTuple):
    """One run or candidate as the physical model sees it."""

    nodes: float                 # client nodes (inf: an aggregate over unstated many)
    ranks: float                 # processes (streams)
    stripes: float               # stripes per file (shared file or each file of file per process)
    osts: float                  # OSTs of the file system (inf: unknown or not striped by users)
    shared: bool
    transfer: float | None
    klass: str                   # API class, e.g. "MPIIO/coll", "POSIX/-"
    layout: str | None = None    # for rates: shared (one directory / file) or fpp
    striped: bool = True         # False: the file system spreads data itself (no user striping)
    bytes: float | None = None   # bytes the job moves in all (None: unknown, or the advice's cold-cache case)
    writes: bool = False         # the op writes (lock conflicts between clients writing one file)
    stripe_size: float | None = None   # bytes per stripe (None: Lustre's default, 1 MiB)
    stripes_known: bool = True   # False: the run did not say its stripe count (`stripes` is a guess)


class _PyOps:
    """The few array operations the model needs, on plain floats (advice from cached fits needs no numpy)."""

    exp = staticmethod(lambda x: math.exp(x) if x < 700 else INF)
    log = staticmethod(lambda x: math.log(x) if x > 0 else -INF)
    log2 = staticmethod(lambda x: math.log2(x) if x > 0 else -INF)
    sqrt = staticmethod(math.sqrt)
    ceil = staticmethod(math.ceil)
    minimum = staticmethod(min)
    maximum = staticmethod(max)
    isfinite = staticmethod(math.isfinite)

    @staticmethod
    def where(c: Any, a: Any, b: Any) -> Any:
        return a if c else b


PY = _PyOps()


def _softmin(vals: Sequence[Any], o: Any) -> Any:
    """Smooth minimum of several limits (inf = no limit): m x (sum (m / v_i)^p)^(-1/p), m the smallest."""
    m = vals[0]
    for v in vals[1:]:
        m = o.minimum(m, v)
    fin = o.isfinite(m)
    msafe = o.where(fin, m, 1.0)
    tot = 0.0
    for v in vals:
        tot = tot + (msafe / v) ** SOFTMIN_P
    return o.where(fin, msafe * tot ** (-1.0 / SOFTMIN_P), INF)


def softmin(values: Sequence[float], p: float = SOFTMIN_P) -> float:
    return float(_softmin(list(values), PY)) if values else INF


def _load_bounds(files: Any, stripes: Any, osts: Any, o: Any) -> tuple[Any, Any, Any]:
    """(OSTs known, streams on the busiest OST under round-robin placement, under random placement): what
    `_mixed_load` mixes by the placement parameter, a function of the runs alone."""
    fin = o.isfinite(osts)
    m = o.where(fin, osts, 1e12)
    s = o.minimum(stripes, m)
    rr = o.maximum(1.0, o.ceil(files * s / m - 1e-9))
    q = s / m
    mean = files * q
    sd = o.sqrt(o.maximum(files * q * (1 - q), 0.0))
    rnd = o.minimum(files, o.maximum(rr, mean + sd * o.sqrt(2 * o.log(o.maximum(m, 2.0)))))
    return fin, rr, rnd


def _mixed_load(bounds: tuple[Any, Any, Any], placement: Any, o: Any) -> Any:
    fin, rr, rnd = bounds
    return o.where(fin, (1 - placement) * rr + placement * rnd, 1.0)


def expected_max_load(files: float, stripes: float, osts: float, placement: float) -> float:
    """Expected streams on the busiest OST when `files` files of `stripes` stripes each land on `osts` OSTs:
    round-robin placement gives ceil(files x stripes / osts); random placement (each file a random first OST) a
    binomial load per OST whose expected maximum over the OSTs is about mean + sd x sqrt(2 ln osts)."""
    return float(_mixed_load(_load_bounds(files, stripes, osts, PY), placement, PY))


def _bw_shape(X: Mapping[str, Any], o: Any) -> dict[str, Any]:
    """What `_bw_limits` computes from the points alone (no parameter enters): computed once for a fit's runs
    (`array_inputs`) or a point (`point_inputs`) instead of at each of the optimiser's evaluations, by the same
    operations on the same inputs, so every limit comes out as it would computed in place."""
    # an aggregate over unstated clients and ranks measured the file system's ceiling: only peak and API bind
    agg = ~o.isfinite(X["ranks"]) if o is not PY else not math.isfinite(X["ranks"])
    n = X["nodes"]
    ranks = o.where(agg, 1.0, o.maximum(X["ranks"], 1.0))
    fin_n = o.isfinite(n)
    n1 = o.where(fin_n, o.maximum(n, 1.0), 1.0)
    rpn = o.where(fin_n, ranks / n1, 1.0)
    s = o.maximum(X["stripes"], 1.0)
    m = X["osts"]
    s_eff = o.minimum(s, m)
    coll = X["coll"]
    aggs = o.where(fin_n, o.minimum(n1, s_eff), s_eff)
    streams = o.where(coll, aggs, ranks)
    ranks_s = ranks * s_eff
    return {"agg": agg, "ranks": ranks, "fin_n": fin_n, "n1": n1, "rpn": rpn, "s_eff": s_eff, "aggs": aggs,
            "fan_in": o.log2(o.maximum(ranks / o.maximum(aggs, 1.0), 1.0)), "streams": streams,
            "k": o.maximum(1.0, streams / s_eff), "load": _load_bounds(ranks, s, m, o), "ranks_s": ranks_s,
            "used": o.minimum(ranks_s, m), "has_bytes": X["bytes"] > 0, "has_transfer": X["transfer"] > 0,
            "one_file_unstriped": X["one_file"] & ~X["striped"] if o is not PY
            else (X["one_file"] and not X["striped"])}


def _bw_limits(th: Mapping[str, float], X: Mapping[str, Any], o: Any) -> dict[str, Any]:
    """The bandwidth each part of the system allows (MiB/s), by name, for one point (floats) or many (arrays)."""
    D = X["bw"]
    stream, node, ost = o.exp(th["log_stream"]), o.exp(th["log_node"]), o.exp(th["log_ost"])
    # the share of the data the servers' cache holds: it is served `boost` times faster, without seeks
    if "log_cache" in th:
        b = X["bytes"]
        # no volume (0: unknown, or the advice's cold case) finds nothing in cache
        hit = o.where(D["has_bytes"], 1.0 / (1.0 + (b / o.exp(th["log_cache"])) ** CACHE_SHARPNESS), 0.0)
        boost = o.exp(th["log_boost"])
    else:
        hit, boost = 0.0, 1.0

    def cached(disk: Any, from_cache: Any) -> Any:
        return 1.0 / ((1.0 - hit) / disk + hit / from_cache)

    # one stream has a few requests in flight: its rate is set by the servers' latency, which the cache cuts
    stream = cached(stream, stream * boost)
    agg, ranks, s_eff, aggs = D["agg"], D["ranks"], D["s_eff"], D["aggs"]
    coll = X["coll"]
    per_agg = _softmin([stream, node], o)
    exch = 1.0 + th["exchange"] * D["fan_in"]
    client = o.where(coll, aggs * per_agg / exch,
                     o.where(D["fin_n"], D["n1"] * _softmin([D["rpn"] * stream, node], o), INF))
    streams = D["streams"]
    osts_shared = cached(s_eff * ost * D["k"] ** (-th["gamma_shared"]), s_eff * ost * boost)
    if "log_lock" in th:
        osts_shared = osts_shared * _lock_factor(th, X, o)
    load = _mixed_load(D["load"], th["placement"], o)
    # every file waits for the busiest OST: it serves `load` streams at its (contended) throughput
    spread = o.minimum(D["used"], D["ranks_s"] / load) * ost
    osts_fpp = cached(spread * load ** (-th["gamma_fpp"]), spread * boost)
    osts_lim = o.where(X["striped"], o.where(X["one_file"], osts_shared, osts_fpp), INF)
    # one stream to one OST is limited too (RPCs in flight per OST connection): streams x stripes each touches
    pair = o.exp(th["log_pair"])
    pairs = o.where(X["striped"], streams * s_eff * cached(pair, pair * boost), INF)
    shared_cost = o.where(D["one_file_unstriped"], o.exp(th.get("log_shared_file", 0.0)), 1.0)
    shared_cost = o.where(X["shared_many"], shared_cost, 1.0)
    out = {"clients": o.where(agg, INF, client * shared_cost), "streams": o.where(agg, INF, pairs), "osts": o.where(agg, INF, osts_lim), "peak": o.exp(th["log_peak"]) * shared_cost / ((1.0 - hit) + hit / boost)}
    caps = X.get("caps")
    if caps:
        out["api"] = _api_ceiling([o.exp(th[c]) if c in th else INF for c in caps], X["cap_idx"], o)
    return out


def _api_ceiling(vals: list, idx: Any, o: Any) -> Any:
    """Each point's API ceiling: `vals[idx]` (INF at the index past the last: a class without one). For arrays a
    column per ceiling and a row per parameter vector where `fit` evaluates many at once, else one."""
    if o is PY:
        return vals[idx]
    import numpy as np
    cols = np.broadcast_arrays(*vals, INF)
    api = np.stack([np.reshape(c, -1) for c in cols], axis=-1)[:, idx]
    return api[0] if np.ndim(cols[0]) == 0 else api


def _lock_factor(th: Mapping[str, float], X: Mapping[str, Any], o: Any) -> Any:
    """The share of a shared file's OST throughput left when its objects' extent locks move between writers."""
    w, t = X["writers"], X["lock_bytes"]
    return o.where(w >= 2.0, o.exp(th["log_sync"]) * t / (t + o.exp(th["log_lock"]) * (w - 1.0)), 1.0)


def _bw(th: Mapping[str, float], X: Mapping[str, Any], o: Any) -> Any:
    v = _softmin(list(_bw_limits(th, X, o).values()), o)
    t = X["transfer"]
    knee = o.exp(th["log_knee"])
    return o.where(X["bw"]["has_transfer"], v * t / (t + knee), v)


def _rate(th: Mapping[str, float], X: Mapping[str, Any], o: Any) -> Any:
    agg = ~o.isfinite(X["ranks"]) if o is not PY else not math.isfinite(X["ranks"])
    ranks = o.where(agg, 1.0, o.maximum(X["ranks"], 1.0))
    per = o.exp(th["log_rank"])
    peak = per * o.exp(th["log_sat"]) * o.where(X["shared_dir"], o.exp(th["log_shared"]), 1.0)
    v = o.where(agg, peak, _softmin([ranks * per, peak], o))
    over = o.where(agg, 1.0, o.maximum(ranks * per / peak, 1.0))
    return v * over ** (-th["decline"])


def point_inputs(p: PPoint, caps: Sequence[str] = ()) -> dict[str, Any]:
    """A point as the model's inputs (floats)."""
    m = ost_limit(p.osts)
    cap_idx = caps.index("cap:" + p.klass) if ("cap:" + p.klass) in caps else None
    X = {"nodes": p.nodes, "ranks": p.ranks, "stripes": p.stripes, "osts": m,
         "coll": p.shared and _collective(p.klass) and p.ranks > 1, "one_file": p.shared or p.ranks <= 1,
         "shared_many": p.shared and p.ranks > 1,
         "striped": p.striped, "transfer": p.transfer or 0.0, "shared_dir": p.layout == "shared",
         "bytes": p.bytes or 0.0, "caps": [c for c in caps], "cap_idx": cap_idx,
         "writers": lock_writers(p), "lock_bytes": _lock_bytes(p)}
    if cap_idx is None:
        X["caps"] = []
    X["bw"] = _bw_shape(X, PY)
    return X


def array_inputs(points: Sequence[PPoint], caps: Sequence[str] = ()) -> dict[str, Any]:
    import numpy as np
    col = lambda f: np.array([f(p) for p in points], dtype=float)   # noqa: E731
    X = {"nodes": col(lambda p: p.nodes), "ranks": col(lambda p: p.ranks), "stripes": col(lambda p: p.stripes),
         "osts": col(lambda p: ost_limit(p.osts)),
         "coll": np.array([p.shared and _collective(p.klass) and p.ranks > 1 for p in points]),
         "one_file": np.array([p.shared or p.ranks <= 1 for p in points]),
         "shared_many": np.array([p.shared and p.ranks > 1 for p in points]),
         "striped": np.array([p.striped for p in points]), "transfer": col(lambda p: p.transfer or 0.0),
         "bytes": col(lambda p: p.bytes or 0.0),
         "shared_dir": np.array([p.layout == "shared" for p in points]), "caps": list(caps),
         "writers": col(lock_writers), "lock_bytes": col(_lock_bytes),
         "cap_idx": np.array([caps.index("cap:" + p.klass) if ("cap:" + p.klass) in caps else len(caps)
                              for p in points], dtype=int)}
    with np.errstate(all="ignore"):
        X["bw"] = _bw_shape(X, np)
    return X


def _collective(klass: str) -> bool:
    return klass.endswith("/coll")


def _stripe_size(p: PPoint) -> float:
    return float(p.stripe_size) if p.stripe_size and p.stripe_size > 0 else float(DEFAULT_STRIPE_SIZE)


def _lock_bytes(p: PPoint) -> float:
    """The bytes each lock round trip carries: one transfer, or a stripe where the transfer size is unknown."""
    return p.transfer or _stripe_size(p)


def lock_writers(p: PPoint) -> float:
    """Client nodes writing the busiest OST object of a shared file independently: nodes over stripes (round
    robin), at least two where transfers do not tile the stripes (neighbours then share a stripe); 1 where no lock
    can conflict: reads, one node, file per process, collective writes (ROMIO's Lustre driver gives each
    aggregator whole stripes), a file system without user striping."""
    if not (p.writes and p.shared and p.striped and p.ranks > 1 and math.isfinite(p.nodes) and p.nodes > 1
            and not _collective(p.klass)):
        return 1.0
    # a run that did not say its stripe count: its stripes are a guess, and so would be the writers per object
    w = math.ceil(p.nodes / min(max(p.stripes, 1.0), ost_limit(p.osts)) - 1e-9) if p.stripes_known else 1.0
    t, size = int(p.transfer or 0), int(_stripe_size(p))
    if t > 0 and size > 0 and size % t != 0 and t % size != 0:
        w = max(w, 2.0)
    return float(w)


def _caps(th: Mapping[str, float]) -> list[str]:
    return sorted(k for k in th if k.startswith("cap:"))


def limits(theta: Mapping[str, float], p: PPoint) -> dict[str, float]:
    """The bandwidth each part of the system allows this point (MiB/s), by name."""
    return {k: float(v) for k, v in _bw_limits(theta, point_inputs(p, _caps(theta)), PY).items()}


def predict_bw(theta: Mapping[str, float], p: PPoint) -> float:
    return float(_bw(theta, point_inputs(p, _caps(theta)), PY))


def predict_rate(theta: Mapping[str, float], p: PPoint) -> float:
    return float(_rate(theta, point_inputs(p), PY))


def binding(theta: Mapping[str, float], p: PPoint) -> str:
    """The limit that binds a bandwidth prediction: clients (or aggregators), osts (or extent locks), peak, api
    or request size."""
    X = point_inputs(p, _caps(theta))
    lim = {k: float(v) for k, v in _bw_limits(theta, X, PY).items()}
    name = min(lim, key=lambda k: lim[k])
    if name == "clients" and p.shared and _collective(p.klass) and p.ranks > 1:
        name = "aggregators"
    if name == "osts" and "log_lock" in theta and float(_lock_factor(theta, X, PY)) < 0.5:
        name = "extent locks"
    if p.transfer and p.transfer > 0:
        knee = math.exp(theta["log_knee"])
        if p.transfer / (p.transfer + knee) < 0.5:
            return "request size"
    return name


# ---- fitting -------------------------------------------------------------------------------------------------

@frozen
class Posterior:
    """A fitted parameter set, its draws and its residual scale."""

    kind: str                                   # bandwidth | rate
    theta: tuple[tuple[str, float], ...]
    draws: tuple[tuple[float, ...], ...] = ()   # parameter vectors in the order of `theta`
    log_sigma: float = MIN_LOG_SIGMA            # residual scale (noise of one run), log space
    prior_only: tuple[str, ...] = field(default=())   # parameters the runs did not move from their prior

    def params(self) -> dict[str, float]:
        return dict(self.theta)

    @cached_property
    def _distinct_draws(self) -> tuple[list[dict[str, float]], list[int]]:
        """The distinct draws (as parameter dicts) and, for each draw, the index of its distinct one: a tight
        fit's draws repeat (two distinct among 64 is common), and a prediction is computed once per distinct one."""
        names = [k for k, _ in self.theta]
        first: dict[tuple[float, ...], int] = {}
        index = [first.setdefault(tuple(d), len(first)) for d in self.draws]
        return [dict(zip(names, d)) for d in first], index

    def predict(self, p: PPoint) -> float:
        f = predict_bw if self.kind == "bandwidth" else predict_rate
        return f(self.params(), p)

    def predict_draws(self, p: PPoint) -> list[float]:
        # every draw has the parameters of the fit: the point's inputs are the same for all of them
        if self.kind == "bandwidth":
            X, f = point_inputs(p, _caps(self.params())), _bw
        else:
            X, f = point_inputs(p), _rate
        distinct, index = self._distinct_draws
        values = [float(f(t, X, PY)) for t in distinct]
        return [values[i] for i in index]

    def log_sd(self, p: PPoint) -> float:
        """Predictive sd in log space: parameter uncertainty (draws) and one run's noise."""
        vals = [math.log(v) for v in self.predict_draws(p) if v > 0]
        if len(vals) >= 2:
            m = sum(vals) / len(vals)
            var = sum((v - m) ** 2 for v in vals) / (len(vals) - 1)
        else:
            var = 0.0
        return math.sqrt(var + self.log_sigma ** 2)


def _priors(kind: str, klasses: Sequence[str], center_priors: Mapping[str, float] | None,
            values: Sequence[float], osts: float | None = None, volumes: Sequence[float | None] = (),
            writes: bool = False) -> dict[str, tuple[float, float, float, float]]:
    base = dict(_BW_PRIORS if kind == "bandwidth" else _RATE_PRIORS)
    top = max(values) if values else 1.0
    if "log_peak" in base:
        # a weak, data-scaled prior on the ceiling: a parallel file system's peak lies well above its best run
        # (which often measured one or a few clients), or at a few hundred MiB/s per OST where the OSTs are known
        lo, hi = base["log_peak"][2], base["log_peak"][3]
        mean = math.log(top) + 2.0
        if osts and math.isfinite(osts):
            mean = max(mean, math.log(osts * 500.0))
        base["log_peak"] = (mean, 3.0, lo, hi)
    for k, v in (center_priors or {}).items():
        if k in base:
            mu, sd, lo, hi = base[k]
            base[k] = (v, min(sd, 0.7), lo, hi)
    if kind == "bandwidth" and writes:
        base.update(_LOCK_PRIORS)
    if kind == "bandwidth" and len({b for b in volumes if b}) >= 2:
        base.update(_CACHE_PRIORS)
        # the cache is no larger than the largest volume the runs moved: a cache that held every run would leave
        # no run measuring the disks, and the advice (which predicts data that is not in cache) nothing to go on
        top_log = math.log(max(b for b in volumes if b))
        mu, sd, lo, hi = base["log_cache"]
        base["log_cache"] = (min(mu, top_log), sd, lo, max(min(hi, top_log), lo + 1.0))
    if kind == "bandwidth":
        for kl in klasses:
            if kl.startswith(("HDF5", "NETCDF", "PNETCDF")) or kl.startswith("MPIIO"):
                base["cap:" + kl] = (math.log(top) + 1.0, API_CAP_SD, math.log(1.0), math.log(1e9))
    return base


def _first_start(kind: str, names: list[str], mu: "Any", lo: "Any", hi: "Any", y: "Any",
                 points: Sequence[PPoint]) -> "Any":
    """The fit's first start: the priors' centre, moved to where the data are."""
    import numpy as np
    x0 = np.clip(mu.copy(), lo + 1e-9, hi - 1e-9)
    if kind == "bandwidth":
        # start where the data are: per-OST and per-stream rates near the median run over its stripes/ranks
        med = float(np.median(np.exp(y)))
        for k in ("log_stream", "log_ost", "log_node", "log_pair"):
            i = names.index(k)
            x0[i] = np.clip(math.log(med), lo[i] + 1e-9, hi[i] - 1e-9)
        if "log_boost" in names:
            # a cache that does nothing is a flat direction of the fit: start from one that helps, at the
            # median volume the runs moved
            x0[names.index("log_boost")] = math.log(3.0)
            vols = [p.bytes for p in points if p.bytes]
            i = names.index("log_cache")
            x0[i] = np.clip(math.log(float(np.median(vols))), lo[i] + 1e-9, hi[i] - 1e-9)
    else:
        i = names.index("log_rank")
        ranks = np.array([max(p.ranks, 1.0) for p in points])
        x0[i] = np.clip(float(np.median(y - np.log(ranks))), lo[i] + 1e-9, hi[i] - 1e-9)
    return x0


def _starts(kind: str, names: list[str], x0: "Any", mu: "Any", lo: "Any", hi: "Any", y: "Any",
            n: int) -> list:
    """Where the optimiser starts: `x0`, and for few runs also the priors' centre and a one-stream start."""
    import numpy as np
    starts = [x0]
    if n <= 60:
        # few runs: several optima may fit (which limit binds is ambiguous); try the priors' centre and
        # a start where one stream to one OST binds
        starts.append(np.clip(mu, lo + 1e-9, hi - 1e-9))
        if kind == "bandwidth":
            alt = x0.copy()
            alt[names.index("log_pair")] = np.clip(float(np.min(y)), lo[names.index("log_pair")] + 1e-9,
                                                   hi[names.index("log_pair")] - 1e-9)
            if "log_boost" in names:
                # ... with a cache that does nothing: a cached stream would otherwise hide that limit
                alt[names.index("log_boost")] = 0.0
            starts.append(alt)
    return starts


def _run_sigma(best: "Any", data_res: "Any", n: int) -> float:
    """The log-space residual scale of one run, from the optimum `best` and its data residuals."""
    import numpy as np
    # residual scale of one run: the larger of the MAD and the 90th percentile of |residual| / 1.645 (production
    # runs are heavy-tailed: a MAD alone gave 90% intervals that held 73% of held-out runs), corrected for the
    # parameters the runs pinned (in-sample residuals understate held-out ones), and widened for few runs
    ares = np.abs(data_res - np.median(data_res))
    mad = float(np.median(ares)) * 1.4826 if n > 2 else 0.0
    q90 = float(np.quantile(ares, 0.9)) / Z90 if n > 4 else 0.0
    sigma = max(mad, q90)
    if n > 2:
        try:
            Jd = best.jac[:n]
            Jp = best.jac[n:]
            # effective parameters: how much of each direction the data (not the prior) determine
            Hd, Hp = Jd.T @ Jd, Jp.T @ Jp
            k = float(np.trace(Hd @ np.linalg.pinv(Hd + Hp)))
            sigma *= math.sqrt(n / max(n - k, 1.0))
        except (np.linalg.LinAlgError, ValueError):
            pass
    return max(sigma, MIN_LOG_SIGMA * (1 + 3 / math.sqrt(n)))


def _posterior_draws(x: "Any", J: "Any", sigma: float, lo: "Any", hi: "Any", sd: "Any", resid: Any,
                     seed: int) -> tuple:
    """(draws, their standard deviations) around the optimum `x` with residual Jacobian `J`."""
    import numpy as np
    # Laplace approximation: covariance from the Jacobian of the standardised residuals
    try:
        H = J.T @ J
        cov = np.linalg.pinv(H + 1e-9 * np.eye(len(x)))
        scale = max(1.0, (sigma / OBS_SIGMA) ** 2)
        cov = cov * scale
        rng = np.random.default_rng(seed)
        # the symmetric square root of the covariance is unique (an SVD's or eigenvectors' signs are not, and
        # differ between LAPACK builds): the same fit gives the same draws on every machine
        w, V = np.linalg.eigh((cov + cov.T) / 2)
        root = (V * np.sqrt(np.maximum(w, 0.0))) @ V.T
        prop = np.clip(x + rng.standard_normal((4 * N_DRAWS, len(x))) @ root, lo, hi)
        # The Laplace approximation is blind to one-sided limits (a peak far above every run may not fall below
        # the fastest one): weigh each proposal by posterior / proposal density and resample.
        prec = np.linalg.pinv(cov)
        d = prop - x
        log_q = -0.5 * np.einsum("ij,jk,ik->i", d, prec, d)
        log_p = -_robust_costs(resid(prop))
        lw = log_p - log_q
        lw -= lw.max()
        wts = np.exp(lw)
        wts /= wts.sum()
        # systematic resampling: each proposal kept in proportion to its weight, without the extra noise of
        # drawing the resample at random
        cum = np.cumsum(wts)
        idx = np.minimum(np.searchsorted(cum, (np.arange(N_DRAWS) + 0.5) / N_DRAWS), len(prop) - 1)
        draws = prop[idx]
        post_sd = draws.std(axis=0)
    except (np.linalg.LinAlgError, ValueError):
        draws = np.tile(x, (N_DRAWS, 1))
        post_sd = sd
    return draws, post_sd


def fit(kind: str, points: Sequence[PPoint], values: Sequence[float], *,
        center_priors: Mapping[str, float] | None = None, seed: int = 0) -> Posterior:
    """Robust MAP fit of one group's runs; a posterior with draws for the decision rule."""
    import numpy as np
    from scipy.optimize import least_squares

    # a value below the least a run can measure (stored by a version that did not refuse it) counts as that
    # least: its logarithm stays within reach of the others', and the fit's residuals finite
    y = np.log(np.maximum(np.asarray(values, dtype=float), MIN_FIT_VALUE))
    klasses = sorted({p.klass for p in points}) if kind == "bandwidth" else []
    # an API class gets a ceiling of its own only when runs of another class share the group (it is then
    # identifiable against them)
    if len(klasses) < 2:
        klasses = []
    known = [p.osts for p in points if p.osts and math.isfinite(p.osts)]
    pri = _priors(kind, klasses, center_priors, list(values), max(known) if known else None,
                  [p.bytes for p in points], writes=any(p.writes for p in points))
    names = list(pri)
    mu = np.array([pri[k][0] for k in names])
    sd = np.array([pri[k][1] for k in names])
    lo = np.array([pri[k][2] for k in names])
    hi = np.array([pri[k][3] for k in names])
    caps = [k for k in names if k.startswith("cap:")]
    X = array_inputs(points, caps)
    f = _bw if kind == "bandwidth" else _rate

    def preds(x: "np.ndarray") -> "np.ndarray":
        with np.errstate(all="ignore"):
            return np.nan_to_num(f(dict(zip(names, x)), X, np), copy=False, nan=1e-300, posinf=1e300)

    def resid(x: "np.ndarray") -> "np.ndarray":
        with np.errstate(divide="ignore"):
            lp = np.log(np.maximum(preds(x), 1e-300))
        return np.concatenate([(lp - y) / OBS_SIGMA, (x - mu) / sd])

    many = _residual_rows(f, names, X, y, mu, sd)
    x0 = _first_start(kind, names, mu, lo, hi, y, points)
    best = None
    for start in _starts(kind, names, x0, mu, lo, hi, y, len(points)):
        try:
            r = least_squares(resid, start, bounds=(lo, hi), loss="soft_l1", f_scale=1.0, max_nfev=200,
                              x_scale="jac", **_jacobian_batches(many))
        except (ValueError, FloatingPointError):
            continue
        if best is None or r.cost < best.cost:
            best = r
    if best is None:
        raise ValueError("fit failed")
    x = best.x
    sigma = _run_sigma(best, np.log(np.maximum(preds(x), 1e-300)) - y, len(points))
    draws, post_sd = _posterior_draws(x, best.jac, sigma, lo, hi, sd, many, seed)
    prior_only = tuple(k for k, ps, s in zip(names, post_sd, sd) if ps > 0.8 * s)
    return Posterior(kind=kind, theta=tuple((k, float(v)) for k, v in zip(names, x)),
                     draws=tuple(tuple(float(v) for v in d) for d in draws), log_sigma=float(sigma),
                     prior_only=prior_only)


def _residual_rows(f: Any, names: list[str], X: Mapping[str, Any], y: "Any", mu: "Any", sd: "Any") -> Any:
    """`fit`'s residuals at many parameter vectors at once (the rows of a 2-D array, a row of residuals each):
    the model is evaluated for every (vector, run) pair in one pass of array operations, each element by the
    same arithmetic as one vector at a time (a column of parameters against a row of runs), so each row equals
    the residuals of its vector alone. The finite-difference Jacobian (a vector per parameter) and the
    posterior's proposals (`4 N_DRAWS` vectors) cost a pass each instead of one per vector."""
    import numpy as np

    def rows(xs: Any) -> "np.ndarray":
        xs = np.asarray(xs, dtype=float)
        th = {k: np.ascontiguousarray(xs[:, j]).reshape(-1, 1) for j, k in enumerate(names)}
        with np.errstate(all="ignore"):
            p = np.broadcast_to(np.nan_to_num(f(th, X, np), copy=False, nan=1e-300, posinf=1e300),
                                (len(xs), len(y)))
        with np.errstate(divide="ignore"):
            lp = np.log(np.maximum(p, 1e-300))
        return np.concatenate([(lp - y) / OBS_SIGMA, (xs - mu) / sd], axis=1)
    return rows


def _jacobian_batches(rows: Any) -> dict[str, Any]:
    """least_squares' option that evaluates the vectors of a finite-difference Jacobian through `rows` in one
    batch (`workers`, a map-like callable: scipy 1.16 and later; older versions evaluate them one by one)."""
    if not _HAS_WORKERS:
        import inspect
        from scipy.optimize import least_squares
        _HAS_WORKERS.append("workers" in inspect.signature(least_squares).parameters)
    return {"workers": lambda fun, xs: list(rows([x for x in xs]))} if _HAS_WORKERS[0] else {}


_HAS_WORKERS: list[bool] = []


def _robust_costs(rows: "Any") -> "Any":
    """least_squares' soft-L1 cost of each row of residuals: sum of 2 (sqrt(1 + r^2) - 1) / 2."""
    import numpy as np
    return np.sum(np.sqrt(1.0 + rows * rows) - 1.0, axis=1)


def posterior_to_json(p: Posterior) -> dict[str, Any]:
    return {"kind": p.kind, "theta": [list(t) for t in p.theta], "draws": [list(d) for d in p.draws],
            "log_sigma": p.log_sigma, "prior_only": list(p.prior_only)}


def posterior_from_json(d: Mapping[str, Any]) -> Posterior:
    return Posterior(kind=d["kind"], theta=tuple((k, float(v)) for k, v in d["theta"]),
                     draws=tuple(tuple(float(v) for v in x) for x in d["draws"]),
                     log_sigma=float(d["log_sigma"]), prior_only=tuple(d.get("prior_only") or ()))
