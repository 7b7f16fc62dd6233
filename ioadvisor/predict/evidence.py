"""What the measured runs near a job say, before any model: the band a prediction may not leave.

Runs are near a job when they share its system, file system, op, API class (API and collective mode), layout and
unit, come from the same family (ranks per node within a factor of `FAMILY_SPAN`: one-rank-per-node hero runs say
little of a 24-rank application kernel), and were measured at the nearest node counts on either side of the
job's (within a factor of `NODE_SPAN`), at the volume per rank nearest the job's. At each such node count the
runs give, per stripe count, the range they measured (repetitions included); a stripe count between measured ones
takes the log-log interpolation of its neighbours' ranges; one outside them is held under the nearest measured
count's highest value (no gain is claimed beyond what was measured), with no floor. The band at the job is the envelope of the neighbouring node
counts' ranges (the job lies between them), or the one side's range scaled by the node ratio where the job lies
beyond the measured scales, widened by `MARGIN` (one run's noise); where `EXACT_RUNS` runs or more were measured at
the job's own node count, stripe count and volume (within `EXACT_MARGIN_VOLUME`), the band is their median, and
where the family repeated its settings often enough near the job (`REPEAT_RUNS` runs within `REPEAT_SPAN` of its
node count, each with `EXACT_RUNS` others at its settings), the prediction's 90% interval is how far one run fell
from the median of its others there, in units of their spread, times the spread of the job's own runs
(`Bounds.interval`), not the model's width. Where the band is not so pinned and `REPEAT_RUNS` runs of the family
lie within `REPEAT_SPAN` of the job's node count, the model's interval is cut to the band widened by how far those
runs fell outside the bands the family's other runs allowed them (`Evidence._spread`), never inside one run's
noise around the value. `standing` says how the runs near a job rank a stripe count against the others they
measured. A model may interpolate inside the band; it may not overrule the runs beyond it, which is what keeps a
cliff the runs measured from being recommended.

`measured_peak` is the other bound: the largest bandwidth any run of the group measured, scaled linearly in nodes
up to the job's (a job on more nodes may at best scale perfectly), widened by `MARGIN`.

Everything here is pure.
"""
from __future__ import annotations

import bisect
import json
import math

from ..frozen import NamedTuple
from ..lustre import striped, stripes_of
from ..model.run import Run, bytes_moved
from . import io_class
from .physical import INF

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Mapping

MARGIN = 1.25          # one run's noise (about OBS_SIGMA in log space) beyond the range the runs measured
NODE_SPAN = 4.0        # neighbouring node counts within this factor of the job's
FAMILY_SPAN = 2.0      # ... and ranks per node within this factor: the same family of runs
VOLUME_SPAN = 2.0      # volumes per rank within this factor of the nearest one count as the same volume
EXACT_RUNS = 3         # runs at the job's own node and stripe count that pin the band to their median
EXACT_MARGIN = 1.0
EXACT_MARGIN_VOLUME = 1.1
# where the band is pinned, its 90% interval is the repetitions' own noise, calibrated on at least REPEAT_RUNS runs of
# the family within REPEAT_SPAN of the job's node count (where `kb validate --sweeps` calls the runs dense)
REPEAT_RUNS = 10
REPEAT_SPAN = 2.0
# the family's pooled variance counts as this many degrees of freedom next to those of the runs at one setting:
# with two of their own (three runs) the 90% quantile of a deviation over such a spread is then Student's t at
# 6 dof, 1.94 spreads, not 2.92 at 2 (a spread near zero from three close runs cannot make an interval near zero),
# while from five runs on the setting's own spread weighs at least half
PRIOR_DOF = 4
# where the band is not so pinned, its 90% interval is how far runs of the family near the job fell outside the bands
# the family's other settings allowed them (`Evidence._spread`), from at most SPREAD_RUNS of them
SPREAD_RUNS = 200
# where the job lies beyond the node counts measured near it (on one side only), its stripe counts are ranked on the
# runs of the RANK_BEYOND nearest node counts on that side, not one: ARCHER's 2-node shared-file writes measured 56
# stripes 1.8x slower than 1, where 1 and 4 nodes measured 56 faster, and had decided every 1-node job alone
RANK_BEYOND = 2
VOLUME_FAR = 4.0       # a node count whose runs all moved 4x more or less per rank than the job is not near:
                       # ARCHER's 128-node file-per-process sweeps favoured 48 stripes at 1 GiB per rank and 1 at 8


