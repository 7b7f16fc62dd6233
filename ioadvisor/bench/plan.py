"""What to measure next: the benchmark points that most narrow the advice's intervals at a center's common
workloads, written as a sweep file (`ioadvise bench plan`, docs/bench.md).

Targets are the workloads of the KB's production records (the most frequent (nodes, ranks per node, API,
layout, op, request size) among them), else a default set (`DEFAULT_TARGETS`). The quantity to shrink is the
predictive variance of log bandwidth of every option the advice weighs for each target (the same candidates
`advise` ranks, on the planned file system), as `Fit.log_sd` states it. Candidate benchmark points are a grid
over nodes, ranks per node, stripe counts, layout and API; they are picked greedily by the variance each removes
given those already picked, through the fitted model's linearised posterior (`predict.design`).
"""
from __future__ import annotations

import json
import math
import os
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..center import UNKNOWN_FS
from ..errors import UsageError
from ..frozen import field as record_field, frozen, replace
from ..lustre import pattern_vars
from ..model.run import DATA_OPS, norm_api
from ..model.types import Center, Config, FileSystem, Workload
from ..predict import Fit, Point, run_point
from ..predict.physical import Z90

MAX_TARGETS = 8                     # most frequent production workloads taken as targets
DEFAULT_NODES = (1, 4, 16, 64)      # default targets: these node counts (up to the plan's largest) ...
DEFAULT_RPN = 16                    # ... with the center's ranks per node, else 16 ...
DEFAULT_SHAPES = (("POSIX", "any"), ("MPIIO", "shared"))   # ... POSIX (either layout) and MPI-IO to one file
DEFAULT_ACCESS = 1 << 20            # request size of default targets and of the benchmarks (1 MiB)
RANDOM_TRIALS = 20                  # random designs averaged for the comparison the plan states
# An option's 90% interval whose high end is more than WIDE times its low end (the prediction within a factor
# of 10 either way) says the model cannot predict there; such intervals count as WIDE in the plan's figure, and
# their share is stated apart, so one unidentified option cannot make the figure astronomical.
WIDE = 100.0
OBJECTIVES = ("options", "decision")


@frozen
class Target:
    """A workload the advice should be sure about, with its weight (share of the production records)."""

    workload: Workload
    weight: float
    jobs: int = 0                   # production records behind it (0: a default target)


@frozen
class BenchPoint:
    """One benchmark to run: what `bench run` sets (stripe_count None: the file system's default)."""

    nodes: int
    ranks_per_node: int
    api: str                        # POSIX | MPIIO | HDF5
    layout: str                     # shared | fpp
    collective: bool | None
    stripe_count: int | None
    stripe_size: int | None = None

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node

    def label(self) -> str:
        mode = "" if self.collective is None else (" coll" if self.collective else " indep")
        st = "" if self.stripe_count is None else f", {self.stripe_count} stripe(s)"
        return f"{self.nodes}x{self.ranks_per_node} {self.api}{mode} {self.layout}{st}"


@frozen
class Proposal:
    """A picked point and, once it is measured (with those picked before it), the expected mean 90% interval at
    the targets' options (high/low ratio; the weighted geometric mean, each option's at most WIDE): of one run (`width_after`, what `advise` shows) and of the mean
    bandwidth (`posterior_after`: without one run's scatter, the part that measuring can shrink)."""

    point: BenchPoint
    width_after: float
    posterior_after: float
    variance_removed: float


