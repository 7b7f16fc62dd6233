"""The advice engine: candidate settings for a workload, predicted, ranked, explained, with commands.

`advise(workload, kb, center)` returns an `Advice`. Candidates that the measured runs can predict are compared
through the fitted model's posterior draws: an option is kept out only when the best one beats it by at least
`MIN_GAIN` with probability `CONFIDENCE` or more; among the options the data cannot tell apart, published
comparisons decide, then the cheapest wins (fewest OSTs, no staging, fewest changes). Where a system has no
measured numbers the ranking rests on its published comparisons and on the center configuration alone, and the
prediction is left empty.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from ..errors import UsageError
from ..lustre import (check_stripe_size, default_stripes, every_ost, most_stripes, ost_limit, stripe_size_problem,
                      stripes_of)
from ..lustre import striped as lustre_striped
from ..model.run import norm_api, norm_layout
from ..model.types import Advice, Center, Config, Evidence, FileSystem, Option, Prediction, Tier, Workload
from ..predict import INF, Fit, Point, io_class
from ..predict.evidence import Bounds, bounds
from .explain import RUNS_DECIDED

TOLERANCE = 0.05           # candidates within 5% of the best are treated as equally fast (no posterior draws)
MIN_GAIN = 0.10            # a gain smaller than 10% is not worth a change
CONFIDENCE = 0.8           # ... and a larger one counts only when the posterior gives it this probability
METADATA_OPS = ("file_create", "open_create")
STRIPE_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 256, 512, 1024, 2000)


@dataclass(eq=False)
class _Cand:
    config: Config
    place: FileSystem
    tier: Tier | None
    value: float | None = None
    low: float | None = None
    high: float | None = None
    fit: Fit | None = None
    score: int = 0
    cost: float = 0.0
    applied: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extrapolated: bool = False       # predicted for a client count outside the measured ones
    draws: list[float] = field(default_factory=list)   # predicted values under the posterior's parameter draws
    binding: str | None = None       # the limit that binds: clients, aggregators, osts, extent locks, peak, api, request size
    decision: str | None = None      # how the choice between close options was made, for the reasons
    point: Point | None = None       # the model's input for this candidate
    floor: float = 0.0               # the bounds the measured runs and the center put on its value
    standing: tuple | None = None    # (group, ratio or None): how the runs near the job rank its stripe count
    ceiling: float = INF
    bounded_by: str | None = None    # what moved the model's value into them: runs, measured peak, rated peak
    model_value: float | None = None   # the model's own value before the bounds
    band_runs: int = 0               # runs near the job that gave the band
    unmeasured: str | None = None    # the mode no run of this system measured (then not predicted)
    bounds: Bounds | None = None


def check_workload(w: Workload) -> None:
    """Raise UsageError for an impossible workload."""
    if w.nodes < 1:
        raise UsageError(f"nodes must be at least 1, got {w.nodes}")
    if w.ranks_per_node < 1:
        raise UsageError(f"ranks per node must be at least 1, got {w.ranks_per_node}")
    if w.bytes_per_rank < 0:
        raise UsageError("bytes per rank must not be negative")
    if norm_api(w.api) not in ("POSIX", "MPIIO", "HDF5"):
        raise UsageError(f"unknown API {w.api!r} (use posix, mpiio or hdf5)")
    if w.layout not in ("shared", "fpp", "any"):
        raise UsageError(f"unknown layout {w.layout!r} (use shared, fpp or any)")
    if w.op not in ("write", "read"):
        raise UsageError(f"unknown op {w.op!r} (use write or read)")
    if w.lifetime not in ("job", "after-job"):
        raise UsageError(f"unknown lifetime {w.lifetime!r} (use job or after-job)")
    if w.access_size is not None and w.access_size <= 0:
        raise UsageError("access size must be positive")


def default_filesystem(center: Center) -> FileSystem:
    """The file system a job uses unless told otherwise: the first persistent parallel one."""
    for kinds in (("lustre", "gpfs", "beegfs"), None):
        for fs in center.filesystems:
            if fs.persistent and (kinds is None or fs.type in kinds) and not any(t.filesystem == fs.name for t in center.tiers):
                return fs
    if center.filesystems:
        return center.filesystems[0]
    raise UsageError(f"center {center.name!r} describes no file system")


def _stripable(fs: FileSystem) -> bool:
    return fs.stripable


def _default_stripes(fs: FileSystem) -> int | None:
    if not _stripable(fs):
        return None
    return default_stripes(fs.default_stripe_count)


def _stripe_counts(fs: FileSystem, layout: str) -> list[int]:
    """Stripe counts weighed: the whole range from 1 to the OST count, for a shared file and file per process
    alike (files per process that each span many OSTs win where placement leaves OSTs idle)."""
    osts = most_stripes(fs.ost_count or max(STRIPE_STEPS[:8]))
    steps = [s for s in STRIPE_STEPS if s <= osts] + [osts]
    if fs.default_stripe_count and 0 < fs.default_stripe_count <= osts:
        steps.append(fs.default_stripe_count)
    return sorted(set(steps))


def quota_bytes(text: str | None) -> int | None:
    """The bytes a quota string states plainly (`10 GB`, `up to 10 GB free; ...`), or None when it states none
    or states it per something (`10 GB x number of users`)."""
    import re
    from ..model.units import parse_size
    if not text:
        return None
    m = re.match(r"\s*(?:up to\s+)?(\d+(?:\.\d+)?\s*[KMGTPE]i?B)\b(.*)", str(text), re.I)
    if m is None or re.match(r"\s*(x|per|/)\b", m.group(2), re.I):
        return None
    try:
        return parse_size(m.group(1))
    except (ValueError, UsageError):
        return None


def _fits_in(w: Workload, fs: FileSystem, tier: Tier | None) -> bool:
    """Whether the job's bytes fit the quota of a file system and the capacity of a tier (unknown: yes)."""
    total = w.bytes_per_rank * w.nodes * w.ranks_per_node
    quota = quota_bytes(fs.quota)
    if quota is not None and total > quota:
        return False
    if tier is not None and tier.capacity_per_node and \
            w.bytes_per_rank * w.ranks_per_node > tier.capacity_per_node:
        return False
    return True


