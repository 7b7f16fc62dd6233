"""`ioadvise advise`: a recommendation for a workload.

Its options are declared once, as data (`OPTIONS`): typer builds the command from them when the command line goes
through typer (`app`, made on first use), and `ioadvise advise ...` as users type it is read without typer at all
(`parse`, see cli/options.py), which saves a cold process the import of typer. Both call `run`.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..inputs import SCRIPT, TOML
from ..util import read_text
from . import options as o
from .common import cli_errors, console, print_json, printable_table
from .options import Opt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OPTIONS: tuple[Opt, ...] = (
    Opt("center", ("--center",), str, "Center config: a TOML file or a center's name (in $IOADVISE_CENTERS or "
        "shipped)."),
    Opt("system", ("--system",), str, "System name (a center in $IOADVISE_CENTERS or shipped, or a system in the KB)."),
    o.KB,
    Opt("nodes", ("-N", "--nodes"), int, "Nodes of the job (as sbatch -N)."),
    Opt("ntasks", ("-n", "--ntasks"), int, "MPI ranks in all (as sbatch -n): ranks per node = ntasks / nodes, "
        "rounded up."),
    Opt("ntasks_per_node", ("--ntasks-per-node",), int, "As sbatch."),
    o.RANKS_PER_NODE, o.BYTES_PER_RANK, o.TOTAL_BYTES, o.API, o.LAYOUT, o.OP, o.ACCESS_SIZE, o.RANDOM, o.FILES,
    o.LIFETIME,
    Opt("workload", ("--workload",), Path, "Workload TOML file; options given here override it."),
    Opt("script", ("--script",), Path, "Job script: its #SBATCH -N/-n/--ntasks-per-node and #IOADVISE key=value "
        "lines (docs/slurm.md)."),
    Opt("stripe_count", ("--stripe-count",), int, "Pin the stripe count (-1: all OSTs)."),
    Opt("stripe_size", ("--stripe-size",), str, "Pin the stripe size, e.g. 4MiB."),
    Opt("tier", ("--tier",), str, "Pin the tier or file system by name."),
    o.COLLECTIVE,
    Opt("hints", ("--hints",), str, "Pin MPI-IO hints: KEY=VALUE,KEY=VALUE."),
    Opt("mpi", ("--mpi",), str, "MPI for the commands: mpich, openmpi, cray, intel or mvapich2, optionally @VERSION "
        "(openmpi@4.1.4; default: the center's)."),
    o.JSON,
)

HELP = """Recommend where and how a job should do its I/O: tier, layout, striping, collective mode and hints.

    Settings you pin (--stripe-count, --tier, --collective, --hints ...) are kept; everything else is chosen.
    """


def parse(args: list[str]) -> dict[str, Any] | None:
    """The parameters of `ioadvise advise ARGS` as typer would pass them, or None where typer must read them."""
    return o.parse(args, OPTIONS)


def __getattr__(name: str) -> Any:
    """`app`, the typer app of the command, made when the root group asks for it."""
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import command_app
    app = command_app()

    def advise_cmd(**params: Any) -> None:
        run(params)
    advise_cmd.__signature__, advise_cmd.__annotations__ = o.signature_of(OPTIONS)  # type: ignore[attr-defined]
    advise_cmd.__doc__ = HELP
    app.command("advise")(advise_cmd)
    globals()["app"] = app
    return app


def parse_hints(text: str | None) -> dict[str, str]:
    """`k=v,k=v` into a dict; raises UsageError on a malformed pair."""
    from ..job import read_value
    if not text:
        return {}
    try:
        return read_value("hints", text)
    except Exception as e:
        raise UsageError(str(e)) from None


def _row(opt: Any, label: str) -> list[str]:
    from ..model.units import format_estimate, format_size
    c, p = opt.config, opt.prediction
    where = f"{c.tier} (tier)" if c.tier else c.filesystem
    stripes = "-" if c.stripe_count is None else f"{c.stripe_count} x {format_size(c.stripe_size)}"
    mode = c.api if c.collective is None else f"{c.api} {'coll' if c.collective else 'indep'}"
    word = {"disable": "off", "enable": "on"}
    cb = [f"{k[6:]} {word.get(v, v)}" for k, v in c.hints.items() if k.startswith("romio_cb_")]
    if cb:
        mode += " " + ",".join(cb)
    pred = "-" if p.value is None else format_estimate(p.value, p.low, p.high, p.unit) + (" capped" if p.capped else "")
    return [label, where, c.layout, mode, stripes, pred]




def render_advice(advice: Any, flavour: str, commands: str, unpinned: Any = None) -> None:
    from rich.text import Text
    from ..model.units import format_rate, format_size
    rec, base = advice.recommendation, advice.baseline
    w = advice.workload
    console.print(Text.assemble((advice.system, "bold"), f": {w.nodes} node(s) x {w.ranks_per_node} rank(s), "
                                f"{format_size(w.bytes_per_rank)} per rank, {w.api} {w.layout} {w.op}"),
                  highlight=False)
    t = printable_table(box=None, pad_edge=False, header_style="bold")
    for col in ("", "where", "layout", "mode", "stripes", "predicted (interval)"):
        t.add_column(col, overflow="fold")
    t.add_row(Text("recommended" + (" (pinned)" if unpinned is not None else ""), style="bold green"),
              *_row(rec, "")[1:])
    if unpinned is not None:
        t.add_row(*_row(unpinned.recommendation, "unpinned best"))
    t.add_row(*_row(base, "default"))
    for i, a in enumerate(advice.alternatives, 1):
        t.add_row(*_row(a, f"alt {i}"))
    console.print(t)
    if rec.prediction.value and base.prediction.value:
        gain = rec.prediction.value / base.prediction.value
        console.print(Text.assemble("Predicted gain over the default: ", (f"{gain:.1f}x", "bold")))
    console.print(Text("Why", style="bold"))
    for r in rec.reasons:
        console.print(f"  - {r}", highlight=False)
    for wmsg in advice.warnings:
        console.print(Text.assemble(("Note:", "yellow"), f" {wmsg}"), highlight=False)
    if rec.evidence:
        console.print(Text("Evidence", style="bold"))
        for e in rec.evidence[:10]:
            head = f"run {e.run_id}" if e.run_id else "comparison"
            val = f" = {format_rate(e.value, e.unit)}" if e.value is not None else ""
            summary = (e.summary or "").split(" (")[0] if not e.run_id else e.summary
            console.print(f"  - {head}{val}: {summary} [{e.source}, {e.citation}]", highlight=False, markup=False)
    if commands:
        # printed as is, never wrapped: a line broken by the terminal width would not paste as one command
        console.print(Text.assemble(("Commands", "bold"), f" ({flavour}):"), highlight=False)
        console.print(commands.rstrip("\n"), highlight=False, markup=False, soft_wrap=True)


def commands_text(advice: Any, center: Any, flavour: str | None, version: str | None) -> tuple[str, str]:
    """(flavour, the paste-able commands of the recommendation for it): the one renderer's text."""
    from ..advise.explain import plan_for
    from ..mpiio import render
    rec = advice.recommendation
    if flavour is None:
        return center.mpi, rec.commands.get("text") or ""
    return flavour, render(plan_for(rec.config, center, advice.workload, flavour, version)).text()


