"""Reasons in plain language, evidence with citations, and the commands that apply a configuration."""
from __future__ import annotations

import math
from types import MappingProxyType

from ..frozen import NamedTuple
from ..model.types import Center, Config, Evidence, Option, Prediction, Workload
from ..model.units import format_range, format_rate, format_size
from ..lustre import ALL_OSTS, every_ost
from ..predict import INF
from ..predict.evidence import run_stripes
from .. import mpiio
from ..mpiio.render import CWD
from ..errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

# how a decision the runs near the job made (not the model) begins, in the advice's reasons
RUNS_DECIDED = "the runs measured nearest this job (neighbouring node counts, same settings) rank"

_FACTOR_WORDS = {
    "layout": "file layout", "api": "I/O interface", "cb_write": "two-phase collective buffering for writes",
    "cb_read": "two-phase collective buffering for reads", "stripe_count": "stripe count",
    "stripe_size": "stripe size", "tier": "file system",
}


_fmt = format_rate


def _comparison_evidence(cmp: Mapping[str, Any]) -> Evidence:
    fs = f" on {cmp['filesystem']}" if cmp.get("filesystem") else ""
    what = _FACTOR_WORDS.get(cmp.get("factor"), cmp.get("factor"))
    return Evidence(run_id=None, citation=cmp.get("citation") or "", source=cmp.get("source") or "",
                    summary=f"{cmp['system']}{fs}, {cmp['op']}: {what} {cmp['better']} beats {cmp['worse']} "
                            f"({cmp.get('condition') or 'as stated'})")


def _run_evidence(run: Any, note: str = "") -> Evidence:
    p = run.provenance
    parts = [run.op, run.api or "", run.layout or "", f"{run.nodes} node(s)" if run.nodes else "",
             f"{run.ranks} rank(s)" if run.ranks else "", f"{run.stripe_count} stripe(s)" if run.stripe_count else "",
             note]
    return Evidence(run_id=run.id, citation=p.citation or p.command or "", source=p.source or "", value=run.value,
                    unit=run.unit, summary=", ".join(x for x in parts if x))


def _nearest_first(runs: list[Any], c: Any, w: Workload) -> list[Any]:
    """The fit's runs, those most like the job first: its layout, its API class, then the nearest node count and
    ranks per node."""
    from ..predict import io_class
    klass = c.point.klass if c.point is not None else None

    def key(r: Any) -> tuple:
        rpn = r.ranks / r.nodes if r.ranks and r.nodes else None
        return (r.layout not in (c.config.layout, None), io_class(r.api, r.collective) != klass,
                _log_gap(r.nodes, w.nodes) if r.nodes else math.inf, _log_gap(rpn, w.ranks_per_node))
    return sorted(runs, key=key)


def _option_evidence(c: Any, w: Workload, runs: Mapping[str, Any], deciding: "Deciding | None") -> list[Evidence]:
    """The runs an option rests on, nearest first: where the runs near the job decided, those runs (each that
    disagrees with the option marked); else the runs of its fit most like the job."""
    if deciding is not None and deciding.runs:
        return [_run_evidence(r, f"faster than this setting's runs there ({deciding.against[r.id][0]:.2f}x their "
                                 f"median)" if r.id in deciding.against else "near this job")
                for r in deciding.runs[:12]]
    if not c.fit:
        return []
    return [_run_evidence(r) for r in _nearest_first([runs[i] for i in c.fit.run_ids if i in runs], c, w)[:12]]


def _log_gap(a: float | None, b: float | None) -> float:
    return abs(math.log(a / b)) if a and b else 0.0


class Deciding(NamedTuple):
    """The runs near the job that an option's decision read, nearest first; those that disagree with it ({run id:
    (its value over the option's median at its node count, that median)}); and whether the option's own stripe
    count is among them."""

    runs: tuple[Any, ...] = ()
    against: Mapping[str, tuple[float, float]] = MappingProxyType({})
    own_measured: bool = False


