"""The advice's one decision: which of the weighed options to advise, and why (`decide`). Pure.

Input: the options (each a setting on a place, with its predicted value bounded by the runs near the job, or
None), the runs near the job's ranking of its stripe count (`standing`), the published comparisons and the
posterior's draws. Output: an immutable `Decision`: the choice, the options it cannot tell apart from it, every
option best first, and the grounds that decided, in order. `advise`, `kb validate --sweeps`, `bench plan`, the
guide's decision table and diagnose's stripe advice reach this function alone (through `engine.assess`);
`explain` turns a Decision into words and decides nothing.

The rule, in order:
1. Options without evidence are not offered: a stripe count other than the default where the fit's runs never
   varied striping (its number would be the model's prior alone), unless the user pinned the stripe count.
2. Where options are predicted: the best predicted (cheapest on ties) is the first choice. An option is kept out
   only when the best beats it by at least `MIN_GAIN` with probability `CONFIDENCE` or more (paired posterior
   draws); such options are `close`. A published comparison's better option replaces a close best.
3. Evidence first: where the runs near the job (`Weighed.near`: same file system, op, API class, layout and
   ranks-per-node family; the neighbouring node counts, the nearest volume per rank) measured two or more of the
   best's group's stripe counts, they choose among the counts they measured: the one they rank best (`standing`;
   the cheapest within `RUNS_TOLERANCE` of it), whatever the model predicts. A count they never measured stays
   only where it lies outside the measured counts and the model predicts it measurably faster than the runs'
   choice (between two measured counts the model can only interpolate).
4. The runs near the job also rank options of other groups (another layout or mode) measured at the same node
   counts: one measured more than `ACROSS_GAIN` faster replaces the choice; those measured more than
   `ACROSS_GAIN` slower are dropped.
5. The default is kept when it is close and the runs did not rank the choice above it; else the cheapest option
   within `TOLERANCE` of the best (one its fit measured before one only the model's curve reaches). Where those
   options are of two groups the runs never measured at their own stripe count at a common node count, the runs
   near the job measured at other stripe counts break the tie: the group they measured more than `ACROSS_GAIN`
   faster at the same node and stripe counts is kept. A change predicted slower than the default is not advised
   unless the runs near the job chose it.
6. Where nothing is predicted: published comparisons, then the stripe-count rule (`rule_stripes`), then the cost.
"""
from __future__ import annotations

import math

from ..frozen import NamedTuple
from ..model.run import norm_api
from ..model.types import Config, FileSystem, Tier, Workload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping, Sequence

TOLERANCE = 0.05           # options within 5% of the best are treated as equally fast (no posterior draws)
MIN_GAIN = 0.10            # a gain smaller than 10% is not worth a change
CONFIDENCE = 0.8           # ... and a larger one counts only when the posterior gives it this probability
STRIPE_COST = 0.02         # the cost of one stripe: OSTs taken from other jobs, more lock traffic
RUNS_TOLERANCE = 0.05      # stripe counts the runs near the job rank within 5% of their best are as good: the
                           # cheapest of them is advised
ACROSS_GAIN = 0.05         # options of other groups the runs measured at the same node counts: one measured more
                           # than 5% faster replaces the choice, and those measured more than 5% slower are dropped


class Weighed(NamedTuple):
    """One option as the decision sees it."""

    config: Config
    place: FileSystem
    tier: Tier | None = None
    value: float | None = None                 # predicted, within the bounds the runs near the job allow
    stripes_measured: tuple[float, ...] = ()    # the stripe counts its fit's runs measured
    bandwidth: bool = True                      # a bandwidth (not an operation rate) fit
    standing: tuple | None = None               # (group, ratio or None): the runs near the job rank its stripes
    near: tuple = ()                            # what the runs near the job measured (evidence.Near per node count)
    stripes: float | None = None                # its stripe count as the runs count it (0.0: not striped)


class Ground(NamedTuple):
    """One step of a decision. `kind`: `comparison` (a published comparison chose `chosen` over `other`), `runs`
    (the runs near the job ranked `chosen` `ratio` = its standing over `other`'s, None: `other` unmeasured
    there), `default` (no measurable difference from the faster `other`: the default kept), `cheaper` (the same,
    the cheaper option kept), `gain` (predicted `ratio` x the default `other`, a gain of MIN_GAIN or more with
    `probability`), `not-slower` (the choice `other` was predicted slower than the default, which is kept),
    `unevidenced` (stripe counts `dropped` kept out: no run varied striping), `rule` (nothing predicted: the
    stripe-count rule gave `ratio` stripes), `fastest` (the best predicted)."""

    kind: str
    chosen: int
    other: int | None = None
    ratio: float | None = None
    probability: float | None = None
    comparison: Mapping[str, Any] | None = None
    dropped: tuple[int, ...] = ()


