"""The advice engine: a workload's candidates predicted from the system's fits, bounded by the runs near the job
and the center's ceilings, ranked, and the best few explained with the runs they rest on (`advise`)."""
from __future__ import annotations

from ..frozen import NamedTuple, replace
from ..model.run import norm_api
from ..model.types import Advice, Center, Config, Workload
from ..predict import Fit
from ..predict.evidence import bounds, standing_in
from .candidates import (Candidate, baseline_config, candidate_point, check_workload, checked_pins,
                         default_filesystem, default_stripes_on, pinned_candidates, visible_settings)
from .policy import Decision, Weighed, cmp_applies, decide

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

METADATA_OPS = ("file_create", "open_create")


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


def _predict(c: Candidate, w: Workload, fits: Mapping, system: str) -> None:
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


def _bound(c: Candidate, w: Workload, ev: Any) -> None:
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
        c.near = ev.near(*key, nodes=float(w.nodes), rpn=float(w.ranks_per_node),
                         volume=float(w.bytes_per_rank) or None)
        c.standing = (key, standing_in(c.near, p.stripes if p.striped and p.stripes else 0.0))


def _mark_unmeasured(cands: list[Candidate], ev: Any) -> None:
    """Measure first: where runs measured some mode (API class and layout) of the job's op on a file system, a
    candidate of a mode none of them measured in the job's family (ranks per node within a factor of 2) is not
    predicted (its number would be the model's guess only) and not recommended over a measured one; the answer
    names the runs that would settle it instead."""
    if ev is None:
        return
    measured_any: dict[tuple, bool] = {}       # per (file system, op, unit): the candidates share a few
    for c in cands:
        if c.value is None or c.fit is None or c.point is None:
            continue
        f = c.fit
        group = (f.filesystem, f.op, f.unit)
        if group not in measured_any:
            measured_any[group] = bool(ev.modes(*group))
        if not measured_any[group]:
            continue
        rpn = c.point.ranks / c.point.clients
        if not ev.measured(f.filesystem, f.op, c.point.klass, c.config.layout, f.unit, rpn=rpn):
            c.unmeasured = _mode_words(c.config)
            c.value = None


def _mode_words(cfg: Config) -> str:
    mode = "" if cfg.collective is None else ("collective " if cfg.collective else "independent ")
    return f"{mode}{cfg.api} {cfg.layout}-file I/O on {cfg.filesystem}"


def _assess(cands: list[Candidate], w: Workload, fits: Any, system: str, ev: Any) -> None:
    """Predict and bound each candidate; mark the unmeasured ones when any is measured."""
    for c in cands:
        _predict(c, w, fits, system)
        _bound(c, w, ev)
    if any(c.value is not None and c.fit is not None and c.point is not None and
           ev.measured(c.fit.filesystem, c.fit.op, c.point.klass, c.config.layout, c.fit.unit,
                       rpn=c.point.ranks / c.point.clients)
           for c in cands if ev is not None):
        _mark_unmeasured(cands, ev)


def weighed(c: Candidate) -> Weighed:
    """A candidate as the decision sees it (policy)."""
    p = c.point
    return Weighed(config=c.config, place=c.place, tier=c.tier, value=c.value,
                   stripes_measured=tuple(c.fit.stripes_measured) if c.fit else (),
                   bandwidth=c.fit is None or c.fit.kind == "bandwidth", standing=c.standing, near=c.near,
                   stripes=(p.stripes if p.striped and p.stripes else 0.0) if p is not None else None)


class Assessed(NamedTuple):
    """The options weighed for a job, predicted, and the decision among them."""

    workload: Workload
    center: Center
    system: str
    candidates: tuple[Candidate, ...]
    decision: Decision
    base_config: Config
    pins: Mapping[str, Any]

    @property
    def chosen(self) -> Candidate:
        return self.candidates[self.decision.choice]


def assess(workload: Workload, center: Center, system: str, fits: Mapping, ev: Any,
           comparisons: list[dict[str, Any]], pins: Mapping[str, Any] | None = None) -> Assessed:
    """The decision for `workload` on `center` from a system's fits, the evidence index of its runs and its
    published comparisons: the one function behind `advise` and the sweep validation (`kb validate --sweeps`)."""
    check_workload(workload)
    w = replace(workload, api=norm_api(workload.api) or "POSIX")
    pins = checked_pins(pins, w, center)
    base_cfg = baseline_config(w, center)
    cands = pinned_candidates(w, center, pins, base_cfg)
    _assess(cands, w, fits, system, ev if fits else None)

    def draws(i: int) -> list[float]:
        c = cands[i]
        if not c.draws and c.fit is not None and c.point is not None:
            c.draws = c.bounded(c.fit.draws(c.point))
        return c.draws

    dec = decide(w, [weighed(c) for c in cands], base_cfg, comparisons, draws,
                 pinned_stripes=bool(pins.get("stripe_count")),
                 defaults={fs.name: default_stripes_on(fs) for fs in center.filesystems})
    return Assessed(w, center, system, tuple(cands), dec, base_cfg, pins)


