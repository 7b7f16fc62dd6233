"""`ioadvise archive`: a center's Darshan archive, diagnosed into the KB and ranked."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.table import Table

from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, progress_bar, print_json

app = command_app()
archive_app = typer.Typer(help="A center's Darshan archive: scan it into the KB, rank what wastes I/O time.",
                          no_args_is_help=True, rich_markup_mode="rich")
app.add_typer(archive_app, name="archive")

WorkersOption = Annotated[Optional[int], typer.Option(
    "--workers", "-j", min=1, help="Worker processes (default: the cores this process may use; inside a Slurm "
                                   "job, SLURM_CPUS_PER_TASK).", show_default=False)]


@archive_app.command("scan")
def scan_cmd(
    roots: Annotated[list[Path], typer.Argument(help="Archive directories (e.g. a YEAR/MONTH/DAY tree) or log "
                                                     "files; every *.darshan file under them is a log.")],
    kb: KBOption = None,
    workers: WorkersOption = None,
    system: Annotated[Optional[str], typer.Option(help="System the jobs ran on (default: the center's name, "
                                                       "else $SLURM_CLUSTER_NAME, else unknown).")] = None,
    center: Annotated[Optional[str], typer.Option(help="Center file or shipped name: the OST count the striping "
                                                       "rules use, as in `ioadvise diagnose --center`.")] = None,
    thresholds: Annotated[Optional[Path], typer.Option(help="TOML file of [RULE_ID] thresholds laid over the "
                                                            "shipped ones.")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Read again the logs an earlier scan "
                                                                      "could not read.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds one log may take before its worker is replaced.")]
    = 120.0,
    json_out: JsonOption = False,
) -> None:
    """Diagnose every Darshan log under ROOTS that the KB has not seen, and store per-job facts, findings and
    production runs in the KB.

    A log is known by the sha256 of its bytes: a copy under another name, or a second scan, adds nothing (a path
    whose size and modification time are unchanged is not even read). Logs are read by long-lived worker
    processes; a log the Darshan library cannot read, or that crashes it, is reported and skipped. Results are
    added in transactions of up to 256 logs, so an interrupted scan keeps what it finished.
    """
    with cli_errors():
        out = _scan(roots, kb, workers, system, center, thresholds, retry_failed, timeout, json_out)
    if json_out:
        print_json(out)
        return
    _render_scan(out)


def _settings(system: str | None, center: str | None, thresholds: Path | None) -> tuple[Any, Any]:
    import os

    from ..archive.worker import Settings
    from ..center import center_for, default_system_name
    from ..diagnose.rules import load_thresholds
    load_thresholds(thresholds)               # a bad thresholds file fails here, before any log is read
    where = center_for(center, system or os.environ.get("SLURM_CLUSTER_NAME"))
    name = default_system_name(where, system) or "unknown"
    return Settings(system=name, center=center, thresholds=str(thresholds.resolve()) if thresholds else None), where


def _scan(roots: list[Path], kb: Path | None, workers: int | None, system: str | None, center: str | None,
          thresholds: Path | None, retry_failed: bool, timeout: float, quiet: bool) -> dict[str, Any]:
    from ..archive.pool import default_workers
    from ..archive.scan import scan
    from ..kb import KB
    settings, where = _settings(system, center, thresholds)
    n = workers or default_workers()
    with KB.open(kb) as store, progress_bar(quiet) as bar:
        task = bar.add_task("Scanning Darshan logs", total=None)
        out = scan(roots, store, settings, workers=n, timeout=timeout, retry_failed=retry_failed, center=where,
                   progress=lambda done, total: bar.update(task, completed=done, total=total))
    return out.as_dict()


def _render_scan(out: dict[str, Any]) -> None:
    a = out["added"]
    rate = f", {out['logs_per_second']:.1f} logs/s" if out["logs_per_second"] else ""
    console.print(f"{out['files']} log files: {out['diagnosed']} read ({out['workers']} workers, "
                  f"{out['seconds']:.1f} s{rate}), {out['unchanged']} unchanged since an earlier scan, "
                  f"{out['duplicates']} copies of logs already scanned.")
    console.print(f"Added {a['jobs']} jobs, {a['findings']} findings and {a['runs']} production runs to the KB.")
    if out["failed"]:
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title="Not read (skipped)")
        t.add_column("log")
        t.add_column("why")
        for f in out["failed"]:
            t.add_row(f["path"], f["error"])
        console.print(t)
    if out["worker_restarts"]:
        console.print(f"{out['worker_restarts']} worker(s) replaced after a log crashed or hung them.")