class Decision(NamedTuple):
    choice: int                              # index into the options
    tied: tuple[int, ...]                    # the options it cannot tell apart from the choice
    order: tuple[int, ...]                   # every option offered, best first
    grounds: tuple[Ground, ...]              # what decided, in order
    applied: tuple[tuple[Mapping[str, Any], ...], ...]   # per option: the published comparisons that apply
    dropped: tuple[int, ...] = ()            # options kept out for want of evidence
    predicted: bool = True                   # whether predictions decided (else comparisons and rules)


def gain_probability(better: list[float], worse: list[float], gain: float = MIN_GAIN) -> float:
    """P(better >= (1 + gain) x worse) over paired posterior draws (the same parameter draw for both)."""
    pairs = [(a, b) for a, b in zip(better, worse) if b > 0]
    if not pairs:
        return 0.0
    return sum(1 for a, b in pairs if a >= (1 + gain) * b) / len(pairs)


def decide(w: Workload, options: Sequence[Weighed], base: Config, comparisons: Sequence[Mapping[str, Any]] = (),
           draws: Callable[[int], list[float]] | None = None, *, pinned_stripes: bool = False,
           defaults: Mapping[str, int | None] | None = None) -> Decision:
    """The decision among `options` for workload `w` (see the module docstring). `base` is what the job gets
    without advice; `draws(i)`, option i's bounded posterior draws (evaluated only for the options compared);
    `defaults`, each file system's default stripe count."""
    from .candidates import visible_settings
    applied = tuple(tuple({**c, "_sign": s} for c in comparisons if (s := cmp_applies(c, w, o.config, o.place)))
                    for o in options)
    scores = [sum(a["_sign"] for a in ap) for ap in applied]
    costs = [cost_of(o, w, base) for o in options]
    predicted = [i for i, o in enumerate(options) if o.value is not None]
    dropped: tuple[int, ...] = ()
    if predicted and not pinned_stripes:
        kept = [i for i in predicted if not _no_stripe_evidence(options[i], (defaults or {}).get(o_fs(options[i])))]
        if kept and len(kept) < len(predicted):
            dropped = tuple(i for i in predicted if i not in kept)
            predicted = kept
    offered = [i for i in range(len(options)) if i not in dropped]
    if not predicted:
        order = sorted(offered, key=lambda i: (-scores[i], _rule_distance(options[i], w), costs[i]))
        return Decision(choice=order[0], tied=(order[0],), order=tuple(order),
                        grounds=(Ground("rule", order[0], ratio=rule_stripes(w, options[order[0]].place,
                                                                            options[order[0]].config.layout)),),
                        applied=applied, dropped=dropped, predicted=False)
    base_key = visible_settings(base)
    dflt = next((i for i in predicted if options[i].tier is None and visible_settings(options[i].config) == base_key),
                None)
    cache: dict[int, list[float]] = {}

    def draws_of(i: int) -> list[float]:
        if i not in cache:
            cache[i] = list(draws(i)) if draws is not None else []
        return cache[i]

    sub = predicted
    pick, close, grounds = _choose_among(options, sub, costs, scores, draws_of, dflt)
    if dropped:
        grounds = grounds + (Ground("unevidenced", pick, dropped=dropped),)
    tied = [pick] + sorted((i for i in close if i != pick), key=lambda i: (-scores[i], costs[i], -options[i].value))
    rest = sorted((i for i in predicted if i not in close and i != pick),
                  key=lambda i: (-options[i].value, -scores[i], costs[i]))
    unpredicted = sorted((i for i in offered if options[i].value is None), key=lambda i: (-scores[i], costs[i]))
    return Decision(choice=pick, tied=tuple(tied), order=tuple(tied + rest + unpredicted), grounds=grounds,
                    applied=applied, dropped=dropped)


def o_fs(o: Weighed) -> str:
    return o.config.filesystem