class Band(NamedTuple):
    """The range the runs near a job allow its value: `low`-`high`, from `n_runs` runs at `nodes`."""

    low: float
    high: float
    n_runs: int
    nodes: tuple[float, ...]
    exact: bool                 # measured at the job's own node count and stripe count
    # pinned to the median of runs at the job's settings: how far one run falls from it (`Evidence._repeat_noise`)
    noise: float | None = None
    # not pinned so: the factor by which runs near the job fell outside bands like this one (`Evidence._spread`),
    # and how far one run of the family near the job fell from the median of its repetitions (log), which the
    # interval never undercuts
    spread: float | None = None
    run_noise: float | None = None

    def clamp(self, v: float) -> float:
        return min(max(v, self.low), self.high)


class Near(NamedTuple):
    """What the runs near a job measured at one neighbouring node count `nodes` (at the volume per rank nearest
    the job's, about `volume`): per stripe count, (stripes, median, lowest, highest, runs)."""

    nodes: float
    volume: float | None
    measured: tuple[tuple[float, float, float, float, int], ...]


def standing_in(near: Iterable[Near], stripes: float) -> float | None:
    """`Evidence.standing` of a stripe count from the table `near` (`Evidence.near`)."""
    ratios = []
    for side in near:
        med = {m[0]: m[1] for m in side.measured}
        s = stripes if min(med) > 0 else 0.0
        if s in med and len(med) > 1:
            ratios.append(med[s] / max(med.values()))
    return math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None


class _Obs(NamedTuple):
    """One run as the evidence reads it (a tuple: a stored index of thousands is read back at every cold
    advice, and a tuple is made several times faster than a frozen record)."""

    nodes: float
    rpn: float
    volume: float | None        # bytes per rank
    stripes: float
    value: float


def run_stripes(r: Run, osts: int | None, dflt: int | None) -> float:
    """A run's stripe count as the evidence counts it (0.0: a file system that spreads data itself)."""
    if not striped((r.fs_type or "lustre").lower()):
        return 0.0              # the file system spreads data itself: stripe counts do not apply
    return float(stripes_of(r.stripe_count, r.ost_count or osts, dflt))


def observe(r: Run, osts: int | None, dflt: int | None) -> _Obs | None:
    """A run as the evidence reads it (node count, ranks per node, bytes per rank, stripe count, value); None for a
    run without a node count or a positive, finite value."""
    if not r.value or r.value <= 0 or not math.isfinite(r.value) or not r.nodes:
        return None
    ranks = r.ranks or (r.nodes * r.ranks_per_node if r.ranks_per_node else r.nodes)
    moved = bytes_moved(r)
    return _Obs(nodes=float(r.nodes), rpn=ranks / r.nodes, volume=moved / ranks if moved else None,
                stripes=run_stripes(r, osts, dflt), value=r.value)


def _log_interp(x: float, a: float, b: float, va: float, vb: float) -> float:
    t = (math.log(x) - math.log(a)) / (math.log(b) - math.log(a))
    return math.exp((1 - t) * math.log(va) + t * math.log(vb))