def deciding_runs(c: Any, w: Workload, runs: Sequence[Any], osts: int | None = None,
                  dflt: int | None = None) -> Deciding:
    """The runs near the job that the option's decision read (`c.near`: per neighbouring node count, each stripe
    count's range, of the job's file system, op, API class, layout and family), found among `runs` by node count,
    family, volume, stripe count and a value inside that range; nearest first (node count, then volume per rank,
    the option's own stripe count first). A run of another stripe count disagrees where it measured more than
    `policy.RUNS_TOLERANCE` faster than the option's own runs' median at its node count."""
    from .policy import RUNS_TOLERANCE
    from ..predict import io_class
    from ..predict.evidence import FAMILY_SPAN, VOLUME_SPAN, observe
    if not c.near or c.fit is None or c.point is None:
        return Deciding()
    sides = {side.nodes: side for side in c.near}
    picked = []
    for r in runs:
        o = observe(r, osts, dflt)
        side = sides.get(o.nodes) if o is not None else None
        if side is None or r.unit != c.fit.unit or io_class(r.api, r.collective) != c.point.klass:
            continue
        if _log_gap(o.rpn, w.ranks_per_node) > math.log(FAMILY_SPAN) + 1e-9 or \
                _log_gap(o.volume, side.volume) > math.log(VOLUME_SPAN) + 1e-9:
            continue
        m = next((m for m in side.measured if m[0] == o.stripes), None)
        if m is not None and m[2] * (1 - 1e-9) <= r.value <= m[3] * (1 + 1e-9):
            picked.append((r, o.stripes, side, o.volume))
    own = c.point.stripes if c.point.striped and c.point.stripes else 0.0
    picked.sort(key=lambda x: (_log_gap(x[2].nodes, w.nodes), _log_gap(x[3], w.bytes_per_rank), x[1] != own,
                               -x[0].value))
    against = {}
    for r, s, side, _ in picked:
        med = {m[0]: m[1] for m in side.measured}
        mine = med.get(own if min(med) > 0 else 0.0)
        if mine and s != own and r.value > mine * (1 + RUNS_TOLERANCE):
            against[r.id] = (r.value / mine, mine)
    return Deciding(tuple(x[0] for x in picked), against, any(x[1] == own for x in picked))


def disagreement_words(c: Any, d: Deciding, osts: int | None = None, dflt: int | None = None) -> str | None:
    """The measured runs near the job that disagree with the option, named (at most three), or that none does;
    None where no run near the job measured the option's own stripe count."""
    unit = c.fit.unit if c.fit else "MiB/s"
    named = [r for r in d.runs if r.id in d.against][:3]
    if not named:
        return ("No run measured near this job is more than 5% faster than this setting's own runs at its node "
                "count." if d.own_measured else None)
    bits = [f"run {r.id} ({run_stripes(r, osts, dflt):g} stripe(s), {r.nodes} node(s)) measured "
            f"{_fmt(r.value, unit)}, {d.against[r.id][0]:.2f}x this setting's median there "
            f"({_fmt(d.against[r.id][1], unit)})" for r in named]
    more = len(d.against) - len(named)
    return ("Measured near this job and faster than this setting at the same node count: " + "; ".join(bits)
            + (f"; {more} more" if more > 0 else "") + ".")


def plan_for(cfg: Config, center: Center, w: Workload, mpi: str | None = None,
             mpi_version: str | None = None) -> mpiio.Plan:
    """The renderer's view of a configuration: where the job keeps its data, which MPI, what it does."""
    fs = center.filesystem(cfg.filesystem)
    tier = center.tier(cfg.tier) if cfg.tier else None
    persistent = fs if fs is not None and fs.persistent and not tier else next(
        (f for f in center.filesystems if f.persistent and f.mount), None)
    base = persistent.mount if persistent is not None and persistent.mount else CWD
    try:
        mpiio.path_fragment(base)
    except UsageError:
        base = CWD      # a mount pattern with variables the renderer does not expand
    flavour = mpi or center.mpi
    return mpiio.Plan(op=w.op, api=cfg.api, layout=cfg.layout, stripe_count=cfg.stripe_count,
                      stripe_size=cfg.stripe_size, striping_allowed=bool(fs and fs.stripable),
                      fs_type=fs.type if fs else None, hints=dict(cfg.hints), mpi=flavour,
                      mpi_version=mpi_version if mpi else center.mpi_version if flavour == center.mpi else None,
                      base=base, tier=cfg.tier, tier_mount=tier.mount if tier else None,
                      tier_request=tier.request if tier else None, stage=tier.stage if tier else True,
                      lifetime=w.lifetime, hdf5_alignment=cfg.hdf5_alignment, collective=cfg.collective)