def _choose_among(options: Sequence[Weighed], sub: list[int], costs: list[float], scores: list[int],
                  draws_of: Callable[[int], list[float]], dflt: int | None) -> tuple[int, list[int], tuple]:
    """(the choice, the options close to it, the grounds) among the predicted options `sub` (indices)."""
    values = [options[i].value for i in sub]
    loc = {i: k for k, i in enumerate(sub)}
    k, close_k = choose(values, lambda k: draws_of(sub[k]), [costs[i] for i in sub], [scores[i] for i in sub],
                        stripes=[options[i].config.stripe_count for i in sub],
                        default=loc.get(dflt) if dflt is not None else None,
                        measured=[_measured_stripes(options[i]) for i in sub],
                        standing=[options[i].standing for i in sub],
                        at=[measured_at(options[i]) for i in sub],
                        inside=[between_measured(options[i]) for i in sub],
                        table=[measured_table(options[i]) for i in sub])
    pick, close = sub[k], [sub[j] for j in close_k]
    if dflt is not None and options[dflt].value > options[pick].value and \
            not _runs_chose(options[pick], options[dflt]) and \
            not ranked_by_runs(options[pick].standing, options[dflt].standing):
        # a change predicted slower than the default is never advised, whatever else ranked it first
        return dflt, sorted(set(close) | {dflt}), (Ground("not-slower", dflt, other=pick),)
    return pick, close, _grounds(options, sub, pick, close, dflt, scores, draws_of)


def _grounds(options: Sequence[Weighed], sub: list[int], pick: int, close: list[int], dflt: int | None,
             scores: list[int], draws_of: Callable[[int], list[float]]) -> tuple[Ground, ...]:
    """What decided the choice `pick`, over the fastest prediction or the default."""
    chosen = options[pick]
    top = max(sub, key=lambda i: options[i].value)
    out: list[Ground] = []
    if scores[pick] > scores[top] and pick in close:
        out.append(Ground("comparison", pick, other=top, ratio=options[top].value / chosen.value))
    other = dflt if dflt is not None and dflt != pick else top
    if other != pick and ranked_by_runs(chosen.standing, options[other].standing):
        b = options[other].standing[1]
        out.append(Ground("runs", pick, other=other, ratio=None if b is None else chosen.standing[1] / b))
    elif pick != top and top in close and options[top].value > chosen.value:
        out.append(Ground("default" if pick == dflt else "cheaper", pick, other=top,
                          ratio=options[top].value / chosen.value))
    elif dflt is not None and dflt != pick:
        out.append(Ground("gain", pick, other=dflt, ratio=chosen.value / options[dflt].value,
                          probability=gain_probability(draws_of(pick), draws_of(dflt))))
    if not out:
        out.append(Ground("fastest", pick))
    return tuple(out)


def ranked_by_runs(a: tuple | None, b: tuple | None) -> bool:
    """Whether the runs near the job, not the model, put standing `a` before standing `b`."""
    return (a is not None and b is not None and a[0] == b[0] and a[1] is not None
            and (b[1] is None or b[1] * (1 + MIN_GAIN) < a[1]))


def _runs_chose(o: Weighed, dflt: Weighed) -> bool:
    """Whether the runs near the job measured the option's stripe count among others and ranked it above the
    default's (or did not measure the default's there)."""
    if o.standing is None or o.standing[1] is None:
        return False
    d = dflt.standing
    return d is None or d[0] != o.standing[0] or d[1] is None or o.standing[1] > d[1]


def _measured_stripes(o: Weighed) -> bool:
    """Whether an option's stripe count is one its fit's runs measured (or it sets none)."""
    if o.config.stripe_count is None or not o.stripes_measured:
        return True
    return float(o.config.stripe_count) in o.stripes_measured


def _no_stripe_evidence(o: Weighed, default: int | None) -> bool:
    """A stripe count neither the default nor measured, on a file system whose runs never varied striping: the
    model's number for it would come from its prior alone, so it is not offered as a measured gain."""
    if o.value is None or o.config.stripe_count is None or not o.bandwidth:
        return False
    return (len(o.stripes_measured) < 2 and o.config.stripe_count != (default or 1)
            and float(o.config.stripe_count) not in o.stripes_measured)