@frozen
class BenchPlan:
    system: str
    filesystem: str
    ops: tuple[str, ...]
    targets: tuple[Target, ...]
    target_source: str                       # production | default
    proposals: tuple[Proposal, ...]
    width_now: float                         # mean 90% interval ratio at the targets' options now (linearised)
    width_random: float | None               # ... after as many random grid points (mean of RANDOM_TRIALS)
    posterior_now: float                     # the same for the interval of the mean bandwidth
    # (each "mean" is the weighted geometric mean of the options' high/low, each at most WIDE)
    posterior_random: float | None
    candidates: int                          # grid size
    # per target, what `ioadvise advise` advises for it now (`advice_of`)
    advice: tuple[dict[str, Any], ...] = record_field(default=(), compare=False)
    notes: tuple[str, ...] = ()
    # weighted share of the targets' options whose interval of the mean is wider than WIDE: now, after the
    # proposed points, after as many random ones
    wide_now: float = 0.0
    wide_after: float = 0.0
    wide_random: float = 0.0
    # each of the targets' options (or best/default pairs): its weight (summing to 1) and the high/low of its
    # interval of the mean now and after the proposed points (at most WIDE): posterior_now and posterior_after
    # are exp(sum(weight * log(high/low))) of these
    options: tuple[dict[str, Any], ...] = record_field(default=(), compare=False)
    objective: str = "options"
    # the targets' options as the model's inputs, per op (for checking the plan against refits), and the pair of
    # options each target's decision turns on (best, default, weight)
    evaluation: dict[str, list[tuple[Point, float]]] = record_field(default_factory=dict, compare=False, repr=False)
    grid: tuple[BenchPoint, ...] = record_field(default=(), compare=False, repr=False)
    decisions: dict[str, list[tuple[Point, Point, float]]] = record_field(default_factory=dict, compare=False,
                                                                         repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system, "filesystem": self.filesystem, "ops": list(self.ops), "objective": self.objective,
            "target_source": self.target_source,
            "targets": [{"nodes": t.workload.nodes, "ranks_per_node": t.workload.ranks_per_node,
                         "api": t.workload.api, "layout": t.workload.layout, "op": t.workload.op,
                         "access_size": t.workload.access_size, "weight": round(t.weight, 4), "jobs": t.jobs,
                         "advice": a}
                        for t, a in zip(self.targets, self.advice or [None] * len(self.targets))],
            "candidates": self.candidates,
            "width_now": self.width_now, "width_after": self.proposals[-1].width_after if self.proposals else None,
            "width_random": self.width_random, "posterior_now": self.posterior_now,
            "posterior_after": self.proposals[-1].posterior_after if self.proposals else None,
            "posterior_random": self.posterior_random, "wide": WIDE,
            "wide_share_now": round(self.wide_now, 4), "wide_share_after": round(self.wide_after, 4),
            "wide_share_random": round(self.wide_random, 4), "options": list(self.options),
            "points": [{"nodes": p.point.nodes, "ranks_per_node": p.point.ranks_per_node, "ranks": p.point.ranks,
                        "api": p.point.api, "layout": p.point.layout, "collective": p.point.collective,
                        "stripe_count": p.point.stripe_count, "stripe_size": p.point.stripe_size,
                        "width_after": p.width_after, "posterior_after": p.posterior_after,
                        "variance_removed": p.variance_removed}
                       for p in self.proposals],
            "notes": list(self.notes),
        }


# ---- targets ----------------------------------------------------------------------------------------------------