class Evidence:
    """The runs of one system indexed by (file system, op, API class, layout, unit), for `band` and
    `measured_peak`. `osts` and `dflt` give each file system's OST count and default stripe count."""

    def __init__(self, runs: Iterable[Run], osts: Mapping | None = None, dflt: Mapping | None = None):
        self._by: dict[tuple, list[_Obs] | str] = {}            # a group's runs (as stored: JSON text, `_group`)
        self._peak: dict[tuple, list[tuple[float, float]] | str] = {}  # as `_by` (`_peak_points`)
        self._repeats: dict[tuple, list[tuple[float, float, float, int]]] = {}  # (key, family): `_repeat_residuals`
        self._pools: dict[tuple, list[_Obs]] = {}                  # (key, family): its runs
        self._bands: dict[tuple, tuple[float, float] | None] = {}  # (key, family, a setting): `_outside`'s bands
        self._extremes: dict[tuple, list[_Obs]] = {}               # (key, family): `_extremes`
        self._noise: dict[tuple, tuple[float, float, float] | None] = {}  # (key, family, nodes): `_near_noise`
        self._spreads: dict[tuple, float | None] = {}             # (key, family, nodes, whole, floor): `_spread`
        self._peaks: dict[tuple, float | None] = {}               # (file system, op, unit, nodes): `measured_peak`
        self._near_runs: dict[tuple, list] = {}                  # (key, nodes, rpn, volume, beyond): `_sides`
        self._families: dict[tuple, float | None] = {}           # (key, rpn): `_family`
        osts, dflt = osts or {}, dflt or {}
        for r in runs:
            if not r.value or r.value <= 0 or not math.isfinite(r.value):
                continue
            self._peak.setdefault((r.filesystem, r.op, r.unit), []).append(
                (float(r.nodes) if r.nodes else INF, r.value))
            obs = observe(r, osts.get(r.filesystem), dflt.get(r.filesystem))
            if obs is None:
                continue
            # one process writing one file is shared and file per process alike: a single-rank run that states
            # no layout is evidence for both (ranks are whole: rounding undoes the division's last bit)
            for layout in (r.layout,) if r.layout or round(obs.rpn * obs.nodes) != 1 else ("shared", "fpp"):
                key = (r.filesystem, r.op, io_class(r.api, r.collective), layout, r.unit)
                self._by.setdefault(key, []).append(obs)

    def to_json(self) -> dict:
        """The index as stored, each group's runs and each (file system, op, unit)'s peak points as JSON text of
        their own: read back (`from_json`), each is decoded when first asked for, and an advice asks for those of
        its op only (the peak points of the other ops were most of the numbers a cold advice decoded)."""
        return {"by": [[list(k), v if isinstance(v, str) else
                        json.dumps([[o.nodes, o.rpn, o.volume, o.stripes, o.value] for o in v])]
                       for k, v in self._by.items()],
                "peak": [[list(k), v if isinstance(v, str) else json.dumps([list(x) for x in v])]
                         for k, v in self._peak.items()]}

    @classmethod
    def from_json(cls, d: Mapping) -> "Evidence":
        """The index `to_json` stored (or one stored before, each group's runs or peak points as a list)."""
        ev = cls(())
        ev._by = {tuple(k): v if isinstance(v, str) else [_Obs(*o) for o in v] for k, v in d["by"]}
        ev._peak = {tuple(k): v if isinstance(v, str) else [tuple(x) for x in v] for k, v in d["peak"]}
        return ev

    def _peak_points(self, key: tuple) -> list[tuple[float, float]]:
        """(nodes, value) of each run of a (file system, op, unit), decoded from their stored text when first
        asked for."""
        v = self._peak.get(key)
        if isinstance(v, str):
            v = self._peak[key] = [tuple(x) for x in json.loads(v)]
        return v or []

    def _group(self, key: tuple) -> list[_Obs]:
        """A group's runs ([] for a group with none), decoded from their stored text when first asked for."""
        v = self._by.get(key)
        if isinstance(v, str):
            v = self._by[key] = [_Obs(*o) for o in json.loads(v)]
        return v or []

    def modes(self, filesystem: str | None, op: str, unit: str) -> set[tuple[str, str | None]]:
        """The (API class, layout) pairs runs measured on a file system for an op."""
        return {(k[2], k[3]) for k in self._by if (k[0], k[1], k[4]) == (filesystem, op, unit) and self._group(k)}

    def measured(self, filesystem: str | None, op: str, klass: str, layout: str | None, unit: str,
                 rpn: float | None = None) -> bool:
        """Whether runs measured this mode (API class and layout); given the job's ranks per node `rpn`, runs of
        its family (ranks per node within `FAMILY_SPAN`): a mode measured only in another family is not
        measured for this job."""
        key = (filesystem, op, klass, layout, unit)
        if rpn is not None:
            return self._family(key, rpn) is not None
        return bool(self._group(key))

    def _family(self, key: tuple, rpn: float) -> float | None:
        """The ranks per node of the job's family: the measured one nearest `rpn`, None beyond `FAMILY_SPAN`."""
        if (key, rpn) not in self._families:
            pool = self._group(key)
            fam = min({o.rpn for o in pool}, key=lambda x: abs(math.log(x / rpn))) if pool else None
            near = fam is not None and abs(math.log(fam / rpn)) <= math.log(FAMILY_SPAN) + 1e-9
            self._families[(key, rpn)] = fam if near else None
        return self._families[(key, rpn)]

    def _pool(self, key: tuple, rpn: float) -> tuple[float | None, list[_Obs]]:
        """(the job's family's ranks per node, its runs) of a group; (None, []) where no family is near."""
        fam = self._family(key, rpn)
        if fam is None:
            return None, []
        if (key, fam) not in self._pools:
            self._pools[(key, fam)] = [o for o in self._group(key) if o.rpn == fam]
        return fam, self._pools[(key, fam)]

    def _sides(self, key: tuple, nodes: float, rpn: float, volume: float | None,
               beyond: int = 1) -> list[tuple[float, list[_Obs]]]:
        """The runs near a job (see the module docstring): per neighbouring node count, those of the job's family
        at the volume per rank nearest the job's; [] where none is near. `beyond`: `_near`'s."""
        if not nodes or not math.isfinite(nodes):
            return []
        # the candidates of one advice share the job's sizes: each group's runs near them are found once
        memo = (key, nodes, rpn, volume, beyond)
        if memo not in self._near_runs:
            self._near_runs[memo] = _near(self._pool(key, rpn)[1], nodes, volume, beyond)
        return self._near_runs[memo]

    def near(self, filesystem: str | None, op: str, klass: str, layout: str | None, unit: str, *,
             nodes: float, rpn: float, volume: float | None) -> tuple[Near, ...]:
        """The runs near the job (see the module docstring) as a table: per neighbouring node count, what each
        stripe count measured there. () where no run is near. Where the job lies beyond the node counts measured
        at its volume (on one side only, its own not among them), the `RANK_BEYOND` nearest on that side: the
        ranking then rests on more than one node count's runs, as it does between two."""
        out = []
        for n, at in self._sides((filesystem, op, klass, layout, unit), nodes, rpn, volume, RANK_BEYOND):
            import statistics       # here, not at import: an advice with no runs near the job needs none
            by: dict[float, list[float]] = {}
            for o in at:
                by.setdefault(o.stripes, []).append(o.value)
            vols = [o.volume for o in at if o.volume]
            out.append(Near(nodes=n, volume=statistics.median(vols) if vols else None,
                            measured=tuple((s, statistics.median(v), min(v), max(v), len(v))
                                           for s, v in sorted(by.items()))))
        return tuple(out)

    def standing(self, filesystem: str | None, op: str, klass: str, layout: str | None, unit: str, *,
                 nodes: float, rpn: float, volume: float | None, stripes: float) -> float | None:
        """How the runs near the job rank a stripe count against the others they measured: at each neighbouring
        node count that measured it, the median of its runs over the best count's median there; the geometric
        mean over those node counts (1.0: the best wherever measured). None where no run near the job measured
        this stripe count."""
        return standing_in(self.near(filesystem, op, klass, layout, unit, nodes=nodes, rpn=rpn, volume=volume),
                           stripes)

    def band(self, filesystem: str | None, op: str, klass: str, layout: str | None, unit: str, *, nodes: float,
             rpn: float, volume: float | None, stripes: float) -> Band | None:
        """The band the runs near the job allow (see the module docstring), or None where none is near."""
        key = (filesystem, op, klass, layout, unit)
        sides = self._sides(key, nodes, rpn, volume)
        if not sides:
            return None
        low, high, used, exact = _envelope(sides, nodes, stripes)
        here = [o.value for n, at in sides if n == nodes for o in at if o.stripes == (stripes if o.stripes else 0.0)
                and _same_volume(o.volume, volume)]
        noise = spread = run_noise = None
        if len(here) >= EXACT_RUNS:
            # measured at the job's own node and stripe count often enough: within one run's noise of their median
            import statistics
            med = statistics.median(here)
            low, high = max(low, med / EXACT_MARGIN), min(high, med * EXACT_MARGIN)
            noise = self._repeat_noise(key, rpn, nodes, here)
        if noise is None:
            # a job whose node count and volume the runs measured at other stripe counts is calibrated on runs
            # with their own setting left out; one whose node count and volume no run measured, on runs with
            # every stripe count of theirs left out
            seen = any(n == nodes and _same_volume(o.volume, volume) for n, at in sides for o in at)
            spread = self._spread(key, rpn, nodes, whole=not seen, floor=low > 0)
            run_noise = self._repeat_noise(key, rpn, nodes, None) if spread is not None else None
        return Band(low=low, high=high, n_runs=used, nodes=tuple(n for n, _ in sides), exact=exact, noise=noise,
                    spread=spread, run_noise=run_noise)

    def _spread(self, key: tuple, rpn: float, nodes: float, whole: bool, floor: bool) -> float | None:
        """How far outside its band a new run at the job's settings may fall, as a factor, where the band is not
        pinned by repetitions with a noise of their own: each of the family's runs within `REPEAT_SPAN` of the
        job's node count (at most `SPREAD_RUNS` of them, evenly spread) is given the band the family's other runs
        allow it, the runs at its own settings left out (with `whole`, those at its node count and volume at every
        stripe count: the job's situation where no run measured its node count and volume), and the factor by
        which it fell outside (1 inside; below a band without floor only its ceiling counts); the 90% conformal
        quantile of those factors, over the runs whose band had a floor where the job's has one (`floor`), over
        those whose band had none otherwise (a ceiling beyond the measured stripe counts misses more often). None
        where fewer than `REPEAT_RUNS` runs had such a band."""
        fam, pool = self._pool(key, rpn)
        if fam is None:
            return None
        at = (key, fam, nodes, whole, floor)
        if at not in self._spreads:
            self._spreads[at] = self._calibrate(key, fam, pool, nodes, whole, floor)
        return self._spreads[at]

    def _calibrate(self, key: tuple, fam: float, pool: list[_Obs], nodes: float, whole: bool,
                   floor: bool) -> float | None:
        """`_spread`, computed."""
        counts = {n for n in {o.nodes for o in pool} if abs(math.log(n / nodes)) <= math.log(REPEAT_SPAN) + 1e-9}
        by: dict[tuple, list[_Obs]] = {}
        for o in pool:
            if o.nodes in counts:
                by.setdefault((o.nodes, o.stripes, o.volume or 0.0), []).append(o)
        # in the order (node count, stripe count, volume, value), whatever order the runs were stored in
        near = [o for k in sorted(by) for o in sorted(by[k], key=lambda o: o.value)]
        if len(near) > SPREAD_RUNS:
            near = [near[int(i * len(near) / SPREAD_RUNS)] for i in range(SPREAD_RUNS)]
        outside = [k for k, f in filter(None, (self._outside(key, fam, pool, o, whole) for o in near)) if f == floor]
        return _conformal(outside) if len(outside) >= REPEAT_RUNS else None

    def _outside(self, key: tuple, fam: float, pool: list[_Obs], o: _Obs, whole: bool) -> tuple[float, bool] | None:
        """(the factor by which run `o` of a family (`pool`) fell outside the band its family's runs at other
        settings allow it, whether that band has a floor) (see `_spread`); None where they allow none."""
        # the band is read at the run's own stripe count, `whole` or not: one per setting and way of leaving out
        setting = (key, fam, o.nodes, o.stripes, o.volume, whole)
        if setting not in self._bands:
            if (key, fam) not in self._extremes:
                self._extremes[(key, fam)] = _extremes(pool)
            rest = [x for x in self._extremes[(key, fam)] if not (
                x.nodes == o.nodes and (whole or x.stripes == o.stripes) and _same_volume(x.volume, o.volume))]
            sides = _near(rest, o.nodes, o.volume)
            self._bands[setting] = _envelope(sides, o.nodes, o.stripes)[:2] if sides else None
        band = self._bands[setting]
        if band is None:
            return None
        low, high = band
        return max(1.0, o.value / high, low / o.value if low > 0 else 1.0), low > 0

    def _repeat_noise(self, key: tuple, rpn: float, nodes: float, here: list[float] | None) -> float | None:
        """How far a new run at the job's settings falls from the median of `here` (its runs there), in log, where
        the job's family repeated its settings near the job: each of the family's runs within `REPEAT_SPAN` of the
        job's node count that has `EXACT_RUNS` others at its own node count, stripe count and volume is compared
        with the median of those others (a median it did not enter), in units of their spread (`_scale`); the 90%
        conformal quantile of those standardized deviations, times the spread of `here`. Settings repeat tightly
        or widely (ARCHER's reads), so each is given its own noise, not the family's. With `here` None (the job has
        no runs of its own), the 90% conformal quantile of those runs' deviations themselves. None where fewer than
        `REPEAT_RUNS` such runs."""
        fam, pool = self._pool(key, rpn)
        if fam is None:
            return None
        near = self._near_noise(key, fam, pool, nodes)
        if near is None:
            return None
        q, pooled, raw = near
        if here is None:
            # no runs of the job's own: how far one run of the family near it fell from the median of its others
            return raw
        import statistics
        logs = [math.log(x) for x in here]
        return q * _scale(statistics.variance(logs), len(logs) - 1, pooled) if q else 0.0

    def _near_noise(self, key: tuple, fam: float, pool: list[_Obs], nodes: float) -> tuple[float, float, float] | None:
        """(the 90% conformal quantile of the standardized deviations, the pooled variance, the 90% quantile of the
        raw deviations) of the family's repetitions within `REPEAT_SPAN` of `nodes` (`_repeat_noise`), once per
        node count; None where fewer than `REPEAT_RUNS`."""
        at = (key, fam, nodes)
        if at not in self._noise:
            if (key, fam) not in self._repeats:
                self._repeats[(key, fam)] = _repeat_residuals(pool)
            res = [x[1:] for x in self._repeats[(key, fam)]
                   if abs(math.log(x[0] / nodes)) <= math.log(REPEAT_SPAN) + 1e-9]
            self._noise[at] = None
            if len(res) >= REPEAT_RUNS:
                pooled = sum(k * v for _, v, k in res) / sum(k for _, v, k in res)
                # a new run exceeds the k-th smallest of n exchangeable residuals with probability 1 - k / (n + 1)
                q = _conformal([_standardized(d, _scale(v, k, pooled)) for d, v, k in res])
                self._noise[at] = (q, pooled, _conformal([d for d, _, _ in res]))
        return self._noise[at]

    def measured_peak(self, filesystem: str | None, op: str, unit: str, nodes: float) -> float | None:
        """The largest value runs of the group measured, those at fewer nodes scaled linearly to `nodes`."""
        at = (filesystem, op, unit, nodes)
        if at not in self._peaks:          # asked once per candidate: the same few node counts each time
            pts = self._peak_points((filesystem, op, unit))
            self._peaks[at] = None if not pts or not nodes or not math.isfinite(nodes) else MARGIN * max(
                v * max(1.0, nodes / n) if math.isfinite(n) else v for n, v in pts)
        return self._peaks[at]