def _places(center: Center, w: Workload, default_fs: FileSystem) -> list[tuple[FileSystem, Tier | None]]:
    out: list[tuple[FileSystem, Tier | None]] = []
    tier_fs = {t.filesystem for t in center.tiers}
    for fs in center.filesystems:
        if fs.name in tier_fs or not fs.persistent:
            continue
        out.append((fs, None))
    for t in center.tiers:
        fs = center.filesystem(t.filesystem)
        if fs is None:
            continue
        if w.lifetime == "after-job" and not t.stage:
            continue
        out.append((fs, t))
    # a place the job's bytes do not fit (quota, tier capacity) is not offered
    out = [(f, t) for f, t in out if _fits_in(w, f, t)]
    if not any(f.name == default_fs.name and t is None for f, t in out):
        out.insert(0, (default_fs, None))
    return out


def _candidates(w: Workload, center: Center, pins: Mapping[str, Any]) -> list[_Cand]:
    api = norm_api(w.api) or "POSIX"
    default_fs = default_filesystem(center)
    layouts = ["shared", "fpp"] if w.layout == "any" else [w.layout]
    collective_opts: list[bool | None] = [True, False] if api in ("MPIIO", "HDF5") else [None]
    meta = w.metadata_heavy
    out: list[_Cand] = []
    for fs, tier in _places(center, w, default_fs):
        for layout in layouts:
            if tier is not None and tier.kind == "node-local" and layout == "shared" and w.nodes > 1:
                continue           # a node-local disk cannot hold one file for several nodes
            counts: list[int | None] = [None]
            sizes: list[int | None] = [None]
            if _stripable(fs):
                counts = [1] if meta else _stripe_counts(fs, layout)
                base = fs.default_stripe_size or (1 << 20)
                sizes = [base]
                if not meta and w.access_size and w.access_size > base and w.access_size <= (64 << 20) \
                        and not stripe_size_problem(w.access_size):
                    sizes.append(w.access_size)
            for coll in collective_opts:
                cb_opts: list[str | None] = [None]
                if coll and layout == "shared":
                    cb_opts = [None, "enable", "disable"]
                for sc in counts:
                    for ss in sizes:
                        for cb in cb_opts:
                            hints: dict[str, str] = {}
                            if cb:
                                hints[f"romio_cb_{w.op}"] = cb
                            if api in ("MPIIO", "HDF5") and sc is not None and layout == "shared":
                                hints["striping_factor"] = str(sc)
                                hints["striping_unit"] = str(ss)
                                if coll and cb != "disable" and sc > 1:
                                    hints["cb_nodes"] = str(min(sc, w.nodes * w.ranks_per_node))
                                    hints["cb_buffer_size"] = str(ss)
                            cfg = Config(tier=tier.name if tier else None, filesystem=fs.name, layout=layout,
                                         api=api, collective=coll, stripe_count=sc, stripe_size=ss, hints=hints,
                                         hdf5_alignment=ss if api == "HDF5" and ss else None)
                            out.append(_Cand(cfg, fs, tier))
    return [c for c in out if _matches_pins(c.config, pins)]


def _matches_pins(cfg: Config, pins: Mapping[str, Any]) -> bool:
    for k, v in pins.items():
        if v is None:
            continue
        if k == "hints":
            if any(cfg.hints.get(hk) != str(hv) for hk, hv in v.items() if hk.startswith("romio_cb_")):
                return False
        elif k == "tier":
            want = str(v).lower()
            if want in ("none", "global", "") and cfg.tier is None:
                continue
            if (cfg.tier or "").lower() != want and not (cfg.tier is None and cfg.filesystem.lower() == want):
                return False
        elif k == "filesystem":
            if cfg.filesystem.lower() != str(v).lower():
                return False
        elif getattr(cfg, k) != v:
            return False
    return True