def commands_for(cfg: Config, center: Center, w: Workload) -> dict[str, Any]:
    """The commands that apply a configuration (docs/advise.md): `text` for the center's MPI, `by_mpi` the same
    for every flavour, and the parts (`lfs`, `romio_hints_file`, per-flavour exports, staging, notes)."""
    plan = plan_for(cfg, center, w)
    by = mpiio.render_flavours(plan, tuple(dict.fromkeys((center.mpi, *mpiio.FLAVOURS))))
    main = by[center.mpi]
    out: dict[str, Any] = {
        "where": where_to_write(cfg, center, main),
        "text": main.text(), "lines": main.lines(), "lfs": main.lfs, "romio_hints_file": main.hints_file,
        "hints_applied": dict(main.hints),
        "request": main.request, "stage_in": list(main.stage_in), "stage_out": list(main.stage_out),
        "notes": list(main.notes), "h5py": dict(main.h5py), "h5py_collective": main.h5py_collective,
        "hdf5_c": list(main.hdf5_c), "default_mpi": center.mpi,
        "mpi_version": center.mpi_version, "by_mpi": {f: c.text() for f, c in by.items()},
    }
    for f, c in by.items():
        out[f] = list(c.env)
    return out


def where_to_write(cfg: Config, center: Center, main: Any) -> str:
    """Where the job writes, as a path: the directory the commands make (`$IOADVISE_DIR`), the tier's scratch
    directory (`$IOADVISE_SCRATCH`), else the file system's mount from the center file (or a word that it states
    none)."""
    from ..mpiio.render import SCRATCH_VAR
    if main.directory:
        return main.directory[0].split("=", 1)[1].strip('"')
    if main.scratch:
        return f"${SCRATCH_VAR} ({main.scratch[0].split('=', 1)[1].strip(chr(34))})"
    fs = center.filesystem(cfg.filesystem)
    if fs is not None and fs.mount:
        return fs.mount
    return f"a directory on {cfg.tier or cfg.filesystem} (the center file states no mount for it)"


def _where_words(c: Any, commands: Mapping[str, Any]) -> str | None:
    """Where to write, in words, for an option whose commands make no directory of their own (NFS, GPFS, a file
    system without settings to apply): there the commands alone would not say it."""
    if any(line.startswith("export IOADVISE_") for line in commands.get("lines", ())):
        return None
    where = commands.get("where")
    return f"Where to write: under {where} ({c.config.tier or c.config.filesystem}); no setting to apply there." \
        if where else None


def _reasons(c: Any, w: Workload, center: Center, base: Any, rec: Any, has_numbers: bool,
             applied: tuple = (), decision: str | None = None) -> list[str]:
    cfg = c.config
    out: list[str] = []
    if c.value is not None and c.fit is not None:
        f = c.fit
        limiter = _limiter(c, w)
        group = f"{f.filesystem} {f.op}" if f.filesystem else f.op
        out.append(f"Predicted {_fmt(c.value, f.unit)} (interval {format_range(c.low, c.high, f.unit)}"
                   f"{_capped_words(c)}) from a model fitted to {center.name}'s {group} runs; it rests on {f.n_runs} "
                   f"run(s){'; few runs, so the interval is wide' if f.n_runs < 4 else ''}. {limiter}")
        if c is rec and base.value:
            gain = c.value / base.value
            if gain > 1.05:
                out.append(f"About {gain:.1f}x the system default ({_fmt(base.value, f.unit)}).")
            else:
                out.append("About as fast as the system default.")
    elif not has_numbers:
        out.append(f"The knowledge base has no measured numbers for {center.name}: this ranking rests on the "
                   f"published comparisons cited below and on the center configuration, so no value is predicted.")
    else:
        out.append(f"No measured runs on {cfg.tier or cfg.filesystem} for this operation: not predicted; its rank "
                   f"rests on the published comparisons and the center configuration.")
    # the decision's own reason (a gain with its probability, or none measurable) comes from the engine, whatever
    # it decided (stripes, collective mode, layout, place)
    if c is rec and has_numbers and c.value is not None and not w.metadata_heavy and decision:
        out.append(f"Decision: {decision}.")
    if cfg.stripe_count is not None:
        fs = center.filesystem(cfg.filesystem)
        # the sentence comparing stripe counts is written by `finalize`, from the table's own numbers
        if c is rec and not has_numbers and cfg.layout == "shared" and not w.metadata_heavy:
            out.append(f"Stripe count {cfg.stripe_count}: with no measured numbers, one stripe per writing node "
                       f"(capped at the {fs.ost_count if fs else '?'} OSTs) spreads the shared file without taking "
                       f"every OST.")
        if w.metadata_heavy:
            out.append("Metadata-heavy (many small files): one stripe per file keeps creates from locking OSTs.")
    if cfg.tier:
        t = center.tier(cfg.tier)
        stage = " Data must be copied out before the job ends." if w.lifetime == "after-job" else ""
        out.append(f"Uses the per-job tier {cfg.tier} ({t.kind if t else ''}).{stage}")
    for a in applied:
        what = _FACTOR_WORDS.get(a.get("factor"), a.get("factor"))
        verb = "follows" if a["_sign"] > 0 else "goes against"
        out.append(f"This {verb} a published comparison on {a['system']}: {what} {a['better']} beat {a['worse']} "
                   f"({a.get('citation')}){_scale_note(a, w)}.")
    if c is rec and w.layout == "shared" and any(a.get("factor") == "layout" and a["_sign"] < 0 for a in applied):
        out.append("If the application can write a file per process, ask again with --layout any.")
    if cfg.api == "HDF5" and cfg.hdf5_alignment:
        out.append(f"HDF5 objects aligned to the {format_size(cfg.hdf5_alignment)} stripe size.")
    return out