class Bounds(NamedTuple):
    """What a prediction may not leave: `floor`-`ceiling`, what sets each, and the runs of the band."""

    floor: float = 0.0
    ceiling: float = INF
    floor_by: str | None = None
    ceiling_by: str | None = None
    band_runs: int = 0
    cap: float = INF            # the physical ceiling alone (rated and measured peaks), which intervals respect too
    noise: float | None = None  # the band pinned the value to a median: how far one run falls from it (`Band`)
    spread: float | None = None  # otherwise: how far outside such a band runs near the job fell, a factor (`Band`)
    run_noise: float | None = None  # ... and one run's noise there, which the interval never undercuts (`Band`)

    def interval(self, v: float, low: float, high: float) -> tuple[float, float]:
        """A model's interval around the bounded value `v`: under the physical ceiling, and holding `v`.
        Where the band pinned `v` to the median of runs at the job's settings and the family's repetitions near
        the job say how far one run falls from such a median (`noise`, log), the interval is that: v / e^noise to
        v x e^noise, in place of the model's. Otherwise, where the family near the job says how far runs fell
        outside bands like this one (`spread`), the model's interval is cut to the band widened by that factor,
        floor / spread to ceiling x spread (no cut below a band without floor), but never inside v x/÷ e^run_noise,
        one run's noise around the value."""
        if self.noise is not None:
            low, high = v / math.exp(self.noise), v * math.exp(self.noise)
        elif self.spread is not None:
            e = math.exp(self.run_noise or 0.0)
            low = max(low, min(self.floor / self.spread, v / e)) if self.floor > 0 else low
            high = min(high, max(self.ceiling * self.spread, v * e))
        return min(low, v), max(min(high, self.cap), v)

    def clamp(self, v: float) -> float:
        return min(max(v, self.floor), self.ceiling)

    def by(self, model: float) -> str | None:
        """What moved a model's value, or None where it lies inside."""
        return self.ceiling_by if model > self.ceiling else self.floor_by if model < self.floor else None