def _apply_pins(cands: list[_Cand], pins: Mapping[str, Any], w: Workload, center: Center) -> list[_Cand]:
    """Pinned values the candidate grid does not contain (an unusual stripe count, extra hints) are applied."""
    out = []
    for c in cands:
        cfg = c.config
        hints = dict(cfg.hints)
        for hk, hv in (pins.get("hints") or {}).items():
            hints[hk] = str(hv)
        out.append(replace(c, config=replace(cfg, hints=hints)))
    return out


def _pinned_candidates(w: Workload, center: Center, pins: Mapping[str, Any]) -> list[_Cand]:
    """Candidates honouring pinned stripe settings outside the usual grid (validated against the center)."""
    loose = {k: v for k, v in pins.items() if k not in ("stripe_count", "stripe_size")}
    base = _candidates(w, center, loose)
    out = []
    for c in base:
        cfg = c.config
        sc, ss = pins.get("stripe_count"), pins.get("stripe_size")
        if (sc is not None or ss is not None) and not _stripable(c.place):
            continue
        if sc is not None:
            sc = every_ost(sc, c.place.ost_count)
            if c.place.ost_count and sc > c.place.ost_count:
                raise UsageError(f"stripe count {sc} exceeds the {c.place.ost_count} OSTs of {c.place.name}")
            cfg = replace(cfg, stripe_count=sc)
        if ss is not None:
            check_stripe_size(ss)
            cfg = replace(cfg, stripe_size=ss, hdf5_alignment=ss if cfg.api == "HDF5" else None)
        hints = dict(cfg.hints)
        if "striping_factor" in hints:
            hints["striping_factor"] = str(cfg.stripe_count)
            hints["striping_unit"] = str(cfg.stripe_size)
            if "cb_buffer_size" in hints:
                hints["cb_buffer_size"] = str(cfg.stripe_size)
                hints["cb_nodes"] = str(min(cfg.stripe_count or 1, w.ranks))
        out.append(replace(c, config=replace(cfg, hints=hints)))
    uniq: dict[str, _Cand] = {}
    for c in out:
        uniq.setdefault(repr(c.config), c)
    return list(uniq.values())


# ---- prediction -------------------------------------------------------------------------------------------------

def _fit_for(fits: Mapping, system: str, fsname: str, op: str | None) -> Fit | None:
    """The fit of a file system; runs that name no file system stand for the derived `unknown` one."""
    if op is None:
        return None
    f = fits.get((system, fsname, op))
    if f is None and fsname == "unknown":
        f = fits.get((system, None, op))
    return f


def _metadata_op(fits: Mapping, system: str, fsname: str) -> str | None:
    for op in METADATA_OPS:
        if _fit_for(fits, system, fsname, op) is not None:
            return op
    return None


def candidate_point(cfg: Config, place: FileSystem, w: Workload) -> Point:
    """A candidate setting as the model's input."""
    ranks = w.ranks
    striped = lustre_striped(place.type)
    stripes = stripes_of(cfg.stripe_count, place.ost_count, place.default_stripe_count)
    if cfg.layout == "shared" or ranks == 1:
        targets = float(stripes)
    else:
        targets = float(ranks * stripes)
    targets = min(targets, ost_limit(place.ost_count))
    if not striped:
        targets = INF
    return Point(clients=float(w.nodes), ranks=float(ranks), targets=targets, shared=cfg.layout == "shared",
                 transfer=float(w.access_size) if w.access_size else None, klass=io_class(cfg.api, cfg.collective),
                 stripes=float(stripes), osts=float(place.ost_count) if place.ost_count else None, striped=striped,
                 layout=cfg.layout, writes=w.op == "write",
                 stripe_size=float(cfg.stripe_size or place.default_stripe_size or 0) or None)


def _predict(c: _Cand, w: Workload, fits: Mapping, system: str) -> None:
    cfg = c.config
    meta = w.metadata_heavy
    op = _metadata_op(fits, system, cfg.filesystem) if meta else w.op
    if not meta and w.access == "random" and _fit_for(fits, system, cfg.filesystem, "rand" + w.op):
        op = "rand" + w.op           # random small requests: the measured IOPS, not sequential bandwidth
    fit = _fit_for(fits, system, cfg.filesystem, op)
    if fit is None:
        return
    p = candidate_point(cfg, c.place, w)
    v = fit.predict(p)
    c.value = v
    c.fit = fit
    c.extrapolated = fit.extrapolates(p)
    c.point = p


