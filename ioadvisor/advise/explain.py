"""Reasons in plain language, evidence with citations, and the commands that apply a configuration."""
from __future__ import annotations

from typing import Any, Mapping

from ..model.types import Center, Config, Evidence, Option, Prediction, Workload
from ..model.units import format_size
from ..predict import INF
from .. import mpiio

_FACTOR_WORDS = {
    "layout": "file layout", "api": "I/O interface", "cb_write": "two-phase collective buffering for writes",
    "cb_read": "two-phase collective buffering for reads", "stripe_count": "stripe count",
    "stripe_size": "stripe size", "tier": "file system",
}


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "unknown"
    if unit == "MiB/s" and v >= 10240:
        return f"{v / 1024:,.1f} GiB/s"
    return f"{v:,.0f} {unit}"


def _comparison_evidence(cmp: Mapping[str, Any]) -> Evidence:
    fs = f" on {cmp['filesystem']}" if cmp.get("filesystem") else ""
    what = _FACTOR_WORDS.get(cmp.get("factor"), cmp.get("factor"))
    return Evidence(run_id=None, citation=cmp.get("citation") or "", source=cmp.get("source") or "",
                    summary=f"{cmp['system']}{fs}, {cmp['op']}: {what} {cmp['better']} beats {cmp['worse']} "
                            f"({cmp.get('condition') or 'as stated'})")


def _run_evidence(run: Any) -> Evidence:
    p = run.provenance
    parts = [run.op, run.api or "", run.layout or "", f"{run.nodes} node(s)" if run.nodes else "",
             f"{run.ranks} rank(s)" if run.ranks else "", f"{run.stripe_count} stripe(s)" if run.stripe_count else ""]
    return Evidence(run_id=run.id, citation=p.citation or p.command or "", source=p.source or "", value=run.value,
                    unit=run.unit, summary=", ".join(x for x in parts if x))


def commands_for(cfg: Config, center: Center, w: Workload) -> dict[str, Any]:
    """Commands per MPI flavour (mpich, openmpi, cray, intel), the striping command and the ROMIO hints file."""
    fs = center.filesystem(cfg.filesystem)
    tier = center.tier(cfg.tier) if cfg.tier else None
    directory = (tier.mount if tier and tier.mount else None) or (fs.mount if fs and fs.mount else None) or "$OUTDIR"
    hints = dict(cfg.hints) if cfg.api in ("MPIIO", "HDF5") else {}
    out = mpiio.render_all(hints, fs_type=fs.type if fs else None, directory=directory,
                           stripe_count=cfg.stripe_count, stripe_size=cfg.stripe_size,
                           hdf5_alignment=cfg.hdf5_alignment)
    if tier is not None:
        out["request"] = tier.request
        if w.lifetime == "after-job":
            out["stage_out"] = f"copy results from {directory} to persistent storage before the job ends"
    out["default_mpi"] = center.mpi
    return out


