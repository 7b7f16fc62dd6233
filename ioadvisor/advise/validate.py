"""Leave-one-out validation of the performance model on the KB's measured runs."""
from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..kb import RunFilter
from ..predict import fit_all, group_runs, run_point
from . import TOLERANCE


def _ost_counts(system: str) -> tuple[dict, dict]:
    from ..center import find_center
    c = find_center(system)
    if c is None:
        return {}, {}
    return ({f.name: f.ost_count for f in c.filesystems}, {f.name: f.default_stripe_count for f in c.filesystems})


def _stats(errors: list[tuple[float, bool]], regrets: list[float]) -> dict[str, Any]:
    """Error figures of (|error|, extrapolated) pairs: all of them, and split by whether the left-out run's
    client count lay inside the client counts of the runs the model was fitted on."""
    import numpy as np

    def med(xs: list[float]) -> float | None:
        return float(np.median(xs)) if xs else None
    every = [e for e, _ in errors]
    inside = [e for e, x in errors if not x]
    outside = [e for e, x in errors if x]
    return {"n": len(every),
            "median_abs_error": med(every),
            "p90_abs_error": float(np.quantile(every, 0.9)) if every else None,
            "within_measured_clients": {"n": len(inside), "median_abs_error": med(inside)},
            "extrapolated_clients": {"n": len(outside), "median_abs_error": med(outside)},
            "regret_cases": len(regrets),
            "median_regret": float(np.median(regrets)) if regrets else None}


def validate(kb: Any, system: str | None = None) -> dict[str, Any]:
    """Per system and overall: median and p90 of |predicted/measured - 1| with each run left out of the fit (also
    split into runs inside and outside the client counts the remaining runs measured), and
    the median regret (best measured / measured value of the setting the model would pick) over groups of runs
    that measure several settings of one workload.

    Each left-out run is predicted the way the advice engine would predict it: from the fits of all the other
    runs of its system (`fit_all`, so groups that borrow a saturation point from sibling ops borrow it from the
    other runs only). A run that is the only one of its (file system, op) has no model once it is left out; the
    advice engine then gives no number, and it is counted per system as `not_predictable`, outside the error
    figures."""
    if system is not None:
        match = next((s for s in kb.systems() if s.lower() == system.lower()), None)
        if match is None:
            raise UsageError(f"no runs for system {system!r} (known: {', '.join(kb.systems())})")
        system = match
    runs = [r for r in kb.runs(RunFilter(system=system))
            if r.value and r.value > 0 and r.provenance.kind != "production"]   # as the fits: measured runs only
    by_sys: dict[str, list] = {}
    for r in runs:
        by_sys.setdefault(r.system, []).append(r)
    per_sys: dict[str, tuple[list[tuple[float, bool]], list[float]]] = {}
    unpredictable: dict[str, int] = {}
    for sysname, srs in sorted(by_sys.items()):
        osts, dflt = _ost_counts(sysname)
        errs, regrets = per_sys.setdefault(sysname, ([], []))
        unpredictable[sysname] = 0

        refits: dict[int, dict] = {}

        def fits_without(left: Any) -> dict:
            # the error and the regret loops leave out the same runs: fit each system without one run once
            if id(left) not in refits:
                refits[id(left)] = fit_all([x for x in srs if x is not left], osts, dflt)
            return refits[id(left)]

        for r in srs:
            fit = fits_without(r).get((sysname, r.filesystem, r.op))
            if fit is None or fit.unit != r.unit:
                unpredictable[sysname] += 1
                continue
            point = run_point(r, osts.get(r.filesystem), dflt.get(r.filesystem))
            errs.append((abs(fit.predict(point) / r.value - 1), fit.extrapolates(point)))
        # regret: runs of one workload (same clients and ranks) measuring different settings
        for (_, fs, op), rs in group_runs(srs).items():
            workloads: dict[tuple, list] = {}
            for r in rs:
                workloads.setdefault((r.nodes, r.ranks, r.transfer_size), []).append(r)
            for members in workloads.values():
                settings = {(m.layout, m.stripe_count, m.api, m.collective) for m in members}
                if len(settings) < 2:
                    continue
                best = max(m.value for m in members)
                for left in members:
                    fit = fits_without(left).get((sysname, fs, op))
                    if fit is None:
                        continue
                    preds = [fit.predict(run_point(m, osts.get(fs), dflt.get(fs))) for m in members]
                    top = max(preds)
                    near = [m for m, p in zip(members, preds) if p >= top * (1 - TOLERANCE)]
                    pick = min(near, key=lambda m: m.stripe_count or 0)   # the cheapest, as the advisor picks
                    regrets.append(best / pick.value)
    out = {"systems": {s: {**_stats(e, g), "not_predictable": unpredictable[s]} for s, (e, g) in
                       sorted(per_sys.items())},
           "skipped_runs": sum(unpredictable.values())}
    all_e = [x for e, _ in per_sys.values() for x in e]
    all_g = [x for _, g in per_sys.values() for x in g]
    out["overall"] = {**_stats(all_e, all_g), "not_predictable": out["skipped_runs"]}
    return out