def _bound(c: _Cand, w: Workload, ev: Any) -> None:
    """Evidence first: the candidate's value, moved into the band the runs near the job measured (a model may
    interpolate between them, not overrule them: predict.evidence), and under the physical ceilings (the file
    system's rated peak from the center file, the largest bandwidth its runs measured, scaled to the job)."""
    if c.value is None or c.fit is None or c.point is None:
        return
    f, p, fs = c.fit, c.point, c.place
    rated = fs.rated_write_bandwidth if w.op == "write" else fs.rated_read_bandwidth
    b = bounds(ev, f.filesystem, f.op, p.klass or "", c.config.layout, f.unit, f.kind == "bandwidth",
               nodes=float(w.nodes), rpn=float(w.ranks_per_node), volume=float(w.bytes_per_rank) or None,
               stripes=p.stripes if p.striped and p.stripes else 0.0,
               rated=rated / (1 << 20) if rated and f.unit == "MiB/s" else None)
    c.model_value = c.value
    c.bounds = b
    c.floor, c.ceiling, c.band_runs = b.floor, b.ceiling, b.band_runs
    c.bounded_by = b.by(c.value)
    c.value = b.clamp(c.value)
    if ev is not None:
        key = (f.filesystem, f.op, p.klass or "", c.config.layout, f.unit)
        c.standing = (key, ev.standing(*key, nodes=float(w.nodes), rpn=float(w.ranks_per_node),
                                       volume=float(w.bytes_per_rank) or None,
                                       stripes=p.stripes if p.striped and p.stripes else 0.0))


def _bounded(c: _Cand, xs: list[float]) -> list[float]:
    return [min(max(x, c.floor), c.ceiling) for x in xs]


def _mark_unmeasured(cands: list[_Cand], ev: Any) -> None:
    """Measure first: where runs measured some mode (API class and layout) of the job's op on a file system, a
    candidate of a mode none of them measured is not predicted (its number would be the model's guess only) and
    not recommended over a measured one; the answer names the runs that would settle it instead."""
    if ev is None:
        return
    for c in cands:
        if c.value is None or c.fit is None or c.point is None:
            continue
        f = c.fit
        if not ev.modes(f.filesystem, f.op, f.unit):
            continue
        if not ev.measured(f.filesystem, f.op, c.point.klass, c.config.layout, f.unit):
            c.unmeasured = _mode_words(c.config)
            c.value = None


def _mode_words(cfg: Config) -> str:
    mode = "" if cfg.collective is None else ("collective " if cfg.collective else "independent ")
    return f"{mode}{cfg.api} {cfg.layout}-file I/O on {cfg.filesystem}"


def _no_stripe_evidence(c: _Cand, default: int | None) -> bool:
    """A stripe count other than the default on a file system whose runs never varied striping: the model's
    number for it would come from its prior alone, so it is not offered as a measured gain."""
    if c.fit is None or c.config.stripe_count is None or c.fit.kind != "bandwidth":
        return False
    return len(c.fit.stripes_measured) < 2 and c.config.stripe_count != (default or 1)


def _measured_stripes(c: _Cand) -> bool:
    """Whether a candidate's stripe count is one its fit's runs measured (or it sets none)."""
    if c.config.stripe_count is None or c.fit is None or not c.fit.stripes_measured:
        return True
    return float(c.config.stripe_count) in c.fit.stripes_measured


def gain_probability(better: list[float], worse: list[float], gain: float = MIN_GAIN) -> float:
    """P(better >= (1 + gain) x worse) over paired posterior draws (the same parameter draw for both)."""
    pairs = [(a, b) for a, b in zip(better, worse) if b > 0]
    if not pairs:
        return 0.0
    return sum(1 for a, b in pairs if a >= (1 + gain) * b) / len(pairs)


def choose(values: list[float], draws: Any, costs: list[float], scores: list[int] | None = None, *,
           stripes: list[int | None] | None = None, default: int | None = None,
           measured: list[bool] | None = None,
           standing: list[float | None] | None = None) -> tuple[int, list[int]]:
    """The option to advise among predicted ones.

    `draws` gives each option's values under the posterior's parameter draws (a list, or a function of the
    index: only the few options compared below are evaluated). Two options are `close` when the better one's
    gain of `MIN_GAIN` or more has a probability below `CONFIDENCE`. Published comparisons come first: the best
    option of a higher comparison score replaces the best when the two are close. Then: the default setting is
    kept when it is close to the best (changing it buys no measurable gain); otherwise the cheapest option whose
    value lies within `TOLERANCE` of the best (on a plateau, more OSTs take from other jobs for nothing), a
    stripe count the runs measured (`measured`) before one only the model's curve reaches. `standing` decides
    first among the options the model cannot tell from the best: per option, None or (group, ratio or None),
    how the runs near the job rank its stripe count among the others they measured in its group (same file
    system, op, mode and layout; 1.0 the best: predict.evidence). Of the best's group, only the options the runs rank within
    `MIN_GAIN` of the best of them stay; one they never measured is not kept over one they did (where the
    model's curve is flat, the measurements nearest the job rank the options). Returns the chosen index and the
    indices found close to the best."""
    n = len(values)
    scores = scores or [0] * n
    stripes = stripes or [None] * n
    cache: dict[int, list[float]] = {}

    def d(i: int) -> list[float]:
        if i not in cache:
            cache[i] = list(draws(i) if callable(draws) else draws[i])
        return cache[i]

    def is_close(i: int, j: int) -> bool:
        """Whether option j is not measurably worse than option i."""
        if d(i) and d(j):
            return gain_probability(d(i), d(j)) < CONFIDENCE
        return values[j] >= values[i] * (1 - TOLERANCE)

    best = max(range(n), key=lambda i: (values[i], -costs[i]))
    close = {best}
    for sc in sorted({scores[i] for i in range(n) if scores[i] > scores[best]}, reverse=True):
        alt = max((i for i in range(n) if scores[i] == sc), key=lambda i: (values[i], -costs[i]))
        if is_close(best, alt):
            close.add(alt)
            best = alt
            break
    tier = [i for i in range(n) if scores[i] == scores[best]]
    if standing and standing[best] is not None:
        tier, ranked_best = _runs_rank_alike(tier, best, standing, is_close, values, costs)
        if ranked_best != best:
            best = ranked_best
            close.add(best)
    if default is not None and default in tier and (default == best or is_close(best, default)):
        close.add(default)
        return default, sorted(close)
    plateau = [i for i in tier if values[i] >= values[best] * (1 - TOLERANCE)]
    if measured:
        # on the plateau, a setting the runs measured is preferred to one only the model's curve reaches
        plateau = [i for i in plateau if measured[i]] or plateau
    pick = min(plateau, key=lambda i: (costs[i], stripes[i] or 0, -values[i]))
    if pick != best and is_close(best, pick):
        close.add(pick)
    return pick, sorted(close)