def _capped_words(c: Any) -> str:
    """`; capped: ...` where the value is the top of its interval (a bound held it there: the job may get less,
    never more, by what the runs say), else nothing."""
    if c.value is None or c.high is None or c.value < c.high:
        return ""
    why = f": {_bound_words(c)}" if c.bounded_by and c.model_value is not None else ""
    return f"; capped, the value is the top of its interval{why}"


def _scale_note(cmp: Mapping[str, Any], w: Workload) -> str:
    """`; measured at 72 nodes, this job has 16` when the job is outside the node counts a comparison covers."""
    lo, hi = cmp.get("nodes_min"), cmp.get("nodes_max")
    if (lo is None or w.nodes >= lo) and (hi is None or w.nodes <= hi):
        return ""
    span = f"{lo}" if lo == hi else f"{lo or 1}-{hi}" if hi is not None else f"{lo} or more"
    return f"; it was measured at {span} node(s) and this job has {w.nodes}, so the effect may differ"


_LIMIT_WORDS = {"clients": "the clients (streams per node x per-stream rate, or the nodes' links)",
                "aggregators": "the collective-buffering aggregators (about one per stripe, capped by the nodes)",
                "streams": "what one stream can move to one OST (too few streams x stripes)",
                "osts": "the storage targets the data spans (OSTs, and the contention on them)",
                "extent locks": "the shared file's extent locks (more writer nodes than stripes, or requests that "
                                "straddle stripes: each OST object's lock moves between clients)",
                "peak": "the peak of the file system", "api": "the I/O library's own ceiling",
                "request size": "the request size (small requests)", "metadata server": "the metadata server",
                "target iops": "the random requests the storage targets serve per second (their IOPS)",
                "per-rank rate": "the per-rank rate"}


def _limiter(c: Any, w: Workload) -> str:
    return f"The bottleneck is {_LIMIT_WORDS.get(c.binding or '', c.binding or 'unknown')}."


def measured_clients(fit: Any) -> str:
    """The client counts a fit's runs measured, in words: `1-32 clients`, `1 client and aggregates`."""
    lo, hi = fit.clients_min, fit.clients_max
    if lo == INF:
        return "aggregate figures over many clients only"
    top = max(x for x in (lo, hi) if x != INF)
    span = f"{lo:g}" if top == lo else f"{lo:g}-{top:g}"
    return f"{span} client{'s' if top != 1 else ''}" + (" and aggregates over many clients" if hi == INF else "")