def bounds(ev: "Evidence | None", filesystem: str | None, op: str, klass: str, layout: str | None, unit: str,
           bandwidth: bool, *, nodes: float, rpn: float, volume: float | None, stripes: float,
           rated: float | None = None) -> Bounds:
    """The band of the runs near the job, under the largest bandwidth measured (scaled to the job's nodes) and
    the rated peak (MiB/s, from the center file): the bounds the advice and its validation put on a value."""
    lows, highs = [(0.0, None)], [(INF, None)]
    band = ev.band(filesystem, op, klass, layout, unit, nodes=nodes, rpn=rpn, volume=volume,
                   stripes=stripes) if ev is not None else None
    if band is not None:
        lows.append((band.low, "runs"))
        highs.append((band.high, "runs"))
    if bandwidth:
        peak = ev.measured_peak(filesystem, op, unit, nodes) if ev is not None else None
        if peak is not None:
            highs.append((peak, "measured peak"))
        if rated:
            highs.append((rated, "rated peak"))
    hi, hi_by = min(highs, key=lambda x: x[0])
    lo, lo_by = max(lows, key=lambda x: x[0])
    return Bounds(floor=min(lo, hi), ceiling=hi, floor_by=lo_by, ceiling_by=hi_by,
                  band_runs=band.n_runs if band else 0, cap=min(x for x, by in highs if by != "runs"),
                  noise=band.noise if band is not None else None, spread=band.spread if band is not None else None,
                  run_noise=band.run_noise if band is not None else None)


