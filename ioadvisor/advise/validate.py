"""Validation of the performance model on the KB's measured runs.

Two protocols, both predicting the way the advice engine does (`fit_all` over a system's other runs; a fit made
before on the same runs is read from the user's cache, `fits.fit_all_cached`):

- `validate`: each run held out (leave-one-out; k-fold with `FOLDS` folds for systems of more than `LOO_MAX`
  runs, so the cost grows with the runs, not their square): median and p90 of |predicted/measured - 1|, split by
  whether the held-out run lies inside the client counts the model was fitted on, and the 90% interval's coverage;
- `sweep_validate`: every group of runs that differ only in stripe count (or only in layout, or only in collective
  mode) is hidden whole, the system refitted without it, and the advice for the sweep's job asked of the function
  `ioadvise advise` calls (`engine.assess`, which decides through `policy.decide`): regret = best measured /
  measured at the advised setting (stripe counts between measured ones log-interpolated), next to the baselines
  "always 1 stripe", "always all OSTs", the size table diagnose uses and the nearest-measured rule (no model: the
  count best at the nearest measured node count, `nearest_measured`), in the same run.
"""
from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Iterator, Sequence

from ..errors import UsageError
from ..kb import RunFilter
from ..kb import fits as kb_fits, queries
from ..lustre import every_ost
from ..model.run import bytes_moved
from ..predict import Fit, io_class, run_point
from .fits import fit_all_cached
from ..predict.evidence import EXACT_RUNS, FAMILY_SPAN, MARGIN, REPEAT_RUNS, REPEAT_SPAN, Bounds, Evidence, bounds
from ..predict.physical import INF, Z90

LOO_MAX = 60
FOLDS = 10
# A system of more than SAMPLE_ABOVE runs is validated on a bounded sample, so that the cost does not grow with its
# runs (a fit costs in proportion to its runs): HOLDOUT_PER_GROUP runs per (file system, op) held out, evenly spread
# in import order, predicted from one fit on FIT_PER_GROUP of the others per (file system, op), evenly spread, and
# the sweep regret from at most SAMPLED_SWEEPS stripe-count sweeps of that fitted sample.
SAMPLE_ABOVE = 2000
HOLDOUT_PER_GROUP = 50
FIT_PER_GROUP = 200
SAMPLED_SWEEPS = 2
SWEEP_FACTORS = ("stripe_count", "layout", "collective")
# a hidden stripe sweep the fit predicts more than this much faster at its runs' volume than cold (one run's noise,
# `MARGIN`) measured mostly the servers' cache; its regret is reported apart as well (`cold_sweeps`)
WARM_SPEEDUP = MARGIN
# held-out runs reported apart (`--sweeps`): those with at least SAME_SETTINGS_RUNS other runs at exactly their
# settings (the error where the KB has measured the job: as many as pin a band to their median), and those with
# at least DENSE_FAMILY_RUNS runs of their family within DENSE_SPAN of their node count (the interval's width and
# coverage where the KB is dense: where the repetitions' own noise sets the interval)
SAME_SETTINGS_RUNS = EXACT_RUNS
DENSE_FAMILY_RUNS = REPEAT_RUNS
DENSE_SPAN = REPEAT_SPAN


def _center_info(kb: Any, system: str) -> tuple[Any, dict, dict]:
    """(the center `ioadvise advise --system` resolves for `system`, or None; its OST counts; its default stripe
    counts), as the advice fits them."""
    from ..center import resolve_center
    try:
        c = resolve_center(system, None, kb)
    except UsageError:
        return None, {}, {}
    return (c, {f.name: f.ost_count for f in c.filesystems}, {f.name: f.default_stripe_count for f in c.filesystems})


def _measurable(runs: Iterable[Any]) -> list:
    # as the fits: measured runs only, none flagged as cache-sized or above the peak
    return [r for r in runs if r.value and r.value > 0 and math.isfinite(r.value)
            and r.provenance.kind != "production" and not r.flags]


def _stable(runs: list) -> list:
    runs.sort(key=lambda r: (r.id or "", r.op, r.value))      # an order independent of what else the KB holds
    return runs


def _system_sizes(kb: Any, system: str | None) -> dict[str, int]:
    """Runs per system (the name as stored), of `system` only (any case) when given."""
    if system is not None:
        match = next((s for s in kb.systems() if s.lower() == system.lower()), None)
        if match is None:
            raise UsageError(f"no runs for system {system!r} (known: {', '.join(kb.systems())})")
    sizes: dict[str, int] = {}
    # from the per-system summary the KB keeps current as runs change (not a count over every run)
    for db in ("main", "ref") if kb.reference else ("main",):
        for name, n in queries.system_sizes(kb, db, system):
            sizes[name] = sizes.get(name, 0) + n
    return sizes


