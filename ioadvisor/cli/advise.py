"""`ioadvise advise`: a recommendation for a workload; `ioadvise kb validate`: how well the model predicts."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import UsageError
from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, print_json

app = command_app()

_WORKLOAD_KEYS = {"nodes", "ranks_per_node", "bytes_per_rank", "total_bytes", "api", "layout", "op", "access_size",
                  "random", "files", "lifetime", "system", "center", "stripe_count", "stripe_size", "tier",
                  "collective", "hints", "mpi"}


def parse_hints(text: str | None) -> dict[str, str]:
    """`k=v,k=v` into a dict; raises UsageError on a malformed pair."""
    out: dict[str, str] = {}
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" not in part or not part.split("=", 1)[0].strip() or not part.split("=", 1)[1].strip():
            raise UsageError(f"bad hint {part!r} (use KEY=VALUE,KEY=VALUE)")
        k, v = part.split("=", 1)
        if re.search(r"\s", k.strip() + v.strip()):
            raise UsageError(f"bad hint {part!r}: no spaces in keys or values")
        out[k.strip()] = v.strip()
    return out


def read_script_directives(path: Path) -> dict[str, Any]:
    """`#IOADVISE key=value [key=value ...]` lines of a job script as workload settings."""
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise UsageError(f"{path}: cannot read: {e.strerror}") from None
    out: dict[str, Any] = {}
    for n, line in enumerate(lines, 1):
        if not line.startswith("#IOADVISE"):
            continue
        for item in line[len("#IOADVISE"):].split():
            if "=" not in item:
                raise UsageError(f"{path}:{n}: expected key=value, got {item!r}")
            k, v = item.split("=", 1)
            k = k.strip().replace("-", "_")
            if k not in _WORKLOAD_KEYS:
                raise UsageError(f"{path}:{n}: unknown key {k!r} (known: {', '.join(sorted(_WORKLOAD_KEYS))})")
            out[k] = v
    return out


def read_workload_file(path: Path) -> dict[str, Any]:
    """A workload TOML file (the same keys as the command's options, with underscores)."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: not valid TOML: {e}") from None
    data = data.get("workload", data)
    norm = {k.replace("-", "_"): v for k, v in data.items()}
    unknown = sorted(set(norm) - _WORKLOAD_KEYS)
    if unknown:
        raise UsageError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_WORKLOAD_KEYS))})")
    return norm


