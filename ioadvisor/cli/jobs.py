"""`ioadvise jobs collect`: bring the records of wrapped jobs into the knowledge base."""
from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, print_json, table

app = command_app()
jobs_app = typer.Typer(help="Jobs wrapped by `ioadvise wrap` / `ioadvise submit`.", no_args_is_help=True,
                       rich_markup_mode="rich")
app.add_typer(jobs_app, name="jobs")


@jobs_app.command("collect")
def collect(
    targets: Annotated[list[str], typer.Argument(help="Slurm job ids, directories holding ioadvise-JOBID.json "
                                                      "records, or record files.")],
    system: Annotated[Optional[str], typer.Option(help="System the jobs ran on (default: the center's name, "
                                                       "else $SLURM_CLUSTER_NAME, else unknown).")] = None,
    center: Annotated[Optional[str], typer.Option(help="Center file or shipped center name: the system name, "
                                                       "and the file system of each tier (docs/center.md).")]
    = None,
    kb: KBOption = None,
    json_out: JsonOption = False,
) -> None:
    """Add the records wrapped jobs wrote to the KB as production observations.

    A record with staged-out data becomes one write run on its tier (bytes staged out / job wall time, a lower
    bound); a record without a staged volume is listed but holds no measurement. Every record is checked before
    anything is imported; a record imported before adds nothing.
    """
    with cli_errors():
        from ..errors import ImportFormatError
        from ..importers import ImportContext
        from ..inputs import RECORD, read_input
        from ..importers.jobrecord import read_record, record_runs
        from ..ingest import import_file
        from ..kb import KB
        from ..center import center_for, default_system_name
        from ..slurm.records import find_records
        where = center_for(center, system or os.environ.get("SLURM_CLUSTER_NAME"))
        system = default_system_name(where, system)
        paths = find_records(targets)
        checked = []
        for p in paths:
            rec = read_record(read_input(p, RECORD, ImportFormatError), str(p))
            tier = where.tier(rec.tier) if where is not None and rec.tier else None
            fs = tier.filesystem if tier is not None else None
            ctx = ImportContext(source=str(p), system=system, filesystem=fs)
            checked.append((p, rec, fs, record_runs(rec, ctx)))
        rows = []
        with KB.open(kb) as store:
            for p, rec, fs, runs in checked:
                row = {"path": str(p), "job_id": rec.job_id, "exit_code": rec.exit_code, "tier": rec.tier,
                       "staged_out_bytes": rec.staged_out_bytes, "elapsed_s": rec.end - rec.start,
                       "system": system or "unknown", "filesystem": fs or rec.tier,
                       "runs": 0, "status": "stage-out failed: nothing measured" if rec.stage_out_status
                       else "no staged volume: nothing measured"}
                if runs:
                    res = import_file(store, p, "jobrecord", system=system, filesystem=fs, kind="production")
                    row["runs"] = res.runs
                    row["status"] = "already in the KB" if res.skipped else "imported"
                rows.append(row)
    if json_out:
        print_json(rows)
        return
    t = table(("job", "exit", "tier", "staged out", "wall s", "result"), right=("exit", "staged out", "wall s"))
    from ..model.units import format_size
    for r in rows:
        t.add_row(r["job_id"], "-" if r["exit_code"] is None else str(r["exit_code"]), r["tier"] or "-",
                  "-" if r["staged_out_bytes"] is None else format_size(r["staged_out_bytes"]), str(r["elapsed_s"]),
                  r["status"])
    console.print(t)
