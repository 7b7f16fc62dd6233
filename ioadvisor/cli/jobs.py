"""`ioadvise jobs collect`: bring the records of wrapped jobs into the knowledge base."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, print_error, print_json, table, warn

app = command_app()
jobs_app = typer.Typer(help="Jobs wrapped by `ioadvise wrap` / `ioadvise submit`.", no_args_is_help=True,
                       rich_markup_mode="rich")
app.add_typer(jobs_app, name="jobs")


@jobs_app.command("collect")
def collect(
    targets: Annotated[list[str], typer.Argument(help="Slurm job ids, directories holding ioadvise-JOBID.json "
                                                      "records, or record files.")],
    system: Annotated[Optional[str], typer.Option(help="System the jobs ran on (default: the center's name, "
                                                       "else the cluster each record names, else "
                                                       "$SLURM_CLUSTER_NAME, else unknown).")] = None,
    center: Annotated[Optional[str], typer.Option(help="Center file or shipped center name: the system name, "
                                                       "the file system of each tier and its rated peak "
                                                       "(default: the center named like each record's "
                                                       "cluster; docs/center.md).")]
    = None,
    kb: KBOption = None,
    json_out: JsonOption = False,
) -> None:
    """Add the records wrapped jobs wrote to the KB as production observations.

    A record with staged-out data becomes one write run on its tier (bytes staged out / job wall time, a lower
    bound); a record without a staged volume is listed but holds no measurement. Each record is checked on its
    own: it must belong to the job it was found for (job id, user, cluster), name a tier the center file
    describes and stay under the file system's rated peak (else a physical bound). A record that fails is
    listed with the reason and adds nothing, the others are imported (exit 2 when any failed); a record
    imported before adds nothing.
    """
    with cli_errors():
        from ..kb import KB
        from ..center import load_center
        from ..slurm.collect import collect_records
        from ..slurm.records import find_records
        where = load_center(center) if center is not None else None
        found = find_records(targets)
        with KB.open(kb) as store:
            rows = collect_records(store, found, system=system, center=where)
    for r in rows:
        if r["note"]:
            warn(f"{r['path']}: {r['note']}")
    failed = [r for r in rows if r["error"]]
    for r in failed:
        print_error(r["error"])
    if json_out:
        print_json(rows)
    else:
        _print_rows(rows)
    if failed:
        raise typer.Exit(2)


def _print_rows(rows: list[dict]) -> None:
    """The records that could be read, as a table (one that could not was named on stderr)."""
    rows = [r for r in rows if r["job_id"] is not None]
    if not rows:
        return
    from ..model.units import format_size
    t = table(("job", "exit", "tier", "staged out", "wall s", "result"), right=("exit", "staged out", "wall s"))
    for r in rows:
        t.add_row(r["job_id"] or "-", "-" if r["exit_code"] is None else str(r["exit_code"]), r["tier"] or "-",
                  "-" if r["staged_out_bytes"] is None else format_size(r["staged_out_bytes"]),
                  "-" if r["elapsed_s"] is None else str(r["elapsed_s"]), r["status"])
    console.print(t)