def build_option(c: Any, w: Workload, center: Center, base: Any, rec: Any, runs: Mapping[str, Any], *,
                 has_numbers: bool, applied: tuple = (), decision: str | None = None,
                 deciding: Deciding | None = None) -> Option:
    """An option of the answer: its prediction, evidence (`deciding`: the runs near the job its decision read),
    commands and reasons."""
    unit = c.fit.unit if c.fit else ("ops/s" if w.metadata_heavy else "MiB/s")
    ev = _option_evidence(c, w, runs, deciding) + [_comparison_evidence(a) for a in applied]
    note = None
    if c.unmeasured:
        note = (f"unmeasured: no run of {c.unmeasured} on {center.name} at about {w.ranks_per_node} rank(s) per "
                f"node: not predicted (ioadvise bench plan)")
    elif c.value is None:
        note = "no measured runs: not predicted"
    elif c.extrapolated:
        note = f"extrapolated: {_outside(c, w)}"
    if c.value is not None and c.bounded_by:
        note = "; ".join(x for x in (note, _bound_words(c)) if x)
    pred = Prediction(value=c.value, unit=unit, low=c.low, high=c.high,  # type: ignore[arg-type]
                      evidence=tuple(e.run_id for e in ev if e.run_id), n_runs=c.fit.n_runs if c.fit else 0,
                      note=note)
    reasons = _reasons(c, w, center, base, rec, has_numbers, applied, decision)
    commands = commands_for(c.config, center, w)
    where = _where_words(c, commands)
    if where:
        reasons.append(where)
    fs = center.filesystem(c.config.filesystem)
    said = disagreement_words(c, deciding, fs.ost_count if fs else None, fs.default_stripe_count if fs else None) \
        if deciding is not None else None
    if said:
        reasons.insert(min(len(reasons), 2), said)
    return Option(config=c.config, prediction=pred, commands=commands, evidence=tuple(ev), reasons=tuple(reasons))


def _outside(c: Any, w: Workload) -> str:
    """What a prediction extrapolates to: client counts outside the measured ones, or an API class none of the
    runs measured (the client count may lie inside)."""
    f = c.fit
    if f.distance(c.point) > 0 or not f.clients_min <= c.point.clients <= f.clients_max:
        return f"{w.nodes} client node(s), runs measured at {measured_clients(f)}"
    return (f"{c.point.klass} I/O, which none of the runs measured (they measured "
            f"{', '.join(f.klasses) or 'no stated API'})")


def _bound_words(c: Any) -> str:
    what = {"runs": "the range the runs nearest this job measured",
            "measured peak": "the largest bandwidth the runs measured, scaled to this job's nodes",
            "rated peak": "the file system's rated peak (center file)"}[c.bounded_by]
    side = "lifted to" if c.model_value < c.value else "held to"
    return f"the model's {c.model_value:,.0f} {c.fit.unit} {side} {what}"


def decision_words(dec: Any, cands: Any, w: Workload) -> str | None:
    """The decision's grounds (policy.Ground) in words, in their order; None where they say nothing more than
    that the choice is the best predicted."""
    from .policy import CONFIDENCE, MIN_GAIN
    said = []
    for g in dec.grounds:
        chosen = cands[g.chosen]
        other = cands[g.other] if g.other is not None else None
        if g.kind == "runs":
            peers = [c for c in cands if c is not chosen and c.standing and c.standing[1] is not None
                     and c.standing[0] == chosen.standing[0]]
            bits = [f"{_describe(c.config)} measured {chosen.standing[1] / c.standing[1]:.2f}x slower"
                    for c in ([max(peers, key=lambda c: c.standing[1])] if peers else [])]
            if g.ratio is None:
                bits.append(f"{_describe(other.config)} not measured there")
            said.append(f"{RUNS_DECIDED} this first, whatever the model predicts ({_describe(other.config)} "
                        f"predicted {other.value / chosen.value:.2f}x): " + "; ".join(bits))
        elif g.kind in ("default", "cheaper"):
            kept = "the default is kept" if g.kind == "default" else "the cheaper option is kept"
            said.append(f"no measurable difference in the measured runs between this and {_describe(other.config)} "
                        f"(predicted {g.ratio:.2f}x, but a gain of {int(MIN_GAIN * 100)}% or more has a probability "
                        f"below {int(CONFIDENCE * 100)}%), so {kept}; {_settle(other, chosen, w)}")
        elif g.kind == "gain":
            said.append(f"predicted {g.ratio:.2f}x the default, a gain of {int(MIN_GAIN * 100)}% or more with "
                        f"probability {g.probability:.2f}")
        elif g.kind == "not-slower":
            said.append(f"{_describe(other.config)} ranked first but is predicted slower than the default "
                        f"({other.value / chosen.value:.2f}x), so the default is kept")
        elif g.kind == "comparison":
            said.append(f"a published comparison puts this before {_describe(other.config)}, which the measured "
                        f"runs cannot tell apart from it (predicted {g.ratio:.2f}x)")
    return "; ".join(said) or None