def _runs_rank_alike(tier: list[int], best: int, standing: list[Any], is_close: Any, values: list[float],
                     costs: list[float]) -> tuple[list[int], int]:
    """`choose`'s options left once the runs near the job have ranked those the model cannot tell from `best`
    (same group as `best`: only those within MIN_GAIN of the runs' best stay, and none they never measured over
    one they did), and the best of them."""
    group = standing[best][0]
    ranked = [i for i in tier if standing[i] is not None and standing[i][0] == group
              and standing[i][1] is not None and (i == best or is_close(best, i))]
    if not ranked:
        return tier, best
    top = max(standing[i][1] for i in ranked)
    tier = [i for i in tier if standing[i] is None or standing[i][0] != group or
            (i in ranked and standing[i][1] * (1 + MIN_GAIN) >= top)]
    if best not in tier:
        best = max((i for i in tier if i in ranked), key=lambda i: (values[i], -costs[i]))
    return tier, best


# ---- comparisons ------------------------------------------------------------------------------------------------

def _cmp_applies(cmp: Mapping[str, Any], w: Workload, c: _Cand) -> int:
    """+1 if the candidate has the better setting of a published comparison, -1 the worse, 0 otherwise."""
    op = cmp.get("op")
    meta = w.metadata_heavy
    if meta:
        if op not in ("metadata", "file_create", "open_create"):
            return 0
    elif op != w.op:
        return 0
    fsname = cmp.get("filesystem")
    cfg = c.config
    factor, better, worse = cmp.get("factor"), str(cmp.get("better")), str(cmp.get("worse"))
    if factor == "tier":
        names = {cfg.filesystem.lower(), (cfg.tier or "").lower(), c.place.type}
        return 1 if better.lower() in names else -1 if worse.lower() in names else 0
    if fsname and fsname.lower() != cfg.filesystem.lower():
        return 0
    if factor == "layout":
        return 1 if cfg.layout == better else -1 if cfg.layout == worse else 0
    if factor == "api":
        if cfg.api != norm_api(better) and cfg.api != norm_api(worse):
            return 0
        if cfg.api == norm_api(better) and cfg.api == "MPIIO" and cfg.collective and "romio_cb_" + w.op not in cfg.hints:
            return 0   # the comparison is about independent MPI-IO
        return 1 if cfg.api == norm_api(better) else -1
    if factor in ("cb_write", "cb_read"):
        if factor != f"cb_{w.op}" or not cfg.collective:
            return 0
        v = cfg.hints.get(f"romio_{factor}")
        return 1 if v == better else -1 if v == worse or (v is None and worse == "enable") else 0
    if factor == "stripe_count" and cfg.stripe_count is not None:
        b, wv = int(better), int(worse)
        sc = cfg.stripe_count
        if sc == wv:
            return -1
        if (b > wv and sc >= b) or (b < wv and sc <= b) or sc == b:
            return 1
        return 0
    if factor == "stripe_size" and cfg.stripe_size is not None:
        return 1 if cfg.stripe_size == int(better) else -1 if cfg.stripe_size == int(worse) else 0
    return 0


def _cost(c: _Cand, w: Workload, base: Config) -> float:
    """How much a configuration asks of the user and the shared system; lower is cheaper."""
    cfg = c.config
    cost = 0.0
    if cfg.stripe_count:
        cost += 0.02 * cfg.stripe_count        # OSTs taken from everyone else, more lock traffic
    if cfg.stripe_size and base.stripe_size and cfg.stripe_size != base.stripe_size:
        cost += 0.05
    if c.tier is not None:
        cost += 0.5 + (1.0 if w.lifetime == "after-job" else 0.0)   # request the tier; stage data out
    if cfg.filesystem != base.filesystem:
        cost += 0.3
    if cfg.collective != base.collective:
        cost += 1.0                           # a code change
    if cfg.layout != base.layout:
        cost += 0.2 if w.layout == "any" else 5.0
    cost += 0.05 * sum(1 for k in cfg.hints if k.startswith("romio_cb_"))
    return cost


