"""The settings the advice weighs for a workload: the workload's checks, the places its bytes may go (file systems
and tiers, within quota and capacity), the stripe counts and sizes, collective modes and hints of each, the pins
a user gave, and each candidate as the model's input. Pure: a center and a workload in, candidates out."""
from __future__ import annotations

from ..errors import UsageError
from ..frozen import replace
from ..lustre import (check_stripe_size, default_stripes, every_ost, most_stripes, ost_limit, stripe_size_problem,
                      stripes_of)
from ..lustre import striped as lustre_striped
from ..model.run import norm_api, norm_layout
from ..model.types import Center, Config, FileSystem, Tier, Workload
from ..predict import INF, Fit, Point, io_class
from ..predict.evidence import Bounds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

STRIPE_STEPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 160, 256, 512, 1024, 2000)


class Candidate:
    """One setting weighed for a workload on a place (file system, tier), with what the engine predicts of it:
    the model's value and the bounds the runs near the job put on it. What is advised is decided by `policy`.
    The engine fills it in step by step; a plain class (no dataclass, whose module imports `inspect`)."""

    __slots__ = ("config", "place", "tier", "value", "low", "high", "fit", "notes", "extrapolated", "draws",
                 "binding", "point", "floor", "standing", "near", "ceiling", "bounded_by", "model_value",
                 "band_runs", "unmeasured", "bounds")

    def __init__(self, config: Config, place: FileSystem, tier: Tier | None) -> None:
        self.config, self.place, self.tier = config, place, tier
        self.value: float | None = None
        self.low: float | None = None
        self.high: float | None = None
        self.fit: Fit | None = None
        self.notes: list[str] = []
        self.extrapolated = False     # predicted for a client count outside the measured ones
        self.draws: list[float] = []  # predicted values under the posterior's parameter draws
        # the limit that binds: clients, aggregators, osts, extent locks, peak, api, request size
        self.binding: str | None = None
        self.point: Point | None = None   # the model's input for this candidate
        self.floor = 0.0              # the bounds the measured runs and the center put on its value
        self.standing: tuple | None = None   # (group, ratio or None): how the runs near the job rank its stripe count
        self.near: tuple = ()         # what the runs near the job measured (predict.evidence.Near per node count)
        self.ceiling = INF
        self.bounded_by: str | None = None   # what moved the model's value into them: runs, measured peak, rated peak
        self.model_value: float | None = None   # the model's own value before the bounds
        self.band_runs = 0            # runs near the job that gave the band
        self.unmeasured: str | None = None   # the mode no run of this system measured (then not predicted)
        self.bounds: Bounds | None = None

    def with_config(self, config: Config) -> Candidate:
        """A copy with another config (each list a copy too)."""
        new = Candidate.__new__(Candidate)
        for name in Candidate.__slots__:
            value = getattr(self, name)
            setattr(new, name, list(value) if isinstance(value, list) else value)
        new.config = config
        return new

    def bounded(self, xs: list[float]) -> list[float]:
        """Values (the posterior's draws) moved into the bounds the runs and the center put on this candidate."""
        return [min(max(x, self.floor), self.ceiling) for x in xs]


# more compute nodes than any machine has (Fugaku, among the largest, has 158,976), more processes than any node
# runs: a workload beyond them is a typo, not a job to predict for
MAX_NODES = 1_000_000
MAX_RANKS_PER_NODE = 100_000


def check_workload(w: Workload) -> None:
    """Raise UsageError for an impossible workload."""
    if not 1 <= w.nodes <= MAX_NODES:
        raise UsageError(f"nodes must be 1 to {MAX_NODES:,}, got {w.nodes}")
    if not 1 <= w.ranks_per_node <= MAX_RANKS_PER_NODE:
        raise UsageError(f"ranks per node must be 1 to {MAX_RANKS_PER_NODE:,}, got {w.ranks_per_node}")
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


def default_stripes_on(fs: FileSystem) -> int | None:
    """The stripes a new file gets on `fs` by default where users set striping (its default count, else 1); None
    where they do not."""
    if not fs.stripable:
        return None
    return default_stripes(fs.default_stripe_count)


def stripe_counts(fs: FileSystem, layout: str) -> list[int]:
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