def option_json(opt: Any) -> dict[str, Any]:
    c, p = opt.config, opt.prediction
    return {
        "tier": c.tier, "filesystem": c.filesystem, "layout": c.layout, "api": c.api, "collective": c.collective,
        "stripe_count": c.stripe_count, "stripe_size_bytes": c.stripe_size, "hints": dict(c.hints),
        "hdf5_alignment": c.hdf5_alignment,
        "predicted": {"value": p.value, "unit": p.unit, "low": p.low, "high": p.high, "n_runs": p.n_runs,
                      "note": p.note, "capped": p.capped},
        "evidence": [{"run_id": e.run_id, "citation": e.citation, "source": e.source, "value": e.value,
                      "unit": e.unit, "summary": e.summary} for e in opt.evidence],
        "commands": dict(opt.commands), "reasons": list(opt.reasons),
    }


def advice_json(advice: Any) -> dict[str, Any]:
    """The documented JSON form of an Advice (docs/advise.md)."""
    from ..model.types import to_plain
    rec = option_json(advice.recommendation)
    base = option_json(advice.baseline)
    gain = None
    if rec["predicted"]["value"] and base["predicted"]["value"]:
        gain = rec["predicted"]["value"] / base["predicted"]["value"]
    return {"system": advice.system, "workload": to_plain(advice.workload), "recommendation": rec,
            "baseline": base, "gain": gain, "alternatives": [option_json(a) for a in advice.alternatives],
            "warnings": list(advice.warnings)}


def run(params: dict[str, Any]) -> None:
    """The command itself, given its parameters (`OPTIONS` by name)."""
    p = dict(params)
    script, workload, kb, json_out = p.pop("script"), p.pop("workload"), p.pop("kb"), p.pop("json_out")
    sizes = {k: p.pop(k) for k in ("nodes", "ntasks", "ntasks_per_node")}
    with cli_errors():
        from ..mpiio import parse_mpi
        spec = _describe(script, workload, **sizes, given=p)
        flavour, version = parse_mpi(spec.mpi) if spec.mpi else (None, None)
        w, pins = spec.workload(), spec.pins()
        from ..advise import advise
        from ..center import resolve_center
        from ..kb import KB
        with KB.open(kb, create=False) as store:
            c = resolve_center(spec.system, spec.center, store)
            result = advise(w, store, c, pins=pins)
            unpinned = advise(w, store, c) if pins else None
            used, text = commands_text(result, c, flavour, version)
        if json_out:
            print_json({**advice_json(result),
                        "mpi": {"flavour": used, "version": version if flavour else c.mpi_version, "commands": text},
                        "pinned": dict(pins),
                        "unpinned_best": option_json(unpinned.recommendation) if unpinned is not None else None})
        else:
            render_advice(result, used, text, unpinned)


def _describe(script: Path | None, workload: Path | None, *, nodes: int | None, ntasks: int | None,
              ntasks_per_node: int | None, given: dict[str, Any]) -> Any:
    """The job description from the script, the workload file and the options (which win), sizes as sbatch
    reads -N, -n and --ntasks-per-node."""
    from ..job import describe, sbatch_sizes
    sb = sbatch_sizes([*(["--ntasks", str(ntasks)] if ntasks is not None else []),
                       *(["--ntasks-per-node", str(ntasks_per_node)] if ntasks_per_node is not None else [])])
    if nodes is not None:
        sb["nodes"] = nodes          # -N/--nodes: the sbatch-style option
    return describe(script=read_text(script, SCRIPT) if script else None, script_path=str(script),
                    toml=read_text(workload, TOML) if workload else None, toml_path=str(workload),
                    sbatch=sb, explicit=given, strict=True)