def _describe(cfg: Config) -> str:
    parts = [cfg.tier or cfg.filesystem, cfg.layout]
    if cfg.stripe_count is not None:
        parts.append(f"{cfg.stripe_count} stripe(s)")
    if cfg.collective is not None:
        parts.append("collective" if cfg.collective else "independent")
    return ", ".join(parts)


def _settle(a: Any, b: Any, w: Workload) -> str:
    """The measurement that would tell two close options apart."""
    return (f"a benchmark of {w.nodes} node(s) x {w.ranks_per_node} rank(s) {w.op} with {_describe(a.config)} "
            f"and with {_describe(b.config)} would settle it (ioadvise bench run)")


def _unmodelled(w: Workload, center: Center, rec: Any) -> list[str]:
    """What the job said that the prediction does not reflect: random access where no random-access run was
    fitted, an access size the fitted model gives no effect."""
    if rec is None or rec.fit is None or rec.point is None or rec.value is None or w.metadata_heavy:
        return []
    out = []
    if w.access == "random" and not rec.fit.op.startswith("rand"):
        out.append(f"Random access is not modelled on {center.name} (no random-access run of {w.op} was measured): "
                   f"the prediction is for sequential access and random requests are likely slower; measure them "
                   f"(ioadvise bench plan --system {center.name}).")
    if w.access_size and rec.fit.predict(rec.point) == rec.fit.predict(rec.point._replace(transfer=None)):
        out.append(f"The access size ({format_size(w.access_size)}) is not modelled here: the model fitted to "
                   f"{center.name}'s runs gives it no effect, so the prediction is the same for any request size.")
    return out


def warnings_for(w: Workload, center: Center, fits: Mapping, predicted: list, rec: Any = None,
                 cands: list | None = None) -> list[str]:
    """Every caveat of the advice, for the text, --json, wrap, submit and the guide alike."""
    out = []
    if not fits:
        out.append(f"No measured runs for {center.name}: import benchmark results (ioadvise kb import) "
                   f"to get predicted values.")
    elif not predicted:
        out.append(f"No measured runs for this operation on {center.name}.")
    elif rec is not None and rec.extrapolated:
        if rec.fit.distance(rec.point) > 0:
            out.append(f"The prediction extrapolates to {w.nodes} client node(s) from runs measured at "
                       f"{measured_clients(rec.fit)}: such predictions are far less certain than the interval "
                       f"says (see ioadvise kb validate); measure at this scale to confirm.")
        else:
            out.append(f"The prediction is for {_outside(rec, w)}: it is far less certain than the interval "
                       f"says; measure it to confirm.")
    if rec is not None and rec.value is not None and rec.bounded_by in ("rated peak", "measured peak"):
        out.append(f"The model's value for this job ({rec.model_value:,.0f} {rec.fit.unit}) lies beyond "
                   f"{_bound_words(rec).split(' held to ')[-1]}: the prediction is held to "
                   f"{rec.value:,.0f} {rec.fit.unit}; measure at this scale to know more.")
    out += _unmodelled(w, center, rec)
    missing = sorted({c.unmeasured for c in cands or () if c.unmeasured})
    if missing:
        out.append(f"Not measured on {center.name} at about {w.ranks_per_node} rank(s) per node, so not "
                   f"recommended: {'; '.join(missing)}. "
                   f"Runs that would settle it: ioadvise bench plan --system {center.name}.")
    return out


# ----------------------------------------------------------------------------------------------------
# The last pass over an Advice: everything said about the table is computed from the table itself.

WITHIN = 0.05           # "within 5% of the best": the tolerance the ranking uses (docs/advise.md)


def _key(o: Option) -> tuple:
    c = o.config
    return (c.tier, c.filesystem, c.layout, c.api, c.collective, c.stripe_count, c.stripe_size,
            tuple(sorted(c.hints.items())), c.hdf5_alignment)