def _near(pool: list[_Obs], nodes: float, volume: float | None, beyond: int = 1) -> list[tuple[float, list[_Obs]]]:
    """Per neighbouring node count of `nodes` (the nearest on either side within `NODE_SPAN`), the runs of `pool`
    (one family) there at the volume per rank nearest `volume`; node counts whose runs all lie `VOLUME_FAR` from
    it are not near. Where the runs lie on one side only and none at `nodes`, the `beyond` nearest on that side."""
    if volume:
        pool = [o for o in pool if o.volume is None or abs(math.log(o.volume / volume)) <= math.log(VOLUME_FAR)]
    counts = sorted({o.nodes for o in pool})
    below = [n for n in counts if n <= nodes and nodes / n <= NODE_SPAN + 1e-9]
    above = [n for n in counts if n >= nodes and n / nodes <= NODE_SPAN + 1e-9]
    picked = {x for x in (below[-1] if below else None, above[0] if above else None) if x is not None}
    if bool(below) != bool(above) and nodes not in picked:
        picked = set(below[-beyond:] if below else above[:beyond])
    out = []
    for n in sorted(picked):
        at = [o for o in pool if o.nodes == n]
        vols = [o.volume for o in at if o.volume]
        if volume and vols:
            near = min(vols, key=lambda v: abs(math.log(v / volume)))
            at = [o for o in at if o.volume is None or abs(math.log(o.volume / near)) <= math.log(VOLUME_SPAN)]
        out.append((n, at))
    return out


