"""`ioadvise diagnose LOG`: what a job's Darshan log says about its I/O, and what to change."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, print_json, printable

app = command_app()

_STYLE = {"high": "bold red", "warn": "yellow", "info": "cyan"}


def diagnose_report(log: Path, *, kb: Path | None, center: str | None, thresholds: Path | None,
                    ranks_per_node: int | None) -> dict[str, Any]:
    """Run the whole diagnosis and return the JSON document (see docs/diagnose.md)."""
    from ..diagnose import diagnose
    return diagnose(log, kb=kb, center=center, thresholds=thresholds, ranks_per_node=ranks_per_node)


def _value(x: Any) -> str:
    return f"{x:.0f}" if isinstance(x, (int, float)) else "no measured value"


def _render(doc: dict[str, Any], con: Any) -> None:
    # rich is imported here, not at the top: `diagnose --json` does without it (start-up time is a target)
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    job = doc["job"]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    from ..diagnose.report import job_rows
    rows = job_rows(doc)
    for k, v in rows:
        grid.add_row(k, printable(str(v)))   # the log's path and the names it records
    n = {s: sum(1 for f in doc["findings"] if f["severity"] == s) for s in ("high", "warn", "info")}
    con.print(Panel(grid, title=Text("Darshan diagnosis", style="bold"),
                    subtitle=f"{n['high']} high, {n['warn']} warnings, {n['info']} notes", expand=False))
    if job.get("nothing_to_judge"):
        con.print(Text(f"Nothing to judge: {job['nothing_to_judge']}.", style="yellow"))
        return
    if not doc["findings"]:
        con.print(Text(f"No rule fired on what was read ({', '.join(job['modules'])}): nothing there calls for "
                       f"a change.", style="green"))
        return
    con.print(_findings_table(doc, con))


def _findings_table(doc: dict[str, Any], con: Any) -> Any:
    from rich.table import Table
    from rich.text import Text

    from ..diagnose.report import at_stake_text
    job = doc["job"]
    table = Table(show_lines=True, expand=con.is_terminal)   # natural width into a pipe
    table.add_column("ID", no_wrap=True)
    table.add_column("Severity", no_wrap=True)
    table.add_column("Finding", ratio=1)
    for f in doc["findings"]:
        text = Text.assemble((f["title"], "bold"), "\n", f["message"])
        if f.get("time_at_stake_s") is not None:
            text.append(f"\nAt stake: {at_stake_text(f, job)}", style="dim")
        counters = f["evidence"].get("counters") or {}
        if counters:
            text.append("\nCounters: " + ", ".join(f"{k}={v}" for k, v in counters.items()), style="dim")
        for line in f["evidence"].get("arithmetic", []):
            text.append(f"\n  {line}", style="dim")
        adv = f.get("advice")
        if adv:
            cfg = adv["recommendation"]["config"]
            pred, base = adv["recommendation"]["prediction"], adv["baseline"]["prediction"]
            text.append(f"\nAdvisor ({adv['system']}):", style="green")
            text.append(f" {cfg['layout']}, {cfg['api']}, stripe count "
                        f"{cfg['stripe_count'] or '-'}: predicted {_value(pred['value'])} {pred['unit'] or ''} vs "
                        f"{_value(base['value'])} {base['unit'] or ''} with the defaults")
        table.add_row(f["id"], Text(f["severity"], style=_STYLE.get(f["severity"], "")), text)
    return table


@app.command("diagnose")
def diagnose_cmd(
    log: Annotated[Path, typer.Argument(help="Darshan log (.darshan) of the job.", show_default=False)],
    center: Annotated[Optional[str], typer.Option(
        "--center", help="Center config (TOML file, or name in $IOADVISE_CENTERS or data/centers/): gives the OST count.")] = None,
    kb: KBOption = None,
    json_out: JsonOption = False,
    html: Annotated[Optional[Path], typer.Option("--html", help="Also write a self-contained HTML report here.",
                                                 show_default=False)] = None,
    thresholds: Annotated[Optional[Path], typer.Option(
        "--thresholds", help="TOML file overriding rule thresholds ([RULE_ID] tables).", show_default=False)] = None,
    ranks_per_node: Annotated[Optional[int], typer.Option(
        "--ranks-per-node", min=1, help="Ranks per node, where the log states no node count (default: the center "
                                        "file's ranks_per_node, else figures are per process).")] = None,
    record: Annotated[bool, typer.Option(
        "--record", help="Add the job to the KB as a production observation.")] = False,
) -> None:
    """Diagnose a job from its Darshan log: job summary, findings with stable IDs, and what to change."""
    with cli_errors():
        doc = diagnose_report(log, kb=kb, center=center, thresholds=thresholds, ranks_per_node=ranks_per_node)
        if record:
            from ..ingest import import_file
            from ..kb.store import KB
            c_obj = None
            if center:
                from ..center import load_center
                c_obj = load_center(center)
            system = c_obj.name if c_obj else None
            with KB.open(kb, create=True) as store:
                # runs only when the log's files lie under the center's mounts (importers.darshan.placement)
                res = import_file(store, log, "darshan", kind="production", system=system, center=c_obj)
            doc["recorded"] = {"system": system or "unknown", "runs": res.runs, "already_known": res.skipped,
                               "note": res.note}
            if not json_out:
                console.print(printable(f"Recorded {res.runs} production run(s) for system {system or 'unknown'}"
                                        + (" (already in the KB)" if res.skipped else "")
                                        + (f"; {res.note}" if res.note else "") + "."))
        if html is not None:
            from ..diagnose.report import render_html
            from ..util import atomic_write
            atomic_write(html, render_html(doc))
        if json_out:
            print_json(doc)
        else:
            _render(doc, console.get())
            if html is not None:
                console.print(f"HTML report written to {printable(str(html))}")