def _as_int(name: str, v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a whole number, got {v!r}") from None


def _as_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    return str(v).strip().lower() in ("1", "true", "yes", "on", "collective")


def build_request(opts: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Options (CLI, file or script, merged) -> (Workload, pins). Raises UsageError for bad values."""
    from ..model.types import Workload
    from ..model.units import parse_size
    if opts.get("nodes") is None or opts.get("ranks_per_node") is None:
        raise UsageError("give --nodes and --ranks-per-node (or a --workload file)")
    nodes, rpn = _as_int("nodes", opts["nodes"]), _as_int("ranks per node", opts["ranks_per_node"])
    if nodes < 1 or rpn < 1:
        raise UsageError(f"impossible workload: {nodes} node(s) x {rpn} rank(s) per node")
    ranks = nodes * rpn
    if opts.get("bytes_per_rank") is not None:
        bpr = parse_size(opts["bytes_per_rank"])
    elif opts.get("total_bytes") is not None:
        bpr = parse_size(opts["total_bytes"]) // ranks
    else:
        raise UsageError("give --bytes-per-rank or --total-bytes")
    access = parse_size(opts["access_size"]) if opts.get("access_size") is not None else None
    files = _as_int("files", opts["files"]) if opts.get("files") is not None else 1
    if files < 1:
        raise UsageError("files must be at least 1")
    layout = str(opts.get("layout") or "any").lower()
    if layout not in ("shared", "fpp", "any"):
        raise UsageError(f"unknown layout {layout!r} (use shared, fpp or any)")
    api = str(opts.get("api") or "posix").lower()
    if api not in ("posix", "mpiio", "mpi-io", "hdf5"):
        raise UsageError(f"unknown API {api!r} (use posix, mpiio or hdf5)")
    op = str(opts.get("op") or "write").lower()
    if op not in ("write", "read"):
        raise UsageError(f"unknown op {op!r} (use write or read)")
    lifetime = str(opts.get("lifetime") or "after-job").lower()
    if lifetime not in ("job", "after-job"):
        raise UsageError(f"unknown lifetime {lifetime!r} (use job or after-job)")
    w = Workload(nodes=nodes, ranks_per_node=rpn, bytes_per_rank=bpr, api=api, layout=layout, op=op,
                 access="random" if _as_bool(opts.get("random") or False) else "sequential", access_size=access,
                 files_per_rank=files, lifetime=lifetime)
    pins: dict[str, Any] = {}
    if opts.get("stripe_count") is not None:
        sc = _as_int("stripe count", opts["stripe_count"])
        if sc == 0 or sc < -1:
            raise UsageError(f"stripe count must be positive or -1 (all OSTs), got {sc}")
        pins["stripe_count"] = sc
    if opts.get("stripe_size") is not None:
        pins["stripe_size"] = parse_size(opts["stripe_size"])
    if opts.get("tier"):
        pins["tier"] = str(opts["tier"])
    if opts.get("collective") is not None:
        pins["collective"] = _as_bool(opts["collective"])
    hints = opts.get("hints")
    if hints:
        pins["hints"] = hints if isinstance(hints, dict) else parse_hints(str(hints))
    return w, pins


def _row(opt: Any, label: str) -> list[str]:
    from ..model.units import format_size
    c, p = opt.config, opt.prediction
    where = f"{c.tier} (tier)" if c.tier else c.filesystem
    stripes = "-" if c.stripe_count is None else f"{c.stripe_count} x {format_size(c.stripe_size)}"
    mode = c.api if c.collective is None else f"{c.api} {'coll' if c.collective else 'indep'}"
    word = {"disable": "off", "enable": "on"}
    cb = [f"{k[6:]} {word.get(v, v)}" for k, v in c.hints.items() if k.startswith("romio_cb_")]
    if cb:
        mode += " " + ",".join(cb)
    pred = "-" if p.value is None else f"{_num(p.value)} ({_num(p.low)}-{_num(p.high)}) {p.unit}"
    return [label, where, c.layout, mode, stripes, pred]


def _num(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.3g}M"
    return f"{v:,.0f}"


def render_advice(advice: Any, flavour: str, commands: str) -> None:
    from rich.table import Table
    from ..model.units import format_size
    rec, base = advice.recommendation, advice.baseline
    w = advice.workload
    console.print(f"[bold]{advice.system}[/]: {w.nodes} node(s) x {w.ranks_per_node} rank(s), "
                  f"{format_size(w.bytes_per_rank)} per rank, {w.api} {w.layout} {w.op}", highlight=False)
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("", "where", "layout", "mode", "stripes", "predicted (interval)"):
        t.add_column(col, overflow="fold")
    t.add_row(*_row(rec, "[bold green]recommended[/]"))
    t.add_row(*_row(base, "default"))
    for i, a in enumerate(advice.alternatives, 1):
        t.add_row(*_row(a, f"alt {i}"))
    console.print(t)
    if rec.prediction.value and base.prediction.value:
        gain = rec.prediction.value / base.prediction.value
        console.print(f"Predicted gain over the default: [bold]{gain:.1f}x[/]")
    console.print("[bold]Why[/]")
    for r in rec.reasons:
        console.print(f"  - {r}", highlight=False)
    for wmsg in advice.warnings:
        console.print(f"[yellow]Note:[/] {wmsg}", highlight=False)
    if rec.evidence:
        console.print("[bold]Evidence[/]")
        for e in rec.evidence[:10]:
            head = f"run {e.run_id}" if e.run_id else "comparison"
            val = f" = {_num(e.value)} {e.unit}" if e.value is not None else ""
            summary = (e.summary or "").split(" (")[0] if not e.run_id else e.summary
            console.print(f"  - {head}{val}: {summary} [{e.source}, {e.citation}]", highlight=False, markup=False)
    if commands:
        # printed as is, never wrapped: a line broken by the terminal width would not paste as one command
        console.print(f"[bold]Commands[/] ({flavour}):", highlight=False)
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
                      "note": p.note},
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


@app.command("advise")
def advise_cmd(
    center: Annotated[Optional[str], typer.Option(help="Center config: a TOML file or a shipped center's name.")] = None,
    system: Annotated[Optional[str], typer.Option(help="System name (a shipped center or a system in the KB).")] = None,
    kb: KBOption = None,
    nodes: Annotated[Optional[int], typer.Option(help="Nodes of the job.")] = None,
    ranks_per_node: Annotated[Optional[int], typer.Option(help="MPI ranks per node.")] = None,
    bytes_per_rank: Annotated[Optional[str], typer.Option(help="Data each rank writes or reads, e.g. 1GiB.")] = None,
    total_bytes: Annotated[Optional[str], typer.Option(help="Total data instead of --bytes-per-rank.")] = None,
    api: Annotated[Optional[str], typer.Option(help="posix, mpiio or hdf5.")] = None,
    layout: Annotated[Optional[str], typer.Option(help="shared (one file), fpp (file per process) or any.")] = None,
    op: Annotated[Optional[str], typer.Option(help="write or read.")] = None,
    access_size: Annotated[Optional[str], typer.Option(help="Bytes per I/O request, e.g. 4MiB.")] = None,
    random: Annotated[Optional[bool], typer.Option("--random", help="Random rather than sequential access.")] = None,
    files: Annotated[Optional[int], typer.Option(help="Files each rank creates (metadata load).")] = None,
    lifetime: Annotated[Optional[str], typer.Option(help="job (scratch only) or after-job (must persist).")] = None,
    workload: Annotated[Optional[Path], typer.Option(help="Workload TOML file; options given here override it.")] = None,
    script: Annotated[Optional[Path], typer.Option(help="Job script with #IOADVISE key=value lines.")] = None,
    stripe_count: Annotated[Optional[int], typer.Option(help="Pin the stripe count (-1: all OSTs).")] = None,
    stripe_size: Annotated[Optional[str], typer.Option(help="Pin the stripe size, e.g. 4MiB.")] = None,
    tier: Annotated[Optional[str], typer.Option(help="Pin the tier or file system by name.")] = None,
    collective: Annotated[Optional[bool], typer.Option("--collective/--independent",
                                                       help="Pin collective or independent MPI-IO.")] = None,
    hints: Annotated[Optional[str], typer.Option(help="Pin MPI-IO hints: KEY=VALUE,KEY=VALUE.")] = None,
    mpi: Annotated[Optional[str], typer.Option(help="MPI for the commands: mpich, openmpi, cray, intel or mvapich2, "
                                               "optionally @VERSION (openmpi@4.1.4; default: the center's).")] = None,
    json_out: JsonOption = False,
) -> None:
    """Recommend where and how a job should do its I/O: tier, layout, striping, collective mode and hints.

    Settings you pin (--stripe-count, --tier, --collective, --hints ...) are kept; everything else is chosen.
    """
    with cli_errors():
        opts: dict[str, Any] = {}
        if workload is not None:
            opts.update(read_workload_file(workload))
        if script is not None:
            opts.update(read_script_directives(script))
        given = dict(center=center, system=system, nodes=nodes, ranks_per_node=ranks_per_node,
                     bytes_per_rank=bytes_per_rank, total_bytes=total_bytes, api=api, layout=layout, op=op,
                     access_size=access_size, random=random, files=files, lifetime=lifetime,
                     stripe_count=stripe_count, stripe_size=stripe_size, tier=tier, collective=collective,
                     hints=hints, mpi=mpi)
        opts.update({k: v for k, v in given.items() if v is not None})
        from ..mpiio import parse_mpi
        flavour, version = parse_mpi(str(opts["mpi"])) if opts.get("mpi") else (None, None)
        w, pins = build_request(opts)
        from ..advise import advise
        from ..center import resolve_center
        from ..kb import KB
        with KB.open(kb, create=False) as store:
            c = resolve_center(opts.get("system"), opts.get("center"), store)
            result = advise(w, store, c, pins=pins)
            used, text = commands_text(result, c, flavour, version)
        if json_out:
            doc = advice_json(result)
            doc["mpi"] = {"flavour": used, "version": version if flavour else c.mpi_version, "commands": text}
            print_json(doc)
        else:
            render_advice(result, used, text)