def _reasons(c: Any, w: Workload, center: Center, base: Any, rec: Any, has_numbers: bool) -> list[str]:
    cfg = c.config
    out: list[str] = []
    if c.value is not None and c.fit is not None:
        f = c.fit
        limiter = _limiter(c, w)
        out.append(f"Predicted {_fmt(c.value, f.unit)} (interval {_fmt(c.low, f.unit)}-{_fmt(c.high, f.unit)}) "
                   f"from a model fitted to {center.name}'s {f.filesystem} {f.op} runs; it rests on {f.n_runs} "
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
    if cfg.stripe_count is not None:
        fs = center.filesystem(cfg.filesystem)
        if c is rec and has_numbers and c.value is not None and not w.metadata_heavy:
            out.append(f"{cfg.stripe_count} stripe(s) is the fewest within {int(5)}% of the best predicted; more "
                       f"stripes would take OSTs from other jobs for little gain.")
        elif c is rec and not has_numbers and cfg.layout == "shared" and not w.metadata_heavy:
            out.append(f"Stripe count {cfg.stripe_count}: with no measured numbers, one stripe per writing node "
                       f"(capped at the {fs.ost_count if fs else '?'} OSTs) spreads the shared file without taking "
                       f"every OST.")
        if w.metadata_heavy:
            out.append("Metadata-heavy (many small files): one stripe per file keeps creates from locking OSTs.")
    if cfg.tier:
        t = center.tier(cfg.tier)
        stage = " Data must be copied out before the job ends." if w.lifetime == "after-job" else ""
        out.append(f"Uses the per-job tier {cfg.tier} ({t.kind if t else ''}).{stage}")
    for a in c.applied:
        what = _FACTOR_WORDS.get(a.get("factor"), a.get("factor"))
        verb = "follows" if a["_sign"] > 0 else "goes against"
        out.append(f"This {verb} a published comparison on {a['system']}: {what} {a['better']} beat {a['worse']} "
                   f"({a.get('citation')}){_scale_note(a, w)}.")
    if c is rec and w.layout == "shared" and any(a.get("factor") == "layout" and a["_sign"] < 0 for a in c.applied):
        out.append("If the application can write a file per process, ask again with --layout any.")
    if cfg.api == "HDF5" and cfg.hdf5_alignment:
        out.append(f"HDF5 objects aligned to the {format_size(cfg.hdf5_alignment)} stripe size.")
    return out


def _scale_note(cmp: Mapping[str, Any], w: Workload) -> str:
    """`; measured at 72 nodes, this job has 16` when the job is outside the node counts a comparison covers."""
    lo, hi = cmp.get("nodes_min"), cmp.get("nodes_max")
    if (lo is None or w.nodes >= lo) and (hi is None or w.nodes <= hi):
        return ""
    span = f"{lo}" if lo == hi else f"{lo or 1}-{hi}" if hi is not None else f"{lo} or more"
    return f"; it was measured at {span} node(s) and this job has {w.nodes}, so the effect may differ"


def _limiter(c: Any, w: Workload) -> str:
    f = c.fit
    if f.kind == "rate":
        return "Limited by the per-rank rate." if w.ranks * f.per_client < f.peak else "Limited by the file system's peak rate."
    vals = {"the clients": w.nodes * f.per_client, "the peak of the file system": f.peak}
    if c.config.stripe_count is not None:
        targets = c.config.stripe_count if c.config.layout == "shared" or w.ranks == 1 else w.ranks * c.config.stripe_count
        vals["the stripes (storage targets)"] = targets * f.per_target
    return f"The bottleneck is {min(vals, key=vals.get)}."


def measured_clients(fit: Any) -> str:
    """The client counts a fit's runs measured, in words: `1-32 clients`, `1 client and aggregates`."""
    lo, hi = fit.clients_min, fit.clients_max
    if lo == INF:
        return "aggregate figures over many clients only"
    top = max(x for x in (lo, hi) if x != INF)
    span = f"{lo:g}" if top == lo else f"{lo:g}-{top:g}"
    return f"{span} client{'s' if top != 1 else ''}" + (" and aggregates over many clients" if hi == INF else "")


def build_option(c: Any, w: Workload, center: Center, base: Any, rec: Any, runs: Mapping[str, Any], *,
                 has_numbers: bool) -> Option:
    unit = c.fit.unit if c.fit else ("ops/s" if w.metadata_heavy else "MiB/s")
    ev: list[Evidence] = []
    if c.fit:
        ev += [_run_evidence(runs[i]) for i in c.fit.run_ids[:12] if i in runs]
    ev += [_comparison_evidence(a) for a in c.applied]
    note = None
    if c.value is None:
        note = "no measured runs: not predicted"
    elif c.extrapolated:
        note = f"extrapolated: {w.nodes} client node(s), runs measured at {measured_clients(c.fit)}"
    pred = Prediction(value=c.value, unit=unit, low=c.low, high=c.high,  # type: ignore[arg-type]
                      evidence=tuple(e.run_id for e in ev if e.run_id), n_runs=c.fit.n_runs if c.fit else 0,
                      note=note)
    return Option(config=c.config, prediction=pred, commands=commands_for(c.config, center, w), evidence=tuple(ev),
                  reasons=tuple(_reasons(c, w, center, base, rec, has_numbers)))


def warnings_for(w: Workload, center: Center, fits: Mapping, predicted: list, rec: Any = None) -> list[str]:
    out = []
    if not fits:
        out.append(f"No measured runs for {center.name}: import benchmark results (ioadvise kb import) "
                   f"to get predicted values.")
    elif not predicted:
        out.append(f"No measured runs for this operation on {center.name}.")
    elif rec is not None and rec.extrapolated:
        out.append(f"The prediction extrapolates to {w.nodes} client node(s) from runs measured at "
                   f"{measured_clients(rec.fit)}: such predictions are far less certain than the interval says "
                   f"(see ioadvise kb validate); measure at this scale to confirm.")
    return out