# ---- the engine -------------------------------------------------------------------------------------------------

def baseline_config(w: Workload, center: Center) -> Config:
    """What the job gets without advice: the default file system and striping, the workload's own layout/API."""
    fs = default_filesystem(center)
    api = norm_api(w.api) or "POSIX"
    layout = w.layout if w.layout != "any" else ("shared" if api in ("MPIIO", "HDF5") else "fpp")
    sc = _default_stripes(fs)
    ss = (fs.default_stripe_size or (1 << 20)) if sc is not None else None
    return Config(tier=None, filesystem=fs.name, layout=layout, api=api,
                  collective=True if api in ("MPIIO", "HDF5") else None, stripe_count=sc, stripe_size=ss)


def _no_numbers_stripes(w: Workload, fs: FileSystem, layout: str) -> int:
    """Stripe count rule used when no measured run can rank the choices: one stripe per writing node for a shared
    file (capped at the OST count); file per process keeps one stripe per file."""
    if layout != "shared" or w.metadata_heavy:
        return 1
    return max(1, min(fs.ost_count or 1, w.nodes))


def _checked_pins(pins: Mapping[str, Any] | None, w: Workload, center: Center) -> dict[str, Any]:
    """The pins given (None values dropped), the layout normalised; a layout contradicting the workload or a
    tier the center lacks is a usage error."""
    pins = {k: v for k, v in (pins or {}).items() if v is not None}
    if pins.get("layout"):
        pins["layout"] = norm_layout(pins["layout"])
        if w.layout != "any" and pins["layout"] != w.layout:
            raise UsageError(f"layout {pins['layout']} contradicts the workload's layout {w.layout}")
    for name in ("tier",):
        if pins.get(name):
            want = str(pins[name]).lower()
            if not any(want in (t.name.lower(),) for t in center.tiers) and \
                    not any(want == f.name.lower() for f in center.filesystems) and want not in ("none", "global"):
                known = ", ".join([t.name for t in center.tiers] + [f.name for f in center.filesystems])
                raise UsageError(f"{center.name} has no tier or file system {pins[name]!r} (known: {known})")
    return pins


def _pinned_cands(w: Workload, center: Center, pins: Mapping[str, Any], base_cfg: Config) -> list[_Cand]:
    """The configurations to weigh, honouring the pins; none is a usage error."""
    if pins.get("stripe_count") is not None or pins.get("stripe_size") is not None:
        cands = _pinned_candidates(w, center, pins)
    else:
        cands = _candidates(w, center, pins)
    cands = _apply_pins(cands, pins, w, center)
    if pins.get("stripe_count") is not None and not pins.get("filesystem") and not pins.get("tier"):
        # asked about its stripe count, a job stays on the file system it would use
        same = [c for c in cands if c.tier is None and c.config.filesystem == base_cfg.filesystem]
        cands = same or cands
    if not cands:
        raise UsageError("no configuration satisfies the pinned settings on " + center.name)
    return cands


def _assess(cands: list[_Cand], w: Workload, fits: Any, system: str, comparisons: list[dict[str, Any]],
            base_cfg: Config, ev: Any) -> None:
    """Predict, bound, score and cost each candidate; mark the unmeasured ones when any is measured."""
    for c in cands:
        _predict(c, w, fits, system)
        _bound(c, w, ev)
        for cmp in comparisons:
            s = _cmp_applies(cmp, w, c)
            if s:
                c.score += s
                c.applied.append({**cmp, "_sign": s})
        c.cost = _cost(c, w, base_cfg)
    if any(c.value is not None and c.fit is not None and c.point is not None and
           ev.measured(c.fit.filesystem, c.fit.op, c.point.klass, c.config.layout, c.fit.unit)
           for c in cands if ev is not None):
        _mark_unmeasured(cands, ev)


def _without_unevidenced_stripes(cands: list[_Cand], center: Center, pins: Mapping[str, Any]
                                 ) -> tuple[list[_Cand], list[_Cand]]:
    """(candidates, predicted ones) without the predicted stripe counts no evidence supports, unless that
    leaves none or the stripe count is pinned."""
    predicted = [c for c in cands if c.value is not None]
    if predicted and not pins.get("stripe_count"):
        dflt = {fs.name: _default_stripes(fs) for fs in center.filesystems}
        kept = [c for c in predicted if not _no_stripe_evidence(c, dflt.get(c.config.filesystem))]
        if kept:
            dropped = {id(c) for c in predicted} - {id(c) for c in kept}
            cands = [c for c in cands if id(c) not in dropped]
            predicted = kept
    return cands, predicted