def _extremes(pool: list[_Obs]) -> list[_Obs]:
    """The lowest and the highest run of each setting (node count, stripe count, volume) of `pool`: all a band
    (`_near`, `_envelope`) reads of it, so that a family's bands cost its settings, not its runs."""
    by: dict[tuple, list[_Obs]] = {}
    for o in pool:
        by.setdefault((o.nodes, o.stripes, o.volume), []).append(o)
    return [x for same in by.values() for x in {min(same, key=lambda o: o.value), max(same, key=lambda o: o.value)}]


def _envelope(sides: list[tuple[float, list[_Obs]]], nodes: float, stripes: float) -> tuple[float, float, int, bool]:
    """(low, high, runs used, measured at the job's node and stripe count) of the band `sides` (`_near`) allow a
    stripe count at `nodes`: the envelope of their ranges (one side's scaled by the node ratio), widened by
    `MARGIN`."""
    ranges, used = [], 0
    for n, at in sides:
        lo, hi, exact = _range_at(at, stripes)
        scale = nodes / n if len(sides) == 1 else 1.0
        ranges.append((lo * min(scale, 1.0), hi * max(scale, 1.0), exact and n == nodes))
        used += len(at)
    return (min(r[0] for r in ranges) / MARGIN, max(r[1] for r in ranges) * MARGIN, used, any(r[2] for r in ranges))