def candidates_for(w: Workload, center: Center, pins: Mapping[str, Any]) -> list[Candidate]:
    """Every setting weighed for the workload (place, layout, collective mode, stripe count and size, collective
    buffering hint) that matches the pins."""
    api = norm_api(w.api) or "POSIX"
    default_fs = default_filesystem(center)
    layouts = ["shared", "fpp"] if w.layout == "any" else [w.layout]
    collective_opts: list[bool | None] = [True, False] if api in ("MPIIO", "HDF5") else [None]
    meta = w.metadata_heavy
    out: list[Candidate] = []
    for fs, tier in _places(center, w, default_fs):
        for layout in layouts:
            if tier is not None and tier.kind == "node-local" and layout == "shared" and w.nodes > 1:
                continue           # a node-local disk cannot hold one file for several nodes
            counts: list[int | None] = [None]
            sizes: list[int | None] = [None]
            if fs.stripable:
                counts = [1] if meta else stripe_counts(fs, layout)
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
                            out.append(Candidate(cfg, fs, tier))
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


def _with_pinned_hints(cands: list[Candidate], pins: Mapping[str, Any]) -> list[Candidate]:
    """The candidates with the pinned MPI-IO hints added to (or replacing) their own; the candidates themselves where
    no hint is pinned (each was made with a dict of hints of its own, which nothing changes in place)."""
    pinned = pins.get("hints") or {}
    if not pinned:
        return cands
    out = []
    for c in cands:
        cfg = c.config
        hints = dict(cfg.hints)
        for hk, hv in pinned.items():
            hints[hk] = str(hv)
        out.append(c.with_config(replace(cfg, hints=hints)))
    return out


def _off_grid_candidates(w: Workload, center: Center, pins: Mapping[str, Any]) -> list[Candidate]:
    """Candidates honouring pinned stripe settings outside the usual grid (validated against the center)."""
    loose = {k: v for k, v in pins.items() if k not in ("stripe_count", "stripe_size")}
    base = candidates_for(w, center, loose)
    out = []
    for c in base:
        cfg = c.config
        sc, ss = pins.get("stripe_count"), pins.get("stripe_size")
        if (sc is not None or ss is not None) and not c.place.stripable:
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
        out.append(c.with_config(replace(cfg, hints=hints)))
    uniq: dict[str, Candidate] = {}
    for c in out:
        uniq.setdefault(repr(c.config), c)
    return list(uniq.values())


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


def baseline_config(w: Workload, center: Center) -> Config:
    """What the job gets without advice: the default file system and striping, the workload's own layout/API."""
    fs = default_filesystem(center)
    api = norm_api(w.api) or "POSIX"
    layout = w.layout if w.layout != "any" else ("shared" if api in ("MPIIO", "HDF5") else "fpp")
    sc = default_stripes_on(fs)
    ss = (fs.default_stripe_size or (1 << 20)) if sc is not None else None
    return Config(tier=None, filesystem=fs.name, layout=layout, api=api,
                  collective=True if api in ("MPIIO", "HDF5") else None, stripe_count=sc, stripe_size=ss)


def checked_pins(pins: Mapping[str, Any] | None, w: Workload, center: Center) -> dict[str, Any]:
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


def pinned_candidates(w: Workload, center: Center, pins: Mapping[str, Any], base_cfg: Config) -> list[Candidate]:
    """The configurations to weigh, honouring the pins; none is a usage error."""
    if pins.get("stripe_count") is not None or pins.get("stripe_size") is not None:
        cands = _off_grid_candidates(w, center, pins)
    else:
        cands = candidates_for(w, center, pins)
    cands = _with_pinned_hints(cands, pins)
    if pins.get("stripe_count") is not None and not pins.get("filesystem") and not pins.get("tier"):
        # asked about its stripe count, a job stays on the file system it would use
        same = [c for c in cands if c.tier is None and c.config.filesystem == base_cfg.filesystem]
        cands = same or cands
    if not cands:
        raise UsageError("no configuration satisfies the pinned settings on " + center.name)
    return cands


def visible_settings(cfg: Config) -> tuple:
    """What a user sees of a configuration: two with the same settings are the same advice."""
    return (cfg.tier, cfg.filesystem, cfg.layout, cfg.collective, cfg.stripe_count, cfg.stripe_size,
            tuple(sorted((k, v) for k, v in cfg.hints.items() if k.startswith("romio_cb_"))))