def production_targets(runs: Sequence[Any], max_targets: int = MAX_TARGETS, rpn: int = DEFAULT_RPN) -> list[Target]:
    """The most frequent data workloads among production runs; a record without a rank count is left out. A
    record that states ranks but not nodes (a Darshan log knows only its process count) is taken to run `rpn`
    ranks per node (the center's; or all its ranks on one node, if fewer)."""
    seen: Counter = Counter()
    for r in runs:
        if r.op not in ("write", "read") or not r.ranks and not (r.nodes and r.ranks_per_node):
            continue
        ranks = r.ranks or r.nodes * r.ranks_per_node
        per_node = r.ranks_per_node or min(rpn, ranks)
        nodes = r.nodes or max(1, -(-ranks // per_node))
        rpn = max(1, round(ranks / nodes))
        api = norm_api(r.api)
        api = api if api in ("POSIX", "MPIIO", "HDF5") else "POSIX"
        layout = r.layout if r.layout in ("shared", "fpp") else "any"
        seen[(nodes, rpn, api, layout, r.op, r.transfer_size or DEFAULT_ACCESS)] += 1
    top = sorted(seen.items(), key=lambda kv: (-kv[1], kv[0]))[:max_targets]
    total = sum(n for _, n in top)
    return [Target(Workload(nodes=k[0], ranks_per_node=k[1], bytes_per_rank=1 << 30, api=k[2], layout=k[3],
                            op=k[4], access_size=k[5]), n / total, jobs=n) for k, n in top]


def default_targets(max_nodes: int, ops: Sequence[str] = ("write",), rpn: int = DEFAULT_RPN) -> list[Target]:
    """Common workloads of a center without production records: `DEFAULT_SHAPES` at `DEFAULT_NODES` (and the
    plan's largest node count) with `rpn` ranks per node (the center's) and 1 MiB requests, equally weighted."""
    nodes = sorted({n for n in DEFAULT_NODES if n <= max_nodes} | {max_nodes})
    out = [Workload(nodes=n, ranks_per_node=rpn, bytes_per_rank=1 << 30, api=api, layout=layout, op=op,
                    access_size=DEFAULT_ACCESS)
           for n in nodes for api, layout in DEFAULT_SHAPES for op in ops]
    return [Target(w, 1.0 / len(out)) for w in out]


# ---- candidates -------------------------------------------------------------------------------------------------

def candidate_grid(fs: FileSystem, targets: Sequence[Target], max_nodes: int, rpn_max: int) -> list[BenchPoint]:
    """Benchmark points: node counts (powers of two up to `max_nodes`, and the targets'), ranks per node (1, 4,
    the targets' and `rpn_max`), every stripe count the advice weighs (`bench run --stripe-count` sets it with
    lfs setstripe), and the layouts and APIs of the targets."""
    from ..advise.candidates import default_stripes_on, stripe_counts
    nodes = {1 << k for k in range(0, 31) if (1 << k) <= max_nodes} | {max_nodes}
    nodes |= {t.workload.nodes for t in targets if t.workload.nodes <= max_nodes}
    rpns = {r for r in (1, 4, rpn_max) if r <= rpn_max} | {t.workload.ranks_per_node for t in targets
                                                           if t.workload.ranks_per_node <= rpn_max}
    apis = {norm_api(t.workload.api) or "POSIX" for t in targets} | {"POSIX"}
    shapes: list[tuple[str, str, bool | None]] = [("POSIX", "fpp", None), ("POSIX", "shared", None)]
    for api in sorted(apis - {"POSIX"}):
        shapes += [(api, "shared", True), (api, "shared", False), (api, "fpp", False)]
    size = fs.default_stripe_size or (1 << 20)
    out = []
    for api, layout, coll in shapes:
        counts: list[int | None] = list(stripe_counts(fs, layout)) if fs.stripable else [None]
        for sc in counts:
            sc_out = None if sc == default_stripes_on(fs) else sc
            for n in sorted(nodes):
                for r in sorted(rpns):
                    out.append(BenchPoint(nodes=n, ranks_per_node=r, api=api, layout=layout, collective=coll,
                                          stripe_count=sc_out, stripe_size=size if sc_out is not None else None))
    return list(dict.fromkeys(out))


def bench_point_model(p: BenchPoint, fs: FileSystem, op: str, transfer: int) -> Point:
    """A benchmark point as the model's input (the advice's own mapping of a setting)."""
    from ..advise.candidates import candidate_point, default_stripes_on
    cfg = Config(filesystem=fs.name, layout=p.layout, api=p.api, collective=p.collective,
                 stripe_count=p.stripe_count if p.stripe_count is not None else default_stripes_on(fs),
                 stripe_size=p.stripe_size)
    w = Workload(nodes=p.nodes, ranks_per_node=p.ranks_per_node, bytes_per_rank=1 << 30, api=p.api,
                 layout=p.layout, op=op, access_size=transfer)
    return candidate_point(cfg, fs, w)


def target_options(t: Target, center: Center, fs: FileSystem) -> list[Point]:
    """The options the advice weighs for a target on `fs` (the global file system, no tier)."""
    from ..advise.candidates import candidate_point, candidates_for
    w = replace(t.workload, api=norm_api(t.workload.api) or "POSIX")
    cands = [c for c in candidates_for(w, center, {}) if c.tier is None and c.place.name == fs.name]
    return [candidate_point(c.config, c.place, w) for c in cands]


def decision_pair(t: Target, center: Center, fs: FileSystem, assessed: Any) -> tuple[Point, Point] | None:
    """(the option the advice chooses, the default) for a target, or (the option it ranks next, the default)
    where it keeps the default: the comparison the advice's choice turns on. `assessed` is the advice's own
    decision for the target (`advise.engine.assess`, which `ioadvise advise` calls). Only options on `fs` (no
    tier) count; None when the default is not on `fs` or the target has no other option there."""
    from ..advise.candidates import candidate_point
    w, base = assessed.workload, assessed.base_config
    if base.filesystem != fs.name:
        return None
    default = candidate_point(base, fs, w)
    for i in assessed.decision.order:
        c = assessed.candidates[i]
        if c.tier is None and c.place.name == fs.name:
            p = candidate_point(c.config, c.place, w)
            if p != default:
                return p, default
    return None


def advice_of(assessed: Any) -> dict[str, Any]:
    """The advice's choice for a target as the plan shows it: the settings `ioadvise advise --json` recommends."""
    c = assessed.chosen
    cfg = c.config
    return {"filesystem": cfg.filesystem, "tier": cfg.tier, "layout": cfg.layout, "api": cfg.api,
            "collective": cfg.collective, "stripe_count": cfg.stripe_count, "stripe_size": cfg.stripe_size,
            "predicted": c.value, "unit": c.fit.unit if c.fit is not None and c.value is not None else None}


def assess_targets(system: str, center: Center, fits: dict, targets: Sequence[Target], evidence: Any,
                   comparisons: Sequence[Any]) -> list[Any]:
    """The advice's decision for each target: the function `ioadvise advise` calls (`advise.engine.assess`)."""
    from ..advise.engine import assess
    return [assess(t.workload, center, system, fits, evidence, list(comparisons)) for t in targets]


# ---- the plan ---------------------------------------------------------------------------------------------------

def _group_points(runs: Sequence[Any], fs: FileSystem, op: str) -> list:
    """The fitted group's runs as the model's inputs, as `fit_group` chooses them."""
    from ..advise.candidates import default_stripes_on
    from ..predict import MAX_FIT_RUNS
    rs = [r for r in runs if r.filesystem == fs.name and r.op == op and r.value and r.value > 0
          and math.isfinite(r.value)]
    if rs:
        rs = [r for r in rs if r.unit == rs[0].unit]
    if len(rs) > MAX_FIT_RUNS:
        step = len(rs) / MAX_FIT_RUNS
        rs = [rs[int(i * step)] for i in range(MAX_FIT_RUNS)]
    return [run_point(r, fs.ost_count, default_stripes_on(fs)).physical() for r in rs]


def _label(p: Point) -> str:
    nodes = "?" if not math.isfinite(p.clients) else f"{p.clients:g}"
    stripes = "" if p.stripes is None else f", {p.stripes:g} stripe(s)"
    return f"{nodes} node(s) x {p.ranks:g} rank(s) {p.klass or '?'} {p.layout or ''}{stripes}".replace("  ", " ")


def _log_width(var: Any) -> Any:
    """log(high/low) of a 90 % interval for a log-variance: 2 * 1.645 * sd, at most log(WIDE)."""
    import numpy as np
    return np.minimum(2 * Z90 * np.sqrt(np.maximum(var, 0.0)), math.log(WIDE))


def make_plan(system: str, center: Center, fs: FileSystem, fits: dict, runs: Sequence[Any],
              targets: Sequence[Target], budget: int, *, target_source: str = "default",
              max_nodes: int | None = None, rpn_max: int | None = None, transfer: int = DEFAULT_ACCESS,
              seed: int = 0, objective: str = "options", evidence: Any = None,
              comparisons: Sequence[Any] = ()) -> BenchPlan:
    """Pick `budget` benchmark points for `targets` from the fits of `fs` and the runs they rest on. Pure.

    objective "options": the predictive variance of every option the advice weighs for each target (as `advise`
    states its intervals); "decision": the posterior variance of log(advised option / default) for each target, the
    quantity the advice's choice turns on (the option it advises, or the one it ranks next where it keeps the
    default). `evidence` and `comparisons` are the system's (`advise.fits.system_evidence`, `kb.comparisons`): with
    `fits`, what the advice decides from, so each target's choice is the one `ioadvise advise` makes."""
    if budget < 1:
        raise UsageError(f"--budget must be at least 1, got {budget}")
    if objective not in OBJECTIVES:
        raise UsageError(f"--objective: {objective!r} is not one of {', '.join(OBJECTIVES)}")
    groups_fit, notes = _bandwidth_fits(system, fs, fits, targets)
    targets = [t for t in targets if t.workload.op in groups_fit]
    assessed = assess_targets(system, center, fits, targets, evidence, comparisons)
    measured_nodes = max((f.clients_max for f in groups_fit.values() if math.isfinite(f.clients_max)), default=1)
    if max_nodes is None:
        max_nodes = int(max([2 * measured_nodes] + [t.workload.nodes for t in targets]))
    if rpn_max is None:         # the targets' and the center's ranks per node
        rpn_max = max([t.workload.ranks_per_node for t in targets] + [center.ranks_per_node or 1])
    grid = candidate_grid(fs, targets, max_nodes, rpn_max)
    if not grid:
        raise UsageError(f"no benchmark point fits the limits (--max-nodes {max_nodes})")
    if any(b.stripe_count is not None for b in grid):
        notes.append("stripe counts are set by `lfs setstripe` on each benchmark's directory: run the sweep where "
                     "lfs is on PATH")
    d = _design(groups_fit, targets, assessed, center, fs, runs, grid, transfer, objective)
    if not d.groups:
        raise UsageError(f"{system}: none of the targets has an option on {fs.name}")
    wsum = sum(float(g.weight.sum()) for g in d.groups)
    now, post_now, wide_now = (_mean_width(d.groups, wsum), _mean_width(d.groups, wsum, noise=False),
                               _wide_share(d.groups, wsum))
    each_now = _each_width(d.groups)
    trials, post_trials, wide_trials = _random_designs(d.groups, wsum, len(grid), budget, seed)
    proposals = []
    for i, removed in _distinct_picks(d.groups, budget):
        proposals.append(Proposal(grid[i], _mean_width(d.groups, wsum), _mean_width(d.groups, wsum, noise=False),
                                  removed))
    if len(proposals) < budget:
        notes.append(f"{len(proposals)} point(s), not {budget}: no other point of the grid narrows an interval")
    return BenchPlan(system=system, filesystem=fs.name, ops=tuple(groups_fit), targets=tuple(targets),
                     target_source=target_source, proposals=tuple(proposals), width_now=now,
                     advice=tuple(advice_of(a) for a in assessed),
                     width_random=sum(trials) / len(trials), posterior_now=post_now,
                     posterior_random=sum(post_trials) / len(post_trials), candidates=len(grid),
                     notes=tuple(notes), evaluation=d.evaluation, grid=tuple(grid), objective=objective,
                     decisions=d.decisions, wide_now=wide_now, wide_after=_wide_share(d.groups, wsum),
                     wide_random=sum(wide_trials) / len(wide_trials),
                     options=tuple({"option": lab, "weight": round(float(w) / wsum, 6), "posterior_now": a,
                                    "posterior_after": b}
                                   for lab, w, a, b in zip([x for ls in d.labels for x in ls],
                                                           [w for g in d.groups for w in g.weight],
                                                           each_now, _each_width(d.groups))))


def _distinct_picks(groups: Sequence[Any], budget: int) -> Iterator[tuple[int, float]]:
    """The greedy design's picks (grid index, variance removed), each point at most once: a sweep config already
    repeats its measurement (`reps`), and a point proposed twice would be run twice as two configs."""
    import numpy as np
    from ..predict import design
    if not groups:
        return
    allowed = np.ones(groups[0].candidates.shape[0], dtype=bool)
    for _ in range(min(budget, len(allowed))):
        pick = next(design.greedy(groups, 1, allowed), None)
        if pick is None:
            return
        allowed[pick[0]] = False
        yield pick


def _bandwidth_fits(system: str, fs: FileSystem, fits: dict, targets: Sequence[Target]) -> tuple[dict, list[str]]:
    """The bandwidth fit of `fs` for each op the targets ask for, and a note for each op without one."""
    ops = sorted({t.workload.op for t in targets}, key=DATA_OPS.index)
    groups_fit = {op: fits.get((system, fs.name, op)) for op in ops}
    groups_fit = {op: f for op, f in groups_fit.items() if f is not None and f.kind == "bandwidth"}
    if not groups_fit:
        where = "in its runs that name no file system" if fs.name == UNKNOWN_FS else f"on {fs.name}"
        raise UsageError(f"{system}: no measured {'/'.join(ops)} bandwidth {where} to fit a model to; "
                         f"measure a first sweep there (ioadvise bench sweep) and plan again")
    notes = [f"no {op} runs on {fs.name}: {op} targets are left out" for op in ops if op not in groups_fit]
    return groups_fit, notes


@dataclass
class _Design:
    """The design problem: one `design.Group` per op, what each of its rows is, and the targets' options (and
    best/default pairs) per op as the plan reports them."""

    groups: list = field(default_factory=list)
    labels: list[list[str]] = field(default_factory=list)       # per group, what each of its rows is
    evaluation: dict[str, list[tuple[Point, float]]] = field(default_factory=dict)
    decisions: dict[str, list[tuple[Point, Point, float]]] = field(default_factory=dict)


def _design(groups_fit: dict[str, Fit], targets: Sequence[Target], assessed: Sequence[Any], center: Center,
            fs: FileSystem, runs: Sequence[Any], grid: Sequence[BenchPoint], transfer: int, objective: str) -> _Design:
    """Per op: the targets' options weighted by the targets' weights, the candidate grid as the model's inputs,
    and the covariance of the fit's parameters, as the greedy design takes them."""
    from ..predict import design
    out = _Design()
    classes: dict[str, int] = {}        # one class numbering for every op's group
    for op, fit in groups_fit.items():
        ev: list[tuple[Point, float]] = []
        pairs: list[tuple[Point, Point, float]] = []
        for t, a in zip(targets, assessed):
            if t.workload.op != op:
                continue
            opts = target_options(t, center, fs)
            ev += [(p, t.weight / len(opts)) for p in opts]
            pair = decision_pair(t, center, fs, a)
            if pair is not None:
                pairs.append((*pair, t.weight))
        if not ev:
            continue
        out.evaluation[op] = ev
        out.decisions[op] = pairs
        cov = design.covariance(fit.posterior, _group_points(runs, fs, op))
        cand_pts = [bench_point_model(b, fs, op, transfer) for b in grid]
        if objective == "decision":
            if pairs:
                out.groups.append(_decision_group(fit, cov, pairs, cand_pts))
                out.labels.append([f"{op}: {_label(b)} / {_label(d)}" for b, d, _ in pairs])
            continue
        out.groups.append(_options_group(fit, cov, ev, cand_pts, classes))
        out.labels.append([f"{op}: {_label(q)}" for q, _ in ev])
    return out


def _decision_group(fit: Fit, cov: Any, pairs: list[tuple[Point, Point, float]], cand_pts: list[Point]) -> Any:
    """The group whose targets are log(best) - log(default) of each target: its gradient is the difference of
    theirs; one run's scatter and the widening of intervals do not enter a comparison of two predictions of the
    same model."""
    import numpy as np
    from ..predict import design
    post = fit.posterior
    diff = (design.log_gradients(post, [b.physical() for b, _, _ in pairs])
            - design.log_gradients(post, [d.physical() for _, d, _ in pairs]))
    return design.Group(
        cov=cov, targets=diff, weight=np.array([w for _, _, w in pairs]),
        candidates=design.log_gradients(post, [p.physical() for p in cand_pts]),
        active=np.ones(len(cand_pts), dtype=bool), noise=design.noise_sd(post), sigma=0.0,
        t_clients=np.full(len(pairs), math.inf), c_clients=np.array([p.clients for p in cand_pts]),
        lo=fit.clients_min, hi=fit.clients_max, t_class=np.zeros(len(pairs), dtype=int),
        c_class=np.zeros(len(cand_pts), dtype=int), measured=set(), classes_known=False)


def _options_group(fit: Fit, cov: Any, ev: list[tuple[Point, float]], cand_pts: list[Point],
                   classes: dict[str, int]) -> Any:
    """The group whose targets are the predictions of the targets' options, one run's scatter included; I/O
    classes are numbered in `classes`, shared by every group."""
    import numpy as np
    from ..predict import design
    cid = lambda k: classes.setdefault(k or "?/-", len(classes))   # noqa: E731
    post = fit.posterior
    return design.Group(
        cov=cov, targets=design.log_gradients(post, [p.physical() for p, _ in ev]),
        weight=np.array([w for _, w in ev]), candidates=design.log_gradients(post, [p.physical() for p in cand_pts]),
        active=np.ones(len(cand_pts), dtype=bool), noise=design.noise_sd(post), sigma=post.log_sigma,
        t_clients=np.array([p.clients for p, _ in ev]), c_clients=np.array([p.clients for p in cand_pts]),
        lo=fit.clients_min, hi=fit.clients_max, t_class=np.array([cid(p.klass) for p, _ in ev]),
        c_class=np.array([cid(p.klass) for p in cand_pts]), measured={cid(k) for k in fit.klasses},
        classes_known=bool(fit.klasses), scale=fit.interval_scale)


def _target_var(g: Any, noise: bool) -> Any:
    """The targets' variance of log bandwidth; without `noise`, that of the mean (one run's scatter taken out)."""
    return g.target_var() - (0.0 if noise else (g.sigma * g.scale) ** 2)


def _mean_width(gs: Sequence[Any], wsum: float, noise: bool = True) -> float:
    """The weighted geometric mean over the targets' options of their 90% intervals' high/low (each at most
    WIDE): exp of the mean of 2 * 1.645 * sd of log bandwidth."""
    return math.exp(sum(float((g.weight * _log_width(_target_var(g, noise))).sum()) for g in gs) / wsum)


def _wide_share(gs: Sequence[Any], wsum: float) -> float:
    """The weighted share of the targets' options whose interval of the mean is wider than WIDE."""
    return sum(float((g.weight * (_log_width(_target_var(g, False)) >= math.log(WIDE))).sum()) for g in gs) / wsum


def _each_width(gs: Sequence[Any]) -> list[float]:
    """Each option's interval of the mean, high/low."""
    import numpy as np
    return [float(v) for g in gs for v in np.exp(_log_width(_target_var(g, False)))]


def _random_designs(groups: Sequence[Any], wsum: float, n_grid: int, budget: int,
                    seed: int) -> tuple[list[float], list[float], list[float]]:
    """Mean width, width of the mean and wide share after `budget` distinct random grid points (as the plan's own
    are distinct), for RANDOM_TRIALS draws (the groups themselves are left as they are)."""
    rnd = random.Random(seed)
    trials, post_trials, wide_trials = [], [], []
    for _ in range(RANDOM_TRIALS):
        gs = [replace(g, cov=g.cov.copy(), measured=set(g.measured)) for g in groups]
        for i in rnd.sample(range(n_grid), min(budget, n_grid)):
            for g in gs:
                g.add(i)
        trials.append(_mean_width(gs, wsum))
        post_trials.append(_mean_width(gs, wsum, noise=False))
        wide_trials.append(_wide_share(gs, wsum))
    return trials, post_trials, wide_trials


def plan_for(kb: Any, system: str | None, center: Center | None, budget: int, *, filesystem: str | None = None,
             max_nodes: int | None = None, rpn_max: int | None = None, objective: str = "options") -> BenchPlan:
    """The plan for a system of the KB: its production workloads (else the default targets) on `filesystem`
    (default: the file system jobs use unless told otherwise)."""
    from ..advise.candidates import default_filesystem
    from ..advise.fits import load_system_runs, system_evidence, system_fits
    from ..center import resolve_center
    from ..kb import RunFilter
    if budget < 1:
        raise UsageError(f"--budget must be at least 1, got {budget}")
    if max_nodes is not None and max_nodes < 1:
        raise UsageError(f"--max-nodes must be at least 1, got {max_nodes}")
    if rpn_max is not None and rpn_max < 1:
        raise UsageError(f"--ranks-per-node must be at least 1, got {rpn_max}")
    if objective not in OBJECTIVES:
        raise UsageError(f"--objective: {objective!r} is not one of {', '.join(OBJECTIVES)}")
    if center is None:
        center = resolve_center(system, None, kb)
    system = center.name
    rpn = center.ranks_per_node or DEFAULT_RPN      # what the center's jobs run on a node
    if filesystem:
        fs = next((f for f in center.filesystems if f.name.lower() == filesystem.lower()), None)
        if fs is None:
            raise UsageError(f"{system} has no file system {filesystem!r} (known: "
                             f"{', '.join(f.name for f in center.filesystems)})")
    else:
        fs = default_filesystem(center)
    # the production records of jobs (job records, `diagnose --record`, `kb import`); not the runs an archive scan
    # made of a center's whole Darshan archive
    from ..kb.queries import archived_sources
    archived = archived_sources(kb, system)
    prod = [r for r in kb.runs(RunFilter(system=system, kind="production"))
            if r.provenance.source_hash not in archived]
    targets = production_targets(prod, rpn=rpn)
    source = "production"
    if not targets:
        source = "default"
        fits = system_fits(kb, system, center)
        measured = max((f.clients_max for k, f in fits.items() if k[1] == fs.name and math.isfinite(f.clients_max)),
                       default=1)
        top = max_nodes or int(2 * measured)
        targets = default_targets(top, rpn=rpn)
    else:
        fits = system_fits(kb, system, center)
        if max_nodes is not None:
            targets = [t for t in targets if t.workload.nodes <= max_nodes] or targets
    runs = load_system_runs(kb, system)
    ev = system_evidence(kb, system, center) if fits else None
    return make_plan(system, center, fs, fits, runs, targets, budget, target_source=source, max_nodes=max_nodes,
                     rpn_max=rpn_max, objective=objective, evidence=ev, comparisons=kb.comparisons(system))


# ---- the sweep file ---------------------------------------------------------------------------------------------

def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(str(v))          # a TOML basic string: JSON's escapes are TOML's


def sweep_text(plan: BenchPlan, *, directory: str, transfer_size: str = "1MiB", block_size: str = "1GiB",
               reps: int = 3, center: str | None = None, slurm: dict[str, Any] | None = None,
               launcher: str = "mpiexec") -> str:
    """The plan as a sweep TOML that `ioadvise bench sweep` runs (one [[config]] per point)."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", f"plan-{plan.system}").strip("-") or "plan"
    last = plan.proposals[-1]
    lines = [f"# `ioadvise bench plan` for {plan.system} ({plan.filesystem}): the {len(plan.proposals)} benchmark "
             f"point(s) expected to narrow the mean 90% interval",
             f"# of the mean bandwidth at the {plan.target_source} workloads' options from {plan.posterior_now:.2f}x "
             f"to {last.posterior_after:.2f}x (high/low; {plan.posterior_random:.2f}x with random points).",
             f"name = {_toml(name)}", 'kind = "data"', f"launcher = {_toml(launcher)}", "", "[base]",
             f"transfer_size = {_toml(transfer_size)}", f"block_size = {_toml(block_size)}", f"reps = {reps}",
             f"ops = {_toml(','.join(plan.ops))}", f"dir = {_toml(directory)}", f"system = {_toml(plan.system)}",
             f"filesystem = {_toml(plan.filesystem)}"]
    if center:
        lines.append(f"center = {_toml(center)}")
    for k, p in enumerate(plan.proposals):
        b = p.point
        lines += ["", f"[[config]]   # {k + 1}: expected mean interval after it {p.posterior_after:.2f}x",
                  f"nodes = {b.nodes}", f"ranks = {b.ranks}", f"api = {_toml(b.api.lower())}",
                  f"layout = {_toml(b.layout)}"]
        if b.collective is not None:
            lines.append(f"collective = {_toml(b.collective)}")
        if b.stripe_count is not None:
            lines += [f"stripe_count = {b.stripe_count}", f"stripe_size = {b.stripe_size or 0}"]
    slurm = {k: v for k, v in (slurm or {}).items() if v not in (None, "")}
    if slurm:
        lines += ["", "[slurm]"] + [f"{k} = {_toml(v)}" for k, v in slurm.items()]
    return "\n".join(lines) + "\n"


def default_dir(fs: FileSystem) -> str | None:
    """A directory on the file system for the benchmarks: its mount with its variables ($USER) expanded from
    the environment, as the shell expands them in every command ioadvisor prints, + `ioadvise-plan`; None
    when the center file gives no mount. UsageError naming the variable when one is not set."""
    if not fs.mount:
        return None
    m = os.path.expandvars(fs.mount)
    unset = next(pattern_vars(m), None)
    if unset:
        var = unset[0]
        how = " (export USER=$(id -un))" if var == "USER" else ""
        raise UsageError(f"the mount of {fs.name}, {fs.mount}, uses ${var}, which is not set here: set it{how} "
                         f"or give --dir")
    return os.path.join(m, "ioadvise-plan")


__all__ = ["BenchPlan", "BenchPoint", "Proposal", "Target", "candidate_grid", "default_targets", "make_plan",
           "plan_for", "production_targets", "sweep_text"]