def _repeat_residuals(pool: list[_Obs]) -> list[tuple[float, float, float, int]]:
    """(node count, |log(value / median of the others)|, variance of the others' logs, its degrees of freedom) of
    each run of `pool` (one family) with at least `EXACT_RUNS` other runs at its node count, stripe count and
    volume (within `EXACT_MARGIN_VOLUME`). In n log n: each volume's runs share the sorted logs of their window,
    from which one run's own is taken out by its position."""
    by: dict[tuple, dict[float | None, list[float]]] = {}
    for o in pool:
        by.setdefault((o.nodes, o.stripes, o.volume is None), {}).setdefault(o.volume, []).append(math.log(o.value))
    out = []
    for (nodes, _, _), vols in by.items():
        for v, own in vols.items():
            window = sorted(x for w, logs in vols.items() if _same_volume(w, v) for x in logs)
            m = len(window)
            if m - 1 < EXACT_RUNS:
                continue
            mean = sum(window) / m
            s1, s2 = sum(x - mean for x in window), sum((x - mean) ** 2 for x in window)
            for x in own:
                d = x - mean
                var = (s2 - d * d - (s1 - d) ** 2 / (m - 1)) / (m - 2)
                out.append((nodes, abs(x - _median_without(window, bisect.bisect_left(window, x))), max(var, 0.0),
                            m - 2))
    return out


def _median_without(xs: list[float], i: int) -> float:
    """The median of sorted `xs` without its `i`-th element."""
    k = len(xs) - 1
    at = lambda j: xs[j] if j < i else xs[j + 1]      # noqa: E731  the j-th of the others
    return at(k // 2) if k % 2 else (at(k // 2 - 1) + at(k // 2)) / 2


def _same_volume(a: float | None, b: float | None) -> bool:
    """Whether two volumes per rank count as the same setting: within `EXACT_MARGIN_VOLUME`, or both unknown."""
    if a is None or b is None:
        return a is None and b is None
    return abs(math.log(a / b)) <= math.log(EXACT_MARGIN_VOLUME)


def _scale(var: float, dof: int, pooled: float) -> float:
    """The log spread of one run at a setting from the variance of its runs' logs there (`dof` degrees of
    freedom) and the family's pooled variance near the job, weighted as `PRIOR_DOF` degrees of freedom: three or
    four repetitions alone say little of their spread (their variance may come out near zero)."""
    return math.sqrt((dof * var + PRIOR_DOF * pooled) / (dof + PRIOR_DOF))


def _conformal(xs: list[float]) -> float:
    """The 90% conformal quantile of `xs`: the ceil(0.9 (n + 1))-th smallest (the largest for n < 9)."""
    xs = sorted(xs)
    return xs[min(math.ceil(0.9 * (len(xs) + 1)), len(xs)) - 1]


def _standardized(d: float, s: float) -> float:
    return d / s if s > 0 else (0.0 if d == 0 else INF)


def _range_at(obs: list[_Obs], stripes: float) -> tuple[float, float, bool]:
    """(lowest, highest, measured exactly) value the runs at one node count give at a stripe count."""
    by: dict[float, list[float]] = {}
    for o in obs:
        by.setdefault(o.stripes, []).append(o.value)
    xs = sorted(by)
    s = stripes if xs[0] > 0 else 0.0
    if s in by:
        return min(by[s]), max(by[s]), True
    if s <= xs[0] or s >= xs[-1]:
        # beyond the measured counts no gain over the nearest one is claimed, and no floor is known (fewer
        # stripes take fewer OSTs; more may fall off a cliff). A ceiling scaled linearly in stripes above the
        # most measured count predicted hidden layouts better but advised shared files that file per process
        # beat 3-4x: a gain the runs did not measure is not claimed
        return 0.0, max(by[xs[0] if s <= xs[0] else xs[-1]]), False
    a = max(x for x in xs if x < s)
    b = min(x for x in xs if x > s)
    return (_log_interp(s, a, b, min(by[a]), min(by[b])), _log_interp(s, a, b, max(by[a]), max(by[b])), False)


__all__ = ["Band", "Bounds", "Evidence", "MARGIN", "bounds"]