def choose(values: list[float], draws: Any, costs: list[float], scores: list[int] | None = None, *,
           stripes: list[int | None] | None = None, default: int | None = None,
           measured: list[bool] | None = None, standing: list[tuple | None] | None = None,
           at: list[Mapping[float, float]] | None = None, inside: list[bool] | None = None,
           table: list[Mapping[tuple, float]] | None = None) -> tuple[int, list[int]]:
    """The option to advise among predicted ones (step 2 of the module docstring), and the indices found close
    to the best. `draws` gives each option's values under the posterior's parameter draws (a list, or a function
    of the index: only the options compared are evaluated)."""
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
        tier, ranked_best = _runs_rank_alike(tier, best, standing, is_close, values, costs,
                                             inside or [False] * n)
        if ranked_best != best:
            best = ranked_best
            close.add(best)
    if at and at[best]:
        tier, across = _runs_across(tier, best, at)
        if across != best:
            best = across
            close.add(best)
    runs_over_default = default is not None and default != best and at is not None and (
        ranked_by_runs(standing[best] if standing else None, standing[default] if standing else None)
        or (_across_ratio(at, best, default) or 0.0) > 1 + ACROSS_GAIN)
    if default is not None and default in tier and not runs_over_default and \
            (default == best or is_close(best, default)):
        close.add(default)
        return default, sorted(close)
    plateau = [i for i in tier if values[i] >= values[best] * (1 - TOLERANCE)]
    if measured:
        plateau = [i for i in plateau if measured[i]] or plateau
    if table and standing:
        plateau = _runs_break_tie(plateau, standing, table, at)
    pick = min(plateau, key=lambda i: (costs[i], stripes[i] or 0, -values[i]))
    if pick != best and is_close(best, pick):
        close.add(pick)
    return pick, sorted(close)


def _runs_rank_alike(tier: list[int], best: int, standing: list[Any], is_close: Any, values: list[float],
                     costs: list[float], inside: list[bool]) -> tuple[list[int], int]:
    """`choose`'s options once the runs near the job have ranked those of `best`'s group (same file system, op,
    mode and layout), and the best of them. Evidence first: where the runs near the job measured two or more of
    the group's stripe counts, they choose among those (the count they rank best; within `RUNS_TOLERANCE` of it,
    the cheapest), whatever the model predicts; a count they never measured near the job stays only where the
    model predicts it measurably faster than the runs' choice (the model fills gaps, it does not overrule the
    runs)."""
    group = standing[best][0]
    same = [i for i in tier if standing[i] is not None and standing[i][0] == group]
    measured = [i for i in same if standing[i][1] is not None]
    if not measured:
        return tier, best
    top = max(standing[i][1] for i in measured)
    ref = min((i for i in measured if standing[i][1] * (1 + RUNS_TOLERANCE) >= top),
              key=lambda i: (costs[i], -standing[i][1]))
    kept = [ref] + [i for i in same if standing[i][1] is None and not inside[i]
                    and not is_close(i, ref)]
    tier = [i for i in tier if i not in same or i in kept]
    return tier, max(kept, key=lambda i: (values[i], -costs[i]))


def between_measured(o: Weighed) -> bool:
    """Whether the option's stripe count lies between two stripe counts the runs near the job measured (where
    the model can only interpolate between them, never beat the better one)."""
    if o.stripes is None:
        return False
    counts = [m[0] for side in o.near for m in side.measured if len(side.measured) > 1]
    return bool(counts) and min(counts) < o.stripes < max(counts)


def measured_at(o: Weighed) -> dict[float, float]:
    """What the runs near the job measured of the option's own stripe count: {neighbouring node count: median}."""
    out = {}
    for side in o.near:
        med = {m[0]: m[1] for m in side.measured}
        s = (o.stripes or 0.0) if min(med) > 0 else 0.0
        if s in med:
            out[side.nodes] = med[s]
    return out


def _runs_across(tier: list[int], best: int, at: list[Mapping[float, float]]) -> tuple[list[int], int]:
    """(the options left, the best) once the runs near the job have ranked `best` against the options of other
    groups (another layout, mode or place) measured at the same neighbouring node counts: one they measured more
    than ACROSS_GAIN faster than `best` there (geometric mean over the common node counts) replaces it, and the
    options they measured more than ACROSS_GAIN slower than the new best are dropped."""
    pick = best
    for i in tier:
        r = _across_ratio(at, i, pick) if i != pick and at[i] else None
        if r is not None and r > 1 + ACROSS_GAIN:
            pick = i
    return [i for i in tier if (_across_ratio(at, pick, i) or 1.0) <= 1 + ACROSS_GAIN], pick


def _across_ratio(at: Sequence[Mapping[float, float]], i: int, j: int) -> float | None:
    """How much faster the runs near the job measured option i than option j at the node counts where both were
    measured (geometric mean); None where none."""
    common = [n for n in at[i] if n in at[j]]
    if not common:
        return None
    return math.exp(sum(math.log(at[i][n] / at[j][n]) for n in common) / len(common))