def _same_but_stripes(a: Option, b: Option) -> bool:
    x, y = a.config, b.config
    return (x.tier, x.filesystem, x.layout, x.api, x.collective) == (y.tier, y.filesystem, y.layout, y.api,
                                                                      y.collective)


def _stripes(o: Option, center: Center | None) -> float:
    n = o.config.stripe_count
    if n is None:
        return 0.0
    fs = center.filesystem(o.config.filesystem) if center else None
    n = every_ost(n, fs.ost_count if fs else None)
    return INF if n == ALL_OSTS else float(n)


def _seconds(t: float) -> str:
    if t < 10:
        return f"{t:.1f} s"
    if t < 90:
        return f"{t:.0f} s"
    if t < 5400:
        return f"{t / 60:.0f} min"
    return f"{t / 3600:.1f} h"


def stripe_sentence(rec: Option, table: list[Option], center: Center | None) -> str | None:
    """What the table says about the recommendation's stripe count, or None when it says nothing."""
    v = rec.prediction.value
    if v is None or rec.config.stripe_count is None:
        return None
    if any(r.startswith("Decision: " + RUNS_DECIDED) for r in rec.reasons):
        return None             # the runs near the job chose among what the model could not tell apart
    unit = rec.prediction.unit
    values = [o.prediction.value for o in table if o.prediction.value is not None]
    best = max(values)
    peers = [o for o in table if o is not rec and _same_but_stripes(o, rec) and o.config.stripe_count is not None
             and o.prediction.value is not None and o.config.stripe_count != rec.config.stripe_count]
    fewer = sorted((o for o in peers if _stripes(o, center) < _stripes(rec, center)), key=lambda o: _stripes(o, center))
    tied = [o for o in fewer if o.prediction.value >= (1 - WITHIN) * best]
    n = rec.config.stripe_count
    if tied:
        # fewer stripes the model cannot tell apart, yet `n` was kept: the decision's grounds say why, and nothing
        # here may argue for the fewer (that would contradict the table)
        names = ", ".join(str(n) for n in dict.fromkeys(o.config.stripe_count for o in tied))
        why = (" on the grounds of the decision below" if any(r.startswith("Decision: ") for r in rec.reasons)
               else "")
        return (f"{names} stripe(s) are predicted within 5% of the best ({_fmt(best, unit)}) as well: the model "
                f"cannot tell them apart from {n}, which is kept{why}.")
    if fewer and v >= (1 - WITHIN) * best:
        once: dict = {}             # each count once, at its best value
        for o in fewer:
            if o.config.stripe_count not in once or o.prediction.value > once[o.config.stripe_count].prediction.value:
                once[o.config.stripe_count] = o
        short = "; ".join(f"{n}: {_fmt(o.prediction.value, unit)}" for n, o in sorted(once.items()))
        return (f"{n} stripe(s) is the fewest in this table predicted within 5% of the best "
                f"({_fmt(best, unit)}); fewer fall short ({short}).")
    return None


def _deduplicated(o: Option) -> Option:
    """The option with each piece of evidence and each reason once, in their first order."""
    from ..frozen import replace
    ev, keys = [], set()
    for e in o.evidence:
        k = (e.run_id, e.citation, e.source, e.summary)
        if k not in keys:
            keys.add(k)
            ev.append(e)
    reasons = list(dict.fromkeys(o.reasons))
    return replace(o, evidence=tuple(ev), reasons=tuple(reasons))