def _explain_choice(chosen: _Cand, predicted: list[_Cand], pick: int, dflt: int | None, close_c: list[_Cand],
                    w: Workload, draws_of: Any) -> None:
    """Set `chosen.decision`: why it was chosen over the fastest prediction or the default."""
    top = max(predicted, key=lambda c: c.value)
    other = predicted[dflt] if dflt is not None and predicted[dflt] is not chosen else top
    if other is not chosen and _ranked_by_runs(chosen, other):
        r0 = chosen.standing[1]
        peers = [c for c in predicted if c is not chosen and c.standing and c.standing[1] is not None
                 and c.standing[0] == chosen.standing[0]]
        said = [f"{_describe(c.config)} measured {r0 / c.standing[1]:.2f}x slower"
                for c in ([max(peers, key=lambda c: c.standing[1])] if peers else [])]
        if other.standing[1] is None:
            said.append(f"{_describe(other.config)} not measured there")
        chosen.decision = (f"{RUNS_DECIDED} this first among options the model's curve cannot tell apart "
                           f"({_describe(other.config)} predicted {other.value / chosen.value:.2f}x): "
                           + "; ".join(said))
    elif chosen is not top and top in close_c and top.value > chosen.value:
        kept = "the default is kept" if pick == dflt else "the cheaper option is kept"
        chosen.decision = (f"no measurable difference in the measured runs between this and "
                           f"{_describe(top.config)} (predicted {top.value / chosen.value:.2f}x, but a gain of "
                           f"{int(MIN_GAIN * 100)}% or more has a probability below {int(CONFIDENCE * 100)}%), "
                           f"so {kept}; {_settle(top, chosen, w)}")
    elif dflt is not None and predicted[dflt] is not chosen:
        # the default's draws are evaluated only if `choose` compared it: evaluate them here if not
        p = gain_probability(draws_of(pick), draws_of(dflt))
        chosen.decision = (f"predicted {chosen.value / predicted[dflt].value:.2f}x the default, a gain of "
                           f"{int(MIN_GAIN * 100)}% or more with probability {p:.2f}")


def _order_predicted(cands: list[_Cand], predicted: list[_Cand], base_cfg: Config, w: Workload) -> list[_Cand]:
    """The candidates best first when some are predicted: the choice and those too close to tell from it,
    then the other predicted ones by value, then the unpredicted ones."""
    base_key = _visible(base_cfg)
    dflt = next((i for i, c in enumerate(predicted) if c.tier is None and _visible(c.config) == base_key), None)

    def draws_of(i: int) -> list[float]:
        c = predicted[i]
        if not c.draws and c.fit is not None and c.point is not None:
            c.draws = _bounded(c, c.fit.draws(c.point))
        return c.draws

    pick, close = choose([c.value for c in predicted], draws_of,
                         [c.cost for c in predicted], [c.score for c in predicted],
                         stripes=[c.config.stripe_count for c in predicted], default=dflt,
                         measured=[_measured_stripes(c) for c in predicted],
                         standing=[c.standing for c in predicted])
    if dflt is not None and predicted[dflt].value > predicted[pick].value:
        # a change predicted slower than the default is never advised, whatever else ranked it first
        close = sorted(set(close) | {dflt})
        pick = dflt
    chosen = predicted[pick]
    close_c = [predicted[i] for i in close]
    _explain_choice(chosen, predicted, pick, dflt, close_c, w, draws_of)
    ranked = [chosen] + sorted((c for c in close_c if c is not chosen), key=lambda c: (-c.score, c.cost, -c.value))
    near_ids = {id(c) for c in ranked}
    rest = sorted((c for c in predicted if id(c) not in near_ids), key=lambda c: (-c.value, -c.score, c.cost))
    unpredicted = sorted((c for c in cands if c.value is None), key=lambda c: (-c.score, c.cost))
    return ranked + rest + unpredicted


def _order_by_rules(cands: list[_Cand], w: Workload) -> list[_Cand]:
    """The candidates best first when none is predicted: by score, closeness to the rule's stripe count, cost."""
    def rule_distance(c: _Cand) -> float:
        if c.config.stripe_count is None:
            return 0.0
        target = _no_numbers_stripes(w, c.place, c.config.layout)
        return abs(math.log2(c.config.stripe_count) - math.log2(target))
    return sorted(cands, key=lambda c: (-c.score, rule_distance(c), c.cost))


def _baseline(base_cfg: Config, center: Center, w: Workload, fits: Any, system: str, ev: Any,
              comparisons: list[dict[str, Any]], cands: list[_Cand]) -> _Cand:
    """The baseline, predicted the same way as the candidates."""
    base = _Cand(base_cfg, center.filesystem(base_cfg.filesystem) or default_filesystem(center), None)
    _predict(base, w, fits, system)
    _bound(base, w, ev)
    if any(c.unmeasured for c in cands):
        _mark_unmeasured([base], ev)
    for cmp in comparisons:
        s = _cmp_applies(cmp, w, base)
        if s:
            base.applied.append({**cmp, "_sign": s})
    return base


def _set_intervals(shown: list[_Cand]) -> None:
    """Intervals and limits, only for the options shown: each costs the draws."""
    for c in shown:
        if c.value is not None and c.fit is not None and c.point is not None:
            c.low, c.high = c.fit.interval(c.value, c.point)
            if c.bounds is not None:
                c.low, c.high = c.bounds.interval(c.value, c.low, c.high)
            c.binding = c.fit.binding(c.point)