def _baseline(a: Assessed, fits: Any, ev: Any, comparisons: list[dict[str, Any]]) -> tuple[Candidate, tuple]:
    """The baseline, predicted the same way as the candidates, and the published comparisons that apply to it."""
    w, center, base_cfg = a.workload, a.center, a.base_config
    base = Candidate(base_cfg, center.filesystem(base_cfg.filesystem) or default_filesystem(center), None)
    _predict(base, w, fits, a.system)
    _bound(base, w, ev if fits else None)
    if any(c.unmeasured for c in a.candidates):
        _mark_unmeasured([base], ev)
    applied = tuple({**cmp, "_sign": s} for cmp in comparisons if (s := cmp_applies(cmp, w, base_cfg, base.place)))
    return base, applied


def _set_intervals(shown: list[Candidate]) -> None:
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
    if center is None:
        center = resolve_center(system, None, kb)
    # the system as the KB spells it: a center file naming it in another case advises as --system does
    system = next((s for s in kb.systems() if s.lower() == center.name.lower()), center.name)
    fits = system_fits(kb, system, center)
    comparisons = kb.comparisons(system)
    ev = system_evidence(kb, system, center) if fits else None
    a = assess(workload, center, system, fits, ev, comparisons, pins)
    w, dec, cands = a.workload, a.decision, a.candidates
    order = [cands[i] for i in dec.order]
    rec = order[0]
    base, base_applied = _baseline(a, fits, ev, comparisons)
    alts = _alternatives(order[1:], rec, a.base_config)
    _set_intervals([rec, base] + alts)
    from .explain import build_option, decision_words, warnings_for
    applied = {id(cands[i]): dec.applied[i] for i in range(len(cands))}
    applied[id(base)] = base_applied
    evidence_runs = _evidence_runs(kb, [rec, base] + alts)
    words = decision_words(dec, cands, w)
    deciding = _deciding(kb, rec, w)
    options = [build_option(c, w, center, base, rec, evidence_runs, has_numbers=bool(fits),
                            applied=applied.get(id(c), ()), decision=words if c is rec else None,
                            deciding=deciding if c is rec else None)
               for c in [rec, base] + alts]
    predicted = [c for i, c in enumerate(cands) if c.value is not None and i not in dec.dropped]
    advice = Advice(system=system, workload=w, recommendation=options[0], baseline=options[1],
                    alternatives=tuple(options[2:]),
                    warnings=tuple(warnings_for(w, center, fits, predicted, rec, list(cands))))
    # pinned advice is set beside the unpinned best
    from .explain import finalize
    unpinned = None
    if a.pins:
        try:
            unpinned = advise(workload, kb, center)
        except Exception:      # the unpinned question may have no answer; the pinned one still stands
            unpinned = None
    return finalize(advice, center, a.pins, unpinned, _data_rate(rec, w, fits, system, ev))


def _data_rate(rec: Candidate, w: Workload, fits: Any, system: str, ev: Any) -> tuple[float, str] | None:
    """For a small-file job (its creates predicted as a metadata rate): the bandwidth the recommendation's place is
    predicted to give its data with one file per rank, (MiB/s value, unit); None where nothing predicts it."""
    if not w.metadata_heavy or not fits:
        return None
    c = Candidate(rec.config, rec.place, rec.tier)
    data = replace(w, files_per_rank=1, files_created=None)
    _predict(c, data, fits, system)
    _bound(c, data, ev)
    return (c.value, c.fit.unit) if c.value and c.fit is not None and c.fit.unit == "MiB/s" else None


def _alternatives(order: list[Candidate], rec: Candidate, base: Config | None = None, n: int = 4) -> list[Candidate]:
    """The next best few: first one per different kind of choice (place, layout, collective mode), then other
    stripe settings, so the runners-up show what else was weighed. Predicted options come first; none repeats
    what the user sees of the recommendation or of the default `base` (its own row)."""
    out: list[Candidate] = []
    seen = {visible_settings(rec.config)} | ({visible_settings(base)} if base is not None else set())
    pools = [order]
    if rec.value is not None:
        pools = [[c for c in order if c.value is not None], order]
    for pool in pools:
        kinds = {visible_settings(rec.config)[:4]} | {visible_settings(c.config)[:4] for c in out}
        for by_kind in (True, False):
            for c in pool:
                k = visible_settings(c.config)
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


#: runs of an option's fit among which the evidence nearest the job is picked where no run near the job decided
#: (each read by id: in a cold advice from the 1M-run snapshot the 80 runs of 40 per option took 6.4 ms, the 200
#: of 100 per option 14 ms, timed in the process); the fit's first ones, the same whether the fit was just made or
#: read back from the KB
EVIDENCE_PER_OPTION = 40


def _evidence_runs(kb: Any, cands: list[Candidate], per_option: int = EVIDENCE_PER_OPTION) -> dict[str, Any]:
    """The runs of the options' fits (at most `per_option` each), for the evidence nearest the job."""
    from ..kb.fits import runs_by_ids
    ids: dict[str, None] = {}
    for c in cands:
        if c.fit:
            ids.update(dict.fromkeys(c.fit.run_ids[:per_option]))
    return runs_by_ids(kb, list(ids))


def _deciding(kb: Any, c: Candidate, w: Workload) -> Any:
    """The runs near the job that the option's decision read (explain.deciding_runs), among its fit's runs: the
    same at most 400 runs of its (file system, op) group that the evidence index was built from."""
    from ..kb.fits import runs_by_ids
    from .explain import Deciding, deciding_runs
    if not c.near or c.fit is None:
        return Deciding()
    runs = runs_by_ids(kb, list(c.fit.run_ids)).values()
    return deciding_runs(c, w, list(runs), c.place.ost_count, c.place.default_stripe_count)