def _time_sentence(advice: Any, p: Any, data: tuple[float, str] | None = None) -> str:
    """How long the job's I/O takes at the prediction `p`: its bytes at a bandwidth; its requests at a random-access
    operation rate; its file creates at a metadata rate, and then its data at `data` (the place's bandwidth for one
    file per rank, a floor on the time: small files are slower); where nothing is predicted, that no time can be
    given and what would give one."""
    w = advice.workload
    nbytes = w.bytes_per_rank * w.ranks
    if p.value and p.unit == "MiB/s":
        total, scale, what = nbytes, float(1 << 20), format_size(nbytes)
    elif p.value and p.unit == "ops/s" and w.metadata_heavy:
        total = w.files_created if w.files_created is not None else w.files_per_rank * w.ranks
        scale, what = 1.0, f"{total:,} file creates"
    elif p.value and p.unit == "ops/s" and w.access_size:
        total = -(-nbytes // w.access_size)
        scale, what = 1.0, f"{total:,} requests of {format_size(w.access_size)} ({format_size(nbytes)})"
    elif p.value and p.unit == "ops/s":
        return (f"No time estimate for the job's I/O: {_fmt(p.value, p.unit)} counts requests, and the job states "
                f"no request size (--access-size) to count its {format_size(nbytes)} in them.")
    else:
        return (f"No time estimate for the job's I/O: nothing measured predicts this place for it (measure it: "
                f"ioadvise bench plan --system {advice.system}).")
    t = total / (p.value * scale)
    lo_t, hi_t = ((_seconds(total / (p.high * scale)), _seconds(total / (p.low * scale)))
                  if p.low and p.high else ("", ""))
    span = f" ({lo_t} to {hi_t} over the interval)" if lo_t != hi_t else ""
    said = f"At {_fmt(p.value, p.unit)} the job's {what} take about {_seconds(t)}{span}."
    if w.metadata_heavy and nbytes:
        if data is not None:
            d = nbytes / (data[0] * (1 << 20))
            said += (f" Its {format_size(nbytes)} of data take at least {_seconds(d)} more at {_fmt(*data)}, this "
                     f"place's predicted bandwidth with one file per rank (small files are slower): at least "
                     f"{_seconds(t + d)} in all.")
        else:
            said += (f" Its {format_size(nbytes)} of data come on top: no measured bandwidth of this place predicts "
                     f"them.")
    return said


def _pinned_sentence(rec: Option, pins: Mapping[str, Any], unpinned: Any) -> str:
    """The settings pinned, and the unpinned best beside them when it differs from `rec`."""
    p = rec.prediction
    said = ", ".join(f"{k}={v}" for k, v in pins.items() if k != "hints") or ""
    if pins.get("hints"):
        said = ", ".join(x for x in (said, "hints " + ",".join(f"{k}={v}" for k, v in pins["hints"].items()))
                         if x)
    text = f"Pinned by you: {said}; the rest was chosen around it."
    u = unpinned.recommendation if unpinned is not None else None
    if u is not None and _key(u) != _key(rec):
        uc = u.config
        where = f"{uc.tier} (tier)" if uc.tier else uc.filesystem
        stripes = "" if uc.stripe_count is None else f", {uc.stripe_count} x {format_size(uc.stripe_size)}"
        val = u.prediction.value
        cmp = ""
        if val is not None and p.value:
            cmp = f", predicted {_fmt(val, u.prediction.unit)} ({val / p.value:.2f}x this)"
        elif val is not None:
            cmp = f", predicted {_fmt(val, u.prediction.unit)}"
        text += f" Unpinned, the best is {where}, {uc.layout}, {uc.api}{stripes}{cmp}."
    elif u is not None:
        text += " Unpinned, the advisor chooses the same."
    return text


def finalize(advice: Any, center: Center | None = None, pins: Mapping[str, Any] | None = None,
             unpinned: Any = None, data: tuple[float, str] | None = None) -> Any:
    """The Advice with its table cleaned and its reasons checked against the table: no alternative repeating
    the default or another row, no evidence twice, the stripe-count sentence only when the table's numbers
    make it true, pinned settings named with the unpinned best beside them, and the expected time for the
    job's I/O at the prediction (`data`: the recommendation's bandwidth for a small-file job's data)."""
    from ..frozen import replace
    rec, base = advice.recommendation, advice.baseline
    seen = {_key(rec), _key(base)}
    alts = []
    for a in advice.alternatives:
        if _key(a) not in seen:
            seen.add(_key(a))
            alts.append(a)
    rec, base, alts = _deduplicated(rec), _deduplicated(base), [_deduplicated(a) for a in alts]
    reasons = list(rec.reasons)
    table = [rec, base, *alts]
    sentence = None if pins and "stripe_count" in pins else stripe_sentence(rec, table, center)
    if sentence:
        reasons.insert(1 if reasons else 0, sentence)
    reasons.append(_time_sentence(advice, rec.prediction, data))
    if pins:
        reasons.insert(0, _pinned_sentence(rec, pins, unpinned))
    rec = replace(rec, reasons=tuple(reasons))
    return replace(advice, recommendation=rec, baseline=base, alternatives=tuple(alts))