def cmp_applies(cmp: Mapping[str, Any], w: Workload, cfg: Config, place: FileSystem | None = None) -> int:
    """+1 if the option has the better setting of a published comparison, -1 the worse, 0 otherwise."""
    op = cmp.get("op")
    if w.metadata_heavy:
        if op not in ("metadata", "file_create", "open_create"):
            return 0
    elif op != w.op:
        return 0
    factor, better, worse = cmp.get("factor"), str(cmp.get("better")), str(cmp.get("worse"))
    if factor == "tier":
        names = {cfg.filesystem.lower(), (cfg.tier or "").lower(), place.type if place else ""}
        return 1 if better.lower() in names else -1 if worse.lower() in names else 0
    fsname = cmp.get("filesystem")
    if fsname and fsname.lower() != cfg.filesystem.lower():
        return 0
    return _setting_sign(factor, better, worse, cfg, w)


def _setting_sign(factor: Any, better: str, worse: str, cfg: Config, w: Workload) -> int:
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
        b, wv, sc = int(better), int(worse), cfg.stripe_count
        if sc == wv:
            return -1
        return 1 if (b > wv and sc >= b) or (b < wv and sc <= b) or sc == b else 0
    if factor == "stripe_size" and cfg.stripe_size is not None:
        return 1 if cfg.stripe_size == int(better) else -1 if cfg.stripe_size == int(worse) else 0
    return 0


def cost_of(o: Weighed, w: Workload, base: Config) -> float:
    """How much an option asks of the user and the shared system; lower is cheaper."""
    cfg = o.config
    cost = 0.0
    if cfg.stripe_count:
        cost += STRIPE_COST * cfg.stripe_count
    if cfg.stripe_size and base.stripe_size and cfg.stripe_size != base.stripe_size:
        cost += 0.05
    if o.tier is not None:
        cost += 0.5 + (1.0 if w.lifetime == "after-job" else 0.0)   # request the tier; stage data out
    if cfg.filesystem != base.filesystem:
        cost += 0.3
    if cfg.collective != base.collective:
        cost += 1.0                           # a code change
    if cfg.layout != base.layout:
        cost += 0.2 if w.layout == "any" else 5.0
    cost += 0.05 * sum(1 for k in cfg.hints if k.startswith("romio_cb_"))
    return cost


def rule_stripes(w: Workload, fs: FileSystem, layout: str) -> int:
    """The stripe count where no measured run can rank the choices: one stripe per writing node for a shared
    file (capped at the OST count); file per process keeps one stripe per file."""
    if layout != "shared" or w.metadata_heavy:
        return 1
    return max(1, min(fs.ost_count or 1, w.nodes))


def _rule_distance(o: Weighed, w: Workload) -> float:
    if o.config.stripe_count is None:
        return 0.0
    target = rule_stripes(w, o.place, o.config.layout)
    return abs(math.log2(max(o.config.stripe_count, 1)) - math.log2(target))


def measured_table(o: Weighed) -> dict[tuple, float]:
    """Everything the runs near the job measured of the option's group: {(node count, stripe count): median}."""
    return {(side.nodes, m[0]): m[1] for side in o.near for m in side.measured}


def _runs_break_tie(plateau: list[int], standing: Sequence[tuple | None], table: Sequence[Mapping],
                    at: Sequence[Mapping] | None) -> list[int]:
    """The options `plateau` the model cannot tell apart, once the runs near the job have broken a tie between
    two groups (layouts, modes) they never measured at the same node count at the options' own stripe count (there
    `_runs_across` ranks them): where they measured both groups at the same node and stripe counts, the group they
    measured more than ACROSS_GAIN faster there (geometric mean over those settings) is kept."""
    if any(standing[i] is None for i in plateau):
        return plateau
    by: dict[Any, list[int]] = {}
    for i in plateau:
        by.setdefault(standing[i][0], []).append(i)
    if len(by) != 2:
        return plateau
    a, b = sorted(by, key=str)
    if at and any(set(at[i]) & set(at[j]) for i in by[a] for j in by[b]):
        return plateau
    ta, tb = table[by[a][0]], table[by[b][0]]          # one table per group: the runs of its layout and mode
    common = [k for k in ta if k in tb and ta[k] > 0 and tb[k] > 0]
    if not common:
        return plateau
    r = math.exp(sum(math.log(ta[k] / tb[k]) for k in common) / len(common))
    if r > 1 + ACROSS_GAIN:
        return by[a]
    if r < 1 / (1 + ACROSS_GAIN):
        return by[b]
    return plateau
