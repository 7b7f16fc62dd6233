"""Ranking predicted candidates: an option is kept out only when the best one beats it by at least `MIN_GAIN`
with probability `CONFIDENCE` or more (paired posterior draws); among the options the data cannot tell apart,
published comparisons and the runs near the job decide, then the default is kept, else the cheapest wins (fewest
OSTs, no staging, fewest changes). Without predictions, published comparisons, a stripe-count rule and the cost
order them. Pure."""
from __future__ import annotations

import math
from typing import Any, Mapping

from ..model.run import norm_api
from ..model.types import Config, FileSystem, Workload
from .candidates import Candidate, visible_settings
from .explain import RUNS_DECIDED

TOLERANCE = 0.05           # candidates within 5% of the best are treated as equally fast (no posterior draws)
MIN_GAIN = 0.10            # a gain smaller than 10% is not worth a change
CONFIDENCE = 0.8           # ... and a larger one counts only when the posterior gives it this probability


def _measured_stripes(c: Candidate) -> bool:
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


def cmp_applies(cmp: Mapping[str, Any], w: Workload, c: Candidate) -> int:
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


def cost_of(c: Candidate, w: Workload, base: Config) -> float:
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


def _no_numbers_stripes(w: Workload, fs: FileSystem, layout: str) -> int:
    """Stripe count rule used when no measured run can rank the choices: one stripe per writing node for a shared
    file (capped at the OST count); file per process keeps one stripe per file."""
    if layout != "shared" or w.metadata_heavy:
        return 1
    return max(1, min(fs.ost_count or 1, w.nodes))


def _explain_choice(chosen: Candidate, predicted: list[Candidate], pick: int, dflt: int | None,
                    close_c: list[Candidate], w: Workload, draws_of: Any) -> None:
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


def order_predicted(cands: list[Candidate], predicted: list[Candidate], base_cfg: Config,
                    w: Workload) -> list[Candidate]:
    """The candidates best first when some are predicted: the choice and those too close to tell from it,
    then the other predicted ones by value, then the unpredicted ones."""
    base_key = visible_settings(base_cfg)
    dflt = next((i for i, c in enumerate(predicted) if c.tier is None and visible_settings(c.config) == base_key), None)

    def draws_of(i: int) -> list[float]:
        c = predicted[i]
        if not c.draws and c.fit is not None and c.point is not None:
            c.draws = c.bounded(c.fit.draws(c.point))
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


def order_by_rules(cands: list[Candidate], w: Workload) -> list[Candidate]:
    """The candidates best first when none is predicted: by score, closeness to the rule's stripe count, cost."""
    def rule_distance(c: Candidate) -> float:
        if c.config.stripe_count is None:
            return 0.0
        target = _no_numbers_stripes(w, c.place, c.config.layout)
        return abs(math.log2(c.config.stripe_count) - math.log2(target))
    return sorted(cands, key=lambda c: (-c.score, rule_distance(c), c.cost))


def _describe(cfg: Config) -> str:
    parts = [cfg.tier or cfg.filesystem, cfg.layout]
    if cfg.stripe_count is not None:
        parts.append(f"{cfg.stripe_count} stripe(s)")
    if cfg.collective is not None:
        parts.append("collective" if cfg.collective else "independent")
    return ", ".join(parts)


def _ranked_by_runs(chosen: Candidate, other: Candidate) -> bool:
    """Whether the runs near the job, not the model, put `chosen` before `other` (choose's `standing`)."""
    a, b = chosen.standing, other.standing
    return (a is not None and b is not None and a[0] == b[0] and a[1] is not None
            and (b[1] is None or b[1] * (1 + MIN_GAIN) < a[1]))


def _settle(a: Candidate, b: Candidate, w: Workload) -> str:
    """The measurement that would tell two close options apart."""
    what = []
    for cfg in (a.config, b.config):
        what.append(_describe(cfg))
    return (f"a benchmark of {w.nodes} node(s) x {w.ranks_per_node} rank(s) {w.op} with {what[0]} and with "
            f"{what[1]} would settle it (ioadvise bench run)")