def _system_runs(kb: Any, sysname: str) -> list:
    """Every measured run of the system named exactly `sysname`, in a stable order."""
    return _stable(_measurable(r for r in kb.runs(RunFilter(system=sysname)) if r.system == sysname))


def per_system(kb: Any, work: Any, systems: list[tuple[str, int]], workers: int | None = None) -> list:
    """`[work(kb, name, n) for name, n in systems]`, the systems shared out among `workers` processes (default:
    the cores this process may use) where there are several and a child can open the KB again
    (`archive.pool.kb_items`): each system's validation is a function of its own runs only, so the results, put
    back in `systems`' order, are the same however they were shared out. The fits they make go to the cache by
    content from each process, each file written whole under its own temporary name."""
    from ..archive.pool import kb_items
    # the costliest first, so that no worker is left with a long one at the end: the exhaustive protocol refits
    # a system once per run or fold; a sampled system costs about the same whatever its size
    order = sorted(systems, key=lambda s: (s[1] > SAMPLE_ABOVE, -s[1], s[0]))
    done = dict(kb_items(kb, work, order, workers, what="validating system"))
    return [done[s] for s in systems]


def _sample(kb: Any, sysname: str) -> tuple[list, list]:
    """(fitted, held out) runs of a large system (see SAMPLE_ABOVE), each in a stable order. Only row ids are read
    for the whole system; full rows for the chosen runs."""
    from array import array
    groups: dict[tuple, array] = {}
    for db, sign in (("main", 1),) + ((("ref", -1),) if kb.reference else ()):
        # runs that are not measured (flagged, no value) are dropped once read, so the sample is drawn over every
        # run of the system
        for fs, op, rowid in kb_fits.validation_rowids(kb, db, sysname):
            g = groups.get((fs, op))
            if g is None:
                g = groups[(fs, op)] = array("q")
            g.append(sign * rowid)
    fitted: list[int] = []
    held: list[int] = []
    for g in groups.values():
        h = min(HOLDOUT_PER_GROUP, len(g) // 5)
        out = {int((i + 0.5) * len(g) / h) for i in range(h)} if h else set()
        held += [g[i] for i in sorted(out)]
        rest = [k for i, k in enumerate(g) if i not in out] if out else list(g)
        if len(rest) > FIT_PER_GROUP:
            step = len(rest) / FIT_PER_GROUP
            rest = [rest[int(i * step)] for i in range(FIT_PER_GROUP)]
        fitted += rest
    rows: dict[int, Any] = {}
    for db, sign in (("main", 1), ("ref", -1)):
        for rowid, run in kb_fits.runs_at_rowids(kb, db, [sign * k for k in fitted + held if k * sign > 0]):
            rows[sign * rowid] = run
    return (_stable(_measurable(rows[k] for k in fitted if k in rows)),
            _stable(_measurable(rows[k] for k in held if k in rows)))


def _q(xs: Sequence[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _err_stats(errors: list[tuple], detail: bool = False) -> dict[str, Any]:
    """(|error|, extrapolated, covered, op, runs at the same settings, runs of the family near, interval width)
    tuples -> figures; with `detail` also those at measured settings and where the family's runs are dense."""
    every = [e[0] for e in errors]
    inside = [e[0] for e in errors if not e[1]]
    outside = [e[0] for e in errors if e[1]]
    writes = [e[0] for e in errors if e[3] == "write"]
    med = lambda xs: statistics.median(xs) if xs else None   # noqa: E731
    out = {"n": len(every), "median_abs_error": med(every), "p90_abs_error": _q(every, 0.9),
           "median_abs_error_writes": med(writes),
           "within_measured_clients": {"n": len(inside), "median_abs_error": med(inside)},
           "extrapolated_clients": {"n": len(outside), "median_abs_error": med(outside)},
           "coverage_90": (sum(1 for e in errors if e[2]) / len(errors)) if errors else None}
    if detail:
        same = [e[0] for e in errors if e[4] >= SAME_SETTINGS_RUNS]
        dense = [e for e in errors if e[5] >= DENSE_FAMILY_RUNS]
        widths = [e[6] for e in dense]
        out["at_measured_settings"] = {"n": len(same), "median_abs_error": med(same)}
        out["dense_family"] = {"n": len(dense), "median_width": med(widths), "p90_width": _q(widths, 0.9),
                               "max_width": max(widths) if widths else None,
                               "coverage_90": sum(1 for e in dense if e[2]) / len(dense) if dense else None}
    return out


def _exact_key(r: Any) -> tuple:
    """Every setting of a run (its repetitions share it)."""
    return (r.filesystem, r.op, r.api, r.layout, r.collective, r.stripe_count, r.nodes, r.ranks, r.transfer_size,
            r.block_size, r.stripe_size, r.unit)


def _family_key(r: Any) -> tuple:
    return (r.filesystem, r.op, io_class(r.api, r.collective), r.layout, r.unit)


class _Neighbours:
    """How many runs of a training set share a run's exact settings, and how many of its family (same file system,
    op, API class, layout and unit, ranks per node within `FAMILY_SPAN`) lie within `DENSE_SPAN` of its node
    count: the conditions under which the validation reports the error and the interval width apart."""

    def __init__(self, train: Iterable[Any]):
        self.same: dict[tuple, int] = {}
        self.family: dict[tuple, list[tuple[float, float]]] = {}
        for r in train:
            k = _exact_key(r)
            self.same[k] = self.same.get(k, 0) + 1
            if r.nodes:
                self.family.setdefault(_family_key(r), []).append((float(r.nodes), (r.ranks or r.nodes) / r.nodes))

    def of(self, r: Any) -> tuple[int, int]:
        if not r.nodes:
            return self.same.get(_exact_key(r), 0), 0
        rpn = (r.ranks or r.nodes) / r.nodes
        near = sum(1 for n, q in self.family.get(_family_key(r), ())
                   if abs(math.log(n / r.nodes)) <= math.log(DENSE_SPAN) + 1e-9
                   and abs(math.log(q / rpn)) <= math.log(FAMILY_SPAN) + 1e-9)
        return self.same.get(_exact_key(r), 0), near


def _folds(n: int) -> list[list[int]]:
    k = n if n <= LOO_MAX else FOLDS
    return [list(range(i, n, k)) for i in range(k)]


def _bounds_of(ev: Evidence, r: Any, fit: Fit, p: Any) -> Bounds:
    """The bounds the advice puts on a prediction (predict.evidence) for run `r`'s settings at point `p`."""
    if not r.nodes or not math.isfinite(p.ranks):
        return Bounds()
    moved = bytes_moved(r)
    ranks = p.ranks
    return bounds(ev, r.filesystem, r.op, p.klass or "", r.layout, r.unit,
                  fit.kind == "bandwidth", nodes=float(r.nodes), rpn=ranks / r.nodes,
                  volume=moved / ranks if moved else None, stripes=p.stripes if p.striped and p.stripes else 0.0)


def _score_held(sysname: str, fits: dict, held: Iterable, osts: dict, dflt: dict,
                errs: list[tuple], ev: Evidence, near: _Neighbours) -> int:
    """Append the held-out runs' (|error|, extrapolated, covered, op, runs at the same settings, runs of the
    family near, 90% interval width high/low) to `errs`; the number without a model. Each is predicted as the
    advice predicts: the model's value within the bounds of the other runs."""
    unpredictable = 0
    for r in held:
        fit = fits.get((sysname, r.filesystem, r.op))
        if fit is None or fit.unit != r.unit:
            unpredictable += 1
            continue
        p = run_point(r, osts.get(r.filesystem), dflt.get(r.filesystem))
        b = _bounds_of(ev, r, fit, p)
        v = b.clamp(fit.predict(p))
        lo, hi = b.interval(v, *fit.interval(v, p))
        errs.append((abs(v / r.value - 1), fit.extrapolates(p), lo <= r.value <= hi, r.op, *near.of(r),
                     hi / lo if lo > 0 else INF))
    return unpredictable


def _predict_errors(sysname: str, runs: list, osts: dict, dflt: dict, memo: dict | None = None,
                    held_out: list | None = None) -> tuple[list, int]:
    """Held-out errors: each run of `runs` held out in turn (leave-one-out or k-fold), or, given `held_out` (a
    large system's sample), those runs predicted from one fit on `runs`."""
    errs: list[tuple] = []
    memo = {} if memo is None else memo
    if held_out is not None:
        fits = fit_all_cached(runs, osts, dflt, memo=memo)
        return errs, _score_held(sysname, fits, held_out, osts, dflt, errs, Evidence(runs, osts, dflt),
                                 _Neighbours(runs))
    unpredictable = 0
    for fold in _folds(len(runs)):
        held = set(fold)
        train = [r for i, r in enumerate(runs) if i not in held]
        fits = fit_all_cached(train, osts, dflt, memo=memo)
        unpredictable += _score_held(sysname, fits, (runs[i] for i in fold), osts, dflt, errs,
                                     Evidence(train, osts, dflt), _Neighbours(train))
    return errs, unpredictable


def _system_inputs(kb: Any, sysname: str, n: int) -> tuple[list, list | None, dict, Any, Any] | None:
    """What both validations start from for the system named `sysname`, of `n` runs: (runs to fit on, held-out
    runs or None for the exhaustive protocol, a note on the sample or {}, OST count, default configuration);
    None where it has no measured run."""
    if n > SAMPLE_ABOVE:
        fitted, held = _sample(kb, sysname)
        if not (fitted or held):
            return None
        got = (fitted, held, {"sampled": {"runs": n, "fitted_on": len(fitted), "held_out": len(held)}})
    else:
        runs = _system_runs(kb, sysname)
        if not runs:
            return None
        got = (runs, None, {})
    _, osts, dflt = _center_info(kb, sysname)
    return (*got, osts, dflt)


def _validate_system(kb: Any, sysname: str, n: int) -> tuple[dict, list, list[float]] | None:
    """One system's part of `validate`: (its entry, its held-out errors, its sweeps' regrets); None where the
    system has no measured run."""
    got = _system_inputs(kb, sysname, n)
    if got is None:
        return None
    srs, held, note, osts, dflt = got
    memo: dict = {}
    errs, unp = _predict_errors(sysname, srs, osts, dflt, memo, held)
    sweeps = _sweeps_of_system(kb, sysname, srs, factors=("stripe_count",), memo=memo,
                               limit=None if held is None else SAMPLED_SWEEPS)
    regrets = [c["regret"]["model"] for c in sweeps["cases"]]
    entry = {**_err_stats(errs), "not_predictable": unp, "regret_cases": len(regrets),
             "median_regret": statistics.median(regrets) if regrets else None, **note}
    return entry, errs, regrets


def validate(kb: Any, system: str | None = None, workers: int | None = None) -> dict[str, Any]:
    """Per system and overall: held-out prediction error and interval coverage (see the module docstring), plus
    the sweep-out regret (`sweep_validate`'s stripe-count figures). A run that is the only one of its (file
    system, op) has no model once held out; the advice engine then gives no number: counted as
    `not_predictable`, outside the error figures. Each system is validated on its own runs only, so the figures
    for one system are the same whether or not others are in the KB or the report. A system of more than
    SAMPLE_ABOVE runs is validated on a bounded sample (its entry says so under `sampled`). The systems are
    validated in `workers` processes (`per_system`)."""
    out: dict[str, Any] = {"systems": {}, "skipped_runs": 0}
    all_errs: list = []
    all_regrets: list[float] = []
    systems = sorted(_system_sizes(kb, system).items())
    for (sysname, _), got in zip(systems, per_system(kb, _validate_system, systems, workers)):
        if got is None:
            continue
        out["systems"][sysname], errs, regrets = got
        out["skipped_runs"] += out["systems"][sysname]["not_predictable"]
        all_errs += errs
        all_regrets += regrets
    out["overall"] = {**_err_stats(all_errs), "not_predictable": out["skipped_runs"],
                      "regret_cases": len(all_regrets),
                      "median_regret": statistics.median(all_regrets) if all_regrets else None}
    for s in list(out["systems"].values()) + [out["overall"]]:
        s["verdict"] = verdict(s)
    return out


def verdict(s: dict[str, Any]) -> str:
    """How far to trust a system's predictions, in plain words, from its held-out figures."""
    n, med, cov = s.get("n") or 0, s.get("median_abs_error"), s.get("coverage_90")
    if not n or med is None:
        return "no held-out predictions: too few runs to judge the model here"
    if n < 5:
        return f"only {n} held-out prediction(s): too few to judge; treat predictions as rough"
    level = ("good: most predictions within 15%" if med <= 0.15 else
             "fair: typical error 15-30%, about the run-to-run noise of a production file system" if med <= 0.30 else
             "poor: typical error above 30%; rankings may hold, values will not")
    cov_txt = "" if cov is None else (f"; 90% intervals held {100 * cov:.0f}% of held-out runs"
                                      + (" (too narrow)" if cov < 0.8 else " (too wide)" if cov > 0.97 else ""))
    return level + cov_txt


# ---- sweep-out validation --------------------------------------------------------------------------------------

def _settings_key(r: Any, factor: str) -> tuple:
    vals = {"fs": r.filesystem, "op": r.op, "api": r.api, "layout": r.layout, "collective": r.collective,
            "stripe_count": r.stripe_count, "nodes": r.nodes, "ranks": r.ranks, "transfer": r.transfer_size,
            "block": r.block_size, "stripe_size": r.stripe_size, "unit": r.unit}
    vals.pop(factor)
    return tuple(sorted(vals.items()))


def sweep_groups(runs: Iterable[Any], factor: str) -> list[list[Any]]:
    """Groups of runs that differ only in `factor` (and repetitions), with at least two values of it."""
    groups: dict[tuple, list] = {}
    for r in runs:
        v = getattr(r, factor)
        if v is None:
            continue
        groups.setdefault(_settings_key(r, factor), []).append(r)
    return [g for g in groups.values() if len({getattr(r, factor) for r in g}) >= 2]


def _interp(measured: dict[float, float], x: float) -> float:
    """Value at stripe count `x`, log-log interpolated between measured counts (clamped outside them)."""
    if x in measured:
        return measured[x]          # exactly, not through exp(log(v)): a regret at the measured best is 1.0
    xs = sorted(measured)
    if x <= xs[0]:
        return measured[xs[0]]
    if x >= xs[-1]:
        return measured[xs[-1]]
    for a, b in zip(xs, xs[1:]):
        if a <= x <= b:
            t = (math.log(x) - math.log(a)) / (math.log(b) - math.log(a))
            return math.exp((1 - t) * math.log(measured[a]) + t * math.log(measured[b]))
    return measured[xs[-1]]


def _size_table_count(r: Any, osts: int | None) -> int:
    """The stripe count of the size table diagnose uses (data/thresholds.toml, LUS001): by the shared file's
    size, capped by the OSTs and the ranks; one stripe per file for file per process."""
    from ..diagnose.rules import load_thresholds, stripe_count_for
    if r.layout != "shared":
        return 1
    ranks = r.ranks or r.nodes or 1
    size = (r.block_size or 0) * (r.segments or 1) * ranks
    n = stripe_count_for(size, load_thresholds()["LUS001"])
    return max(1, min(n, osts or n, ranks))


def _medians(group: list, factor: str, osts: int | None) -> dict[Any, float]:
    """Median value per setting of `factor` in a sweep (a stripe count of -1: every OST)."""
    by_val: dict[Any, list[float]] = {}
    for r in group:
        v = getattr(r, factor)
        if factor == "stripe_count":
            v = every_ost(v, osts)
        by_val.setdefault(v, []).append(r.value)
    return {k: statistics.median(v) for k, v in by_val.items()}


def sweep_job(group: list, factor: str, osts: int | None) -> tuple[Any, dict[str, Any]] | None:
    """(the workload, the pinned settings) a hidden sweep asks `ioadvise advise` about: its nodes, ranks per node,
    volume per rank, access size, API, op and file system, its mode (collective or not) and, for a layout or mode
    sweep, its stripe count; the swept setting itself left to the advice. None where the advice takes no such
    question (an op other than write or read, an API it does not weigh, no node or rank count)."""
    from ..model.types import Workload
    rep = group[0]
    api = (rep.api or "POSIX").upper()
    if rep.op not in ("write", "read") or api not in ("POSIX", "MPIIO", "HDF5") or not rep.nodes:
        return None
    ranks = rep.ranks or rep.nodes
    moved = bytes_moved(rep)
    w = Workload(nodes=rep.nodes, ranks_per_node=-(-ranks // rep.nodes), bytes_per_rank=int(moved / ranks) if moved else 0,
                 api=api, layout="any" if factor == "layout" else rep.layout or "any", op=rep.op,
                 access_size=rep.transfer_size or None, lifetime="job")
    pins: dict[str, Any] = {"tier": rep.filesystem} if rep.filesystem else {}
    if factor != "collective" and api != "POSIX" and rep.collective is not None:
        pins["collective"] = bool(rep.collective)
    if factor != "stripe_count" and rep.stripe_count:
        pins["stripe_count"] = every_ost(rep.stripe_count, osts)
    return w, pins


def _regret_at(group: list, osts: int | None, count: float) -> float:
    """A stripe sweep's regret at `count`: best measured / measured there (log-interpolated)."""
    m = {float(k): v for k, v in _medians(group, "stripe_count", osts).items()}
    return max(m.values()) / _interp(m, count)


def _score_case(factor: str, group: list, fit: Fit, osts: int | None, dflt: int | None, ev: Evidence,
                advised: Any) -> dict[str, Any] | None:
    """A hidden sweep scored: each of its runs predicted as the advice predicts, and the regret of the setting
    `advised` (what `engine.assess` chose for the sweep's job) next to the baselines."""
    rep = group[0]
    measured = _medians(group, factor, osts)
    best = max(measured.values())
    hidden = []
    for r in group:
        p = run_point(r, osts, dflt)
        b = _bounds_of(ev, r, fit, p)
        v = b.clamp(fit.predict(p))
        lo, hi = b.interval(v, *fit.interval(v, p))
        hidden.append((abs(v / r.value - 1), lo <= r.value <= hi))
    case: dict[str, Any] = {"factor": factor, "filesystem": rep.filesystem, "op": rep.op, "layout": rep.layout,
                            "api": rep.api, "nodes": rep.nodes, "ranks": rep.ranks,
                            "measured": {str(k): round(v, 3) for k, v in sorted(measured.items(), key=lambda kv: str(kv[0]))},
                            "errors": [e for e, _ in hidden], "covered": [c for _, c in hidden], "advised": advised,
                            "sweep": dict(_settings_key(rep, factor)), "advise_args": job_args(group, factor, osts)}
    if factor == "stripe_count":
        if any(not isinstance(k, (int, float)) or k <= 0 for k in measured) or not advised or advised <= 0:
            return None
        m = {float(k): v for k, v in measured.items()}
        allo = int(osts or max(m))
        case["regret"] = {"model": best / _interp(m, advised), "always_1": best / _interp(m, 1),
                          "always_all": best / _interp(m, allo),
                          "size_table": best / _interp(m, _size_table_count(rep, osts))}
    else:
        if advised not in measured:
            return None
        base = {"layout": "shared", "collective": True}[factor]
        case["regret"] = {"model": best / measured[advised],
                          f"always_{base}": best / measured.get(base, min(measured.values()))}
    return case


def _advised(factor: str, group: list, center: Any, sysname: str, fits: dict, ev: Evidence,
             comparisons: list, osts: int | None) -> Any:
    """The setting of `factor` the advice chooses for a hidden sweep's job (`engine.assess`, the function behind
    `ioadvise advise`), or None where it takes no such question."""
    from .engine import assess
    job = sweep_job(group, factor, osts)
    if job is None:
        return None
    try:
        a = assess(job[0], center, sysname, fits, ev, comparisons, job[1])
    except UsageError:
        return None
    cfg = a.chosen.config
    if factor == "stripe_count":
        return every_ost(cfg.stripe_count, osts)
    return getattr(cfg, factor)


def job_args(group: list, factor: str, osts: int | None) -> list[str] | None:
    """The `ioadvise advise` options that ask the question a hidden sweep is scored on (`sweep_job`)."""
    job = sweep_job(group, factor, osts)
    if job is None:
        return None
    w, pins = job
    args = ["-N", str(w.nodes), "--ranks-per-node", str(w.ranks_per_node), "--bytes-per-rank", str(w.bytes_per_rank),
            "--api", w.api.lower(), "--layout", w.layout, "--op", w.op, "--lifetime", w.lifetime]
    if w.access_size:
        args += ["--access-size", str(w.access_size)]
    if "tier" in pins:
        args += ["--tier", pins["tier"]]
    if "collective" in pins:
        args += ["--collective" if pins["collective"] else "--independent"]
    if "stripe_count" in pins:
        args += ["--stripe-count", str(pins["stripe_count"])]
    return args


def nearest_measured(group: list, train: Iterable[Any], osts: int | None) -> float | None:
    """The nearest-measured rule, a baseline with no model: the stripe count that measured best (median of its
    runs) at the node count nearest a hidden sweep's, among the other runs of the same file system, op, API,
    layout and mode that measured at least two stripe counts there, preferring the volume per rank nearest the
    sweep's (and then the ranks per node nearest). None where no such runs exist."""
    rep = group[0]
    key = (rep.filesystem, rep.op, rep.api, rep.layout, rep.collective, rep.unit)

    def volume(r: Any) -> float:
        moved = bytes_moved(r)
        return moved / (r.ranks or r.nodes or 1) if moved else 0.0

    at: dict[tuple, dict[float, list[float]]] = {}
    for r in train:
        if (r.filesystem, r.op, r.api, r.layout, r.collective, r.unit) != key or not r.nodes or not r.stripe_count:
            continue
        sc = float(every_ost(r.stripe_count, osts or r.ost_count))
        if sc > 0:
            at.setdefault((r.nodes, volume(r), (r.ranks or r.nodes) / r.nodes), {}).setdefault(sc, []).append(r.value)
    at = {k: v for k, v in at.items() if len(v) >= 2}
    if not at:
        return None
    v0, q0 = volume(rep), (rep.ranks or rep.nodes) / rep.nodes
    far = lambda a, b: abs(math.log(a / b)) if a > 0 and b > 0 else (0.0 if a == b else 50.0)   # noqa: E731
    k = min(at, key=lambda k: (far(k[0], rep.nodes), far(k[1], v0), far(k[2], q0)))
    by = at[k]
    return max(by, key=lambda s: (statistics.median(by[s]), -s))


def _other_volumes(group: list, groups: list[list], osts: int | None) -> float | None:
    """The regret of choosing a hidden stripe sweep's count from what the sweeps of exactly the same settings at
    other volumes per rank measured (the count best on average over them, in log ratio to each one's best). It is
    what the measurements themselves say about the same question, so its tail is a floor for any advice that
    sees the settings but not the hidden sweep; None when no such sweep exists."""
    def key(r: Any) -> tuple:
        return tuple(v for k, v in _settings_key(r, "stripe_count") if k != "block")
    k0 = key(group[0])
    sibs = [_medians(g, "stripe_count", osts) for g in groups if g is not group and key(g[0]) == k0]
    m = _medians(group, "stripe_count", osts)
    if not sibs or any(c <= 0 for c in m) or any(c <= 0 for s in sibs for c in s):
        return None
    pick = max(sorted(m), key=lambda c: sum(math.log(_interp(s, c) / max(s.values())) for s in sibs))
    return max(m.values()) / _interp(m, pick)


def _cache_speedup(fit: Fit, group: list, osts: int | None, dflt: int | None) -> float:
    """How much faster the fit (without the sweep) predicts a hidden sweep's runs at the volume they moved than
    with no data in the servers' cache, the case the advice predicts: the median over the sweep's runs (1.0 where
    the fit has no cache or the runs state no volume). A sweep above `WARM_SPEEDUP` measured, by the fit, mostly
    what the servers' cache gave it (IOR reading back what it has just written), not what the advice is for."""
    ratios = []
    for r in group:
        p = run_point(r, osts, dflt)
        if p.bytes:
            ratios.append(fit.predict(p) / fit.predict(p._replace(bytes=None)))
    return statistics.median(ratios) if ratios else 1.0


def _sweeps_of_system(kb: Any, sysname: str, runs: list, factors: Sequence[str] = SWEEP_FACTORS,
                      memo: dict | None = None, limit: int | None = None) -> dict[str, Any]:
    """Sweep-out cases of one system; with `limit`, at most that many groups per factor, evenly spread. Each
    sweep is hidden, the system refitted without it, and the advice for the sweep's job asked of the same
    function `ioadvise advise` calls, with the system's center and published comparisons."""
    memo = {} if memo is None else memo
    center, osts_by_fs, dflt_by_fs = _center_info(kb, sysname)
    comparisons = kb.comparisons(sysname)
    cases: list[dict] = []
    unscored = 0
    for factor in factors:
        groups = sweep_groups(runs, factor)
        if limit is not None and len(groups) > limit:
            groups = [groups[int((i + 0.5) * len(groups) / limit)] for i in range(limit)]
        for group in groups:
            rep = group[0]
            osts = rep.ost_count or osts_by_fs.get(rep.filesystem)
            if center is None or sweep_job(group, factor, osts) is None:
                unscored += 1         # a question the advice does not take: nothing to fit for it
                continue
            ids = {id(r) for r in group}
            train = [r for r in runs if id(r) not in ids]
            fits = fit_all_cached(train, osts_by_fs, dflt_by_fs, memo=memo)
            fit = fits.get((sysname, rep.filesystem, rep.op))
            ev = Evidence(train, osts_by_fs, dflt_by_fs)
            advised = None
            if fit is not None and fit.unit == rep.unit:
                advised = _advised(factor, group, center, sysname, fits, ev, comparisons, osts)
            case = None if advised is None else _score_case(factor, group, fit, osts,
                                                            dflt_by_fs.get(rep.filesystem), ev, advised)
            if case is None:
                unscored += 1
                continue
            case["system"] = sysname
            if factor == "stripe_count":
                near = nearest_measured(group, train, osts)
                if near is not None:
                    case["regret"]["nearest_measured"] = _regret_at(group, osts, near)
                case["cache_speedup"] = _cache_speedup(fit, group, osts, dflt_by_fs.get(rep.filesystem))
                other = _other_volumes(group, groups, osts)
                if other is not None:
                    case["regret"]["other_volumes"] = other
            cases.append(case)
    return {"cases": cases, "unscored": unscored}


def _summary(cases: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {"groups": len(cases)}
    names = sorted({k for c in cases for k in c["regret"]})
    out["regret"] = {n: {"median": statistics.median(v) if v else None, "p90": _q(v, 0.9), "max": max(v),
                         "n": len(v)}
                     for n in names if (v := [c["regret"][n] for c in cases if n in c["regret"]])}
    cold = [c["regret"]["model"] for c in cases if c.get("cache_speedup", INF) <= WARM_SPEEDUP]
    if cold:
        # the advice's own case: sweeps the fit says the servers' cache lifted by no more than one run's noise
        out["cold_sweeps"] = {"median": statistics.median(cold), "p90": _q(cold, 0.9), "max": max(cold),
                              "n": len(cold), "warm": sum(1 for c in cases if "cache_speedup" in c) - len(cold)}
    paired = [c for c in cases if "other_volumes" in c["regret"]]
    if paired:
        # the model and the baselines on the same sweeps as the other-volumes floor, so that the tails compare
        out["with_other_volumes"] = {
            n: {"median": statistics.median(v), "p90": _q(v, 0.9), "n": len(v)}
            for n in names if len(v := [c["regret"][n] for c in paired if n in c["regret"]]) == len(paired)}
    errs = [e for c in cases for e in c["errors"]]
    cov = [x for c in cases for x in c["covered"]]
    out["hidden_points"] = {"n": len(errs), "median_abs_error": statistics.median(errs) if errs else None,
                            "p90_abs_error": _q(errs, 0.9),
                            "coverage_90": sum(cov) / len(cov) if cov else None}
    return out


def _sweep_system(kb: Any, sysname: str, n: int, factors: Sequence[str],
                  with_errors: bool) -> tuple[dict, dict, list] | None:
    """One system's part of `sweep_validate`: (its entry, its sweeps' cases and unscored count, its held-out
    errors); None where the system has no measured run."""
    got = _system_inputs(kb, sysname, n)
    if got is None:
        return None
    srs, held, note, osts, dflt = got
    memo: dict = {}
    res = _sweeps_of_system(kb, sysname, srs, factors, memo, limit=None if held is None else SAMPLED_SWEEPS)
    entry: dict[str, Any] = {"sweep_groups": len(res["cases"]), **note}
    errs: list = []
    if with_errors:
        errs, unp = _predict_errors(sysname, srs, osts, dflt, memo, held)
        entry.update(_err_stats(errs))
        entry["not_predictable"] = unp
        entry["verdict"] = verdict(entry)
    return entry, res, errs


def sweep_validate(kb: Any, system: str | None = None, factors: Sequence[str] = SWEEP_FACTORS,
                   with_errors: bool = True, workers: int | None = None) -> dict[str, Any]:
    """Sweep-out validation (see the module docstring), per factor over all systems and per system; with
    `with_errors` also the held-out prediction error of `validate`. The systems are validated in `workers`
    processes (`per_system`)."""
    from functools import partial
    cases: list[dict] = []
    unscored = 0
    errs: list = []
    per_sys: dict[str, Any] = {}
    systems = sorted(_system_sizes(kb, system).items())
    work = partial(_sweep_system, factors=tuple(factors), with_errors=with_errors)
    for (sysname, _), got in zip(systems, per_system(kb, work, systems, workers)):
        if got is None:
            continue
        per_sys[sysname], res, e = got
        cases += res["cases"]
        unscored += res["unscored"]
        errs += e
    out: dict[str, Any] = {"factors": {f: _summary([c for c in cases if c["factor"] == f]) for f in factors},
                           "unscored_groups": unscored, "systems": per_sys, "cases": cases,
                           "interval": f"{Z90:g} sd (90%)"}
    if with_errors:
        out["held_out"] = _err_stats(errs, detail=True)
    return out


def format_sweep_table(res: dict[str, Any]) -> str:
    """The sweep-out figures as a plain-text table (the benchmark script and docs print this)."""
    lines = []
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"   # noqa: E731
    num = lambda v: "-" if v is None else f"{v:.3f}"           # noqa: E731
    for f, s in res["factors"].items():
        if not s["groups"]:
            continue
        hp = s["hidden_points"]
        lines.append(f"{f}: {s['groups']} hidden sweep groups, {hp['n']} hidden points: median |err| "
                     f"{pct(hp['median_abs_error'])}, p90 {pct(hp['p90_abs_error'])}, 90% interval coverage "
                     f"{pct(hp['coverage_90'])}")
        lines.append(f"  {'advice':<14}{'median regret':>15}{'p90 regret':>12}{'max':>8}{'groups':>8}")
        for name, r in s["regret"].items():
            lines.append(f"  {name:<14}{num(r['median']):>15}{num(r['p90']):>12}{num(r['max']):>8}{r['n']:>8}")
        if s.get("cold_sweeps"):
            c = s["cold_sweeps"]
            lines.append(f"  model on the {c['n']} sweeps the fit says the servers' cache lifted <= {WARM_SPEEDUP:g}x "
                         f"(the advice predicts cold data; {c['warm']} warm): median {num(c['median'])}, p90 "
                         f"{num(c['p90'])}, max {num(c['max'])}")
        if s.get("with_other_volumes"):
            w = s["with_other_volumes"]
            lines.append(f"  on the {w['other_volumes']['n']} sweeps whose exact settings were also swept at other "
                         f"volumes per rank (other_volumes: the count best there):")
            for name, r in w.items():
                lines.append(f"    {name:<14}{num(r['median']):>13}{num(r['p90']):>12}{r['n']:>8}")
    if "held_out" in res:
        h = res["held_out"]
        lines.append(f"held-out runs (leave-one-out, {FOLDS}-fold above {LOO_MAX} runs per system): {h['n']} runs, "
                     f"median |err| {pct(h['median_abs_error'])} (writes {pct(h['median_abs_error_writes'])}), "
                     f"p90 {pct(h['p90_abs_error'])}, 90% interval coverage {pct(h['coverage_90'])}")
        if "at_measured_settings" in h:
            m, d = h["at_measured_settings"], h["dense_family"]
            wid = lambda v: "-" if v is None else f"{v:.2f}x"
            lines.append(f"  at measured settings (>= {SAME_SETTINGS_RUNS} other runs at exactly the run's settings): "
                         f"{m['n']} runs, median |err| {pct(m['median_abs_error'])}")
            lines.append(f"  where >= {DENSE_FAMILY_RUNS} runs of the family lie within {DENSE_SPAN:g}x of the run's "
                         f"node count: {d['n']} runs, 90% interval width (high/low) median {wid(d['median_width'])}, "
                         f"p90 {wid(d['p90_width'])}, max {wid(d['max_width'])}; coverage {pct(d['coverage_90'])}")
    lines.append(f"groups that could not be scored (no model once hidden): {res['unscored_groups']}")
    return "\n".join(lines)