def advise(workload: Workload, kb: Any, center: Center | None = None, *, pins: Mapping[str, Any] | None = None,
           system: str | None = None) -> Advice:
    """Recommend a configuration for `workload` on `center` (or a center derived from `system`'s runs)."""
    from ..center import resolve_center
    from .fits import system_evidence, system_fits
    check_workload(workload)
    w = replace(workload, api=norm_api(workload.api) or "POSIX")
    if center is None:
        center = resolve_center(system, None, kb)
    # the system as the KB spells it: a center file naming it in another case advises as --system does
    system = next((s for s in kb.systems() if s.lower() == center.name.lower()), center.name)
    pins = _checked_pins(pins, w, center)
    fits = system_fits(kb, system, center)
    comparisons = kb.comparisons(system)
    base_cfg = baseline_config(w, center)
    cands = _pinned_cands(w, center, pins, base_cfg)
    ev = system_evidence(kb, system, center) if fits else None
    _assess(cands, w, fits, system, comparisons, base_cfg, ev)
    cands, predicted = _without_unevidenced_stripes(cands, center, pins)
    order = _order_predicted(cands, predicted, base_cfg, w) if predicted else _order_by_rules(cands, w)
    rec = order[0]
    base = _baseline(base_cfg, center, w, fits, system, ev, comparisons, cands)
    alts = _alternatives(order[1:], rec)
    _set_intervals([rec, base] + alts)
    from .explain import build_option, warnings_for
    evidence_runs = _evidence_runs(kb, [rec, base] + alts)
    options = [build_option(c, w, center, base, rec, evidence_runs, has_numbers=bool(fits))
               for c in [rec, base] + alts]
    advice = Advice(system=system, workload=w, recommendation=options[0], baseline=options[1],
                    alternatives=tuple(options[2:]), warnings=tuple(warnings_for(w, center, fits, predicted, rec, cands)))
    # reasons about the table come from the table's own numbers (explain.finalize); pinned advice is set
    # beside the unpinned best
    from .explain import finalize
    unpinned = None
    if pins:
        try:
            unpinned = advise(workload, kb, center)
        except Exception:      # the unpinned question may have no answer; the pinned one still stands
            unpinned = None
    return finalize(advice, center, pins, unpinned)


def _describe(cfg: Config) -> str:
    parts = [cfg.tier or cfg.filesystem, cfg.layout]
    if cfg.stripe_count is not None:
        parts.append(f"{cfg.stripe_count} stripe(s)")
    if cfg.collective is not None:
        parts.append("collective" if cfg.collective else "independent")
    return ", ".join(parts)


def _ranked_by_runs(chosen: _Cand, other: _Cand) -> bool:
    """Whether the runs near the job, not the model, put `chosen` before `other` (choose's `standing`)."""
    a, b = chosen.standing, other.standing
    return (a is not None and b is not None and a[0] == b[0] and a[1] is not None
            and (b[1] is None or b[1] * (1 + MIN_GAIN) < a[1]))


def _settle(a: _Cand, b: _Cand, w: Workload) -> str:
    """The measurement that would tell two close options apart."""
    what = []
    for cfg in (a.config, b.config):
        what.append(_describe(cfg))
    return (f"a benchmark of {w.nodes} node(s) x {w.ranks_per_node} rank(s) {w.op} with {what[0]} and with "
            f"{what[1]} would settle it (ioadvise bench run)")


def _alternatives(order: list[_Cand], rec: _Cand, n: int = 4) -> list[_Cand]:
    """The next best few: first one per different kind of choice (place, layout, collective mode), then other
    stripe settings, so the runners-up show what else was weighed. Predicted options come first."""
    out: list[_Cand] = []
    seen = {_visible(rec.config)}
    pools = [order]
    if rec.value is not None:
        pools = [[c for c in order if c.value is not None], order]
    for pool in pools:
        kinds = {_visible(rec.config)[:4]} | {_visible(c.config)[:4] for c in out}
        for by_kind in (True, False):
            for c in pool:
                k = _visible(c.config)
                if k in seen or (by_kind and k[:4] in kinds):
                    continue
                kinds.add(k[:4])
                seen.add(k)
                out.append(c)
                if len(out) >= n:
                    return out
            if pool is pools[0] and len(pools) > 1 and not by_kind:
                break
    return out


def _visible(cfg: Config) -> tuple:
    return (cfg.tier, cfg.filesystem, cfg.layout, cfg.collective, cfg.stripe_count, cfg.stripe_size,
            tuple(sorted((k, v) for k, v in cfg.hints.items() if k.startswith("romio_cb_"))))


def _evidence_runs(kb: Any, cands: list[_Cand]) -> dict[str, Any]:
    from .fits import runs_by_ids
    ids: list[str] = []
    for c in cands:
        if c.fit:
            ids.extend(i for i in c.fit.run_ids[:12] if i not in ids)
    return runs_by_ids(kb, ids)


__all__ = ["advise", "baseline_config", "check_workload", "default_filesystem", "TOLERANCE"]
