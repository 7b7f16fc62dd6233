"""`ioadvise archive`: a center's Darshan archive, diagnosed into the KB and ranked."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, printable, progress_bar, print_json, table

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
                                                       "rules use, as in `ioadvise diagnose --center`, and the "
                                                       "mounts a job's files must lie under for it to become "
                                                       "production runs (else it is kept as a diagnosis).")] = None,
    thresholds: Annotated[Optional[Path], typer.Option(help="TOML file of [RULE_ID] thresholds laid over the "
                                                            "shipped ones.")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Read again the logs an earlier scan "
                                                                      "could not read.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds one log may take before its worker is replaced.")]
    = 120.0,
    mode: Annotated[str, typer.Option(help="local: workers on this node; array: a Slurm job array, each task a "
                                           "slice of the new logs.")] = "local",
    tasks: Annotated[int, typer.Option(min=1, help="Array mode: number of array tasks.")] = 4,
    work: Annotated[Optional[Path], typer.Option(help="Array mode: a new directory on storage the compute nodes "
                                                      "share, for the plan, the script and the tasks' results "
                                                      "(default: ./ioadvise-archive-DATE-TIME).")] = None,
    cpus_per_task: Annotated[int, typer.Option(min=1, help="Array mode: CPUs (workers) per task.")] = 1,
    partition: Annotated[Optional[str], typer.Option(help="Array mode: sbatch --partition.")] = None,
    time_limit: Annotated[Optional[str], typer.Option("--time", help="Array mode: sbatch --time per task.")]
    = None,
    account: Annotated[Optional[str], typer.Option(help="Array mode: sbatch --account.")] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Array mode: wait for the tasks and merge "
                                                                 "their results (else merge later with "
                                                                 "`ioadvise archive merge WORK`).")] = True,
    worker_memory: Annotated[str, typer.Option(help="Memory (address space) each worker may use, e.g. 8GiB: a "
                                                    "log that needs more fails alone, its worker replaced.")] = "4GiB",
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
        chosen = _settings(mode, system, center, thresholds, worker_memory)
        if mode == "array":
            out = _scan_array(roots, kb, chosen, retry_failed, timeout, tasks, work, wait, json_out,
                              {"cpus_per_task": str(cpus_per_task), "partition": partition, "time": time_limit,
                               "account": account})
        else:
            out = _scan(roots, kb, workers, chosen, retry_failed, timeout, json_out)
    if json_out:
        print_json(out)
        return
    if mode == "array":
        _render_array(out)
    else:
        _render_scan(out)


def _settings(mode: str, system: str | None, center: str | None, thresholds: Path | None,
              memory: str) -> tuple[Any, Any]:
    """(the workers' Settings, the center the runs are filed under), from the options; UsageError for a bad one."""
    import os

    from ..errors import UsageError
    from ..model.units import parse_size
    if mode not in ("local", "array"):
        raise UsageError(f"--mode {mode!r}: use local or array")
    try:
        limit = parse_size(memory)
    except UsageError as e:
        raise UsageError(f"--worker-memory: {e}") from None
    if limit < 256 << 20:
        raise UsageError(f"--worker-memory {memory}: a worker needs at least 256MiB")
    from ..archive.worker import Settings
    from ..center import center_for, default_system_name
    from ..diagnose.rules import load_thresholds
    load_thresholds(thresholds)               # a bad thresholds file fails here, before any log is read
    where = center_for(center, system or os.environ.get("SLURM_CLUSTER_NAME"))
    name = default_system_name(where, system) or "unknown"
    # the workers load the center the scan files runs under (a file by its absolute path: array tasks run
    # elsewhere; a shipped center found by the system's name by that name)
    spec = str(Path(center).resolve()) if center and Path(center).is_file() else (where.name if where else None)
    return Settings(system=name, center=spec, thresholds=str(thresholds.resolve()) if thresholds else None,
                    memory=limit), where


def _scan(roots: list[Path], kb: Path | None, workers: int | None, chosen: tuple[Any, Any], retry_failed: bool,
          timeout: float, quiet: bool) -> dict[str, Any]:
    from ..archive.pool import default_workers
    from ..archive.scan import one_scan_at_a_time, scan
    from ..kb import KB
    from .common import err_console
    settings, where = chosen
    n = workers or default_workers()

    def waiting() -> None:
        err_console.print(printable(f"another archive scan of {store.path} is running: waiting for it to end"),
                          highlight=False, soft_wrap=True)

    with KB.open(kb) as store, one_scan_at_a_time(store.path, waiting), progress_bar(quiet) as bar:
        task = bar.add_task("Scanning Darshan logs", total=None)
        out = scan(roots, store, settings, workers=n, timeout=timeout, retry_failed=retry_failed, center=where,
                   progress=lambda done, total: bar.update(task, completed=done, total=total))
    return out.as_dict()


def _scan_array(roots: list[Path], kb: Path | None, chosen: tuple[Any, Any], retry_failed: bool, timeout: float,
                tasks: int, work: Path | None, wait: bool, quiet: bool, slurm: dict[str, Any]) -> dict[str, Any]:
    import datetime as _dt

    from ..archive import array
    from ..kb import KB
    settings, where = chosen
    if work is None:
        work = Path(f"ioadvise-archive-{_dt.datetime.now():%Y%m%d-%H%M%S}")
    with KB.open(kb) as store:
        _, out = array.plan_array(roots, store, settings, tasks=tasks, work=work, timeout=timeout,
                                  retry_failed=retry_failed, slurm=slurm)
        if not out.tasks:
            array.merge(Path(out.work), store, out, center=where)     # only paths of logs known before
            return out.as_dict()
        out.job_id = array.submit(Path(out.work))
        if wait:
            with progress_bar(quiet) as bar:
                task = bar.add_task(f"Array job {out.job_id}: tasks merged", total=out.tasks)
                array.wait_and_merge(Path(out.work), out.job_id, store, out, center=where,
                                     progress=lambda done, total: bar.update(task, completed=done, total=total))
    return out.as_dict()


@archive_app.command("merge")
def merge_cmd(
    work: Annotated[Path, typer.Argument(help="The work directory of an array scan.")],
    kb: KBOption = None,
    center: Annotated[Optional[str], typer.Option(help="Center file or shipped name, as given to the scan "
                                                       "(evidence flags of the production runs).")] = None,
    json_out: JsonOption = False,
) -> None:
    """Merge the results of an array scan's tasks into the KB (each task one transaction; results merged
    before add nothing), and list the tasks whose results are missing with the command that re-runs each."""
    with cli_errors():
        from ..archive import array
        from ..errors import UsageError
        from ..kb import KB
        if not (work / array.PLAN).is_file():
            raise UsageError(f"{work}: not the work directory of an array scan (no {array.PLAN})")
        where = None
        if center:
            from ..center import load_center
            where = load_center(center)
        with KB.open(kb) as store:
            out = array.merge(work.resolve(), store, center=where).as_dict()
    if json_out:
        print_json(out)
        return
    _render_array(out)


def _render_array(out: dict[str, Any]) -> None:
    a = out["added"]
    head = f"Array job {out['job_id']}: " if out.get("job_id") else ""
    console.print(f"{head}{out['to_read']} new logs in {out['tasks']} task(s) (work directory {printable(str(out['work']))}); "
                  f"{len(out['merged'])} task(s) merged: {a['jobs']} jobs ({a['measured']} with their files under "
                  f"the center's mounts), {a['findings']} findings, {a['runs']} production runs added.",
                  highlight=False)
    for f in out["failed"]:
        console.print(printable(f"Not read (skipped): {f['path']}: {f['error']}"), highlight=False)
    for n in out["notes"]:
        console.print(printable(f"Left out: {n['path']}: {n['note']}"), highlight=False)
    for m in out["missing"]:
        console.print(printable(f"Task {m['task']} has no results: re-run it alone with `{m['rerun']}`, then "
                                f"`ioadvise archive merge {out['work']}`"), highlight=False)


def _render_scan(out: dict[str, Any]) -> None:
    a = out["added"]
    rate = f", {out['logs_per_second']:.1f} logs/s" if out["logs_per_second"] else ""
    console.print(f"{out['files']} log files: {out['diagnosed']} read ({out['workers']} workers, "
                  f"{out['seconds']:.1f} s{rate}), {out['unchanged']} unchanged since an earlier scan, "
                  f"{out['duplicates']} copies of logs already scanned.")
    console.print(f"Added {a['jobs']} jobs, {a['findings']} findings and {a['runs']} production runs to the KB; "
                  f"{a['measured']} of the jobs had their files under the center's mounts (measurements of its file "
                  f"systems), the other {a['jobs'] - a['measured']} are kept as diagnoses only.", highlight=False)
    if out["failed"]:
        t = table(("log", "why"), title="Not read (skipped)")
        for f in out["failed"]:
            t.add_row(printable(f["path"]), printable(f["error"]))
        console.print(t)
    if out["notes"]:
        t = table(("log", "what"), title="Read, with impossible values left out")
        for n in out["notes"]:
            t.add_row(printable(n["path"]), printable(n["note"]))
        console.print(t)
    if out["worker_restarts"]:
        console.print(f"{out['worker_restarts']} worker(s) replaced after a log crashed or hung them.")


@archive_app.command("report")
def report_cmd(
    kb: KBOption = None,
    top: Annotated[int, typer.Option(min=1, help="Rows per ranking.")] = 10,
    ranks_per_node: Annotated[Optional[int], typer.Option(
        min=1, help="Ranks per node, to count the nodes of jobs whose log states no node count (default: the "
                    "center file's ranks_per_node; else such jobs are counted in processes only).",
        show_default=False)] = None,
    center: Annotated[Optional[str], typer.Option(help="Center file or shipped name whose ranks_per_node counts "
                                                       "nodes (default: the shipped center of each log's "
                                                       "system).")] = None,
    system: Annotated[Optional[str], typer.Option(help="Only the logs scanned for this system.")] = None,
    json_out: JsonOption = False,
) -> None:
    """Rank the scanned jobs, users, applications and rules by the I/O time at stake, in process-hours (and
    node-hours where the node count is known), with the saving a measurement backs and the fix for each rule
    (docs/archive.md defines every figure)."""
    with cli_errors():
        from ..archive.report import center_report
        from ..kb import KB
        with KB.open(kb, create=False) as store:
            doc = center_report(store, top=top, ranks_per_node=ranks_per_node, system=system,
                                center_rpn=_center_rpn(store, center))
    if json_out:
        print_json(doc)
        return
    _render_report(doc)


def _center_rpn(store: Any, center: str | None) -> dict[str, int]:
    """Ranks per node by system: of the shipped center named like each scanned system, and of `center`."""
    from ..center import find_center, load_center
    from ..kb.archive import scanned_systems
    out = {}
    for name in scanned_systems(store):
        c = find_center(name)
        if c is not None and c.ranks_per_node:
            out[name.lower()] = c.ranks_per_node
    if center:
        c = load_center(center)
        if c.ranks_per_node:
            out[c.name.lower()] = c.ranks_per_node
    return out


def _h(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def _nodes_text(j: dict[str, Any]) -> str:
    return f"{j['nodes']:,}" if j["nodes"] is not None else f"({j['nprocs']:,} processes)"


def _render_report(doc: dict[str, Any]) -> None:
    tot, logs = doc["totals"], doc["logs"]
    saving = (f"the savings backed by the evidence (the low end of each finding's expected saving, or a measured "
              f"gain; on {tot['jobs_with_saving']} job(s)) come to about {_h(tot['saving_process_hours'])}"
              if tot["jobs_with_saving"] else "no measurement backs a saving for any of them")
    empty = f", {logs['empty_files']} empty files" if logs["empty_files"] else ""
    if logs.get("impossible_jobs_left_out"):
        empty += (f", {logs['impossible_jobs_left_out']} jobs left out whose stored process count or times are "
                  f"impossible (scanned by an earlier version: scan them again with --retry-failed after removing "
                  f"them)")
    console.print(f"{logs['scanned']} logs scanned ({logs['failed']} unreadable{empty}), {tot['jobs']} jobs using "
                  f"{_h(tot['process_hours'])} process-hours; {tot['jobs_with_findings']} jobs with findings put "
                  f"{_h(tot['at_stake_process_hours'])} process-hours of I/O time at stake; {saving}. Node counts: "
                  f"{tot['jobs_with_nodes']} of {tot['jobs']} jobs ({_h(tot['at_stake_node_hours'])} node-hours "
                  f"at stake among them); the others are counted in processes only. {tot['jobs_measured']} job(s) "
                  f"had their files under the center's mounts (measurements); the rest are diagnoses only.",
                  highlight=False)
    if not tot["jobs"]:
        console.print("No jobs in the KB's archive tables: run `ioadvise archive scan` first.")
        return
    t = table(("#", "job", "user", "application", "nodes", "run s", "at stake proc-h", "saving proc-h",
               "at stake node-h", "rules"),
              right=("#", "nodes", "run s", "at stake proc-h", "saving proc-h", "at stake node-h"),
              title="Jobs by I/O time at stake")
    for i, j in enumerate(doc["jobs"], 1):
        t.add_row(str(i), str(j["jobid"]), str(j["uid"]), printable(j["app"]), _nodes_text(j),
                  f"{j['run_time_s']:.0f}",
                  _h(j["at_stake_process_hours"]), _h(j["saving_process_hours"]), _h(j["at_stake_node_hours"]),
                  ", ".join(f["rule"] for f in j["findings"]) or "-")
    console.print(t)
    for key, title in (("users", "Users"), ("applications", "Applications")):
        col = "uid" if key == "users" else "app"
        t = table((title[:-1].lower(), "jobs", "with findings", "proc-h", "at stake proc-h", "saving proc-h",
                   "top rule"), right=("jobs", "with findings", "proc-h", "at stake proc-h", "saving proc-h"),
                  title=f"{title} by I/O time at stake")
        for g in doc[key]:
            t.add_row(printable(str(g[col])), str(g["jobs"]), str(g["jobs_with_findings"]), _h(g["process_hours"]),
                      _h(g["at_stake_process_hours"]), _h(g["saving_process_hours"] or None), g["top_rule"] or "-")
        console.print(t)
    if doc["rules"]:
        from rich.text import Text
        console.print(Text("Top fixes", style="bold"))
        for i, g in enumerate(doc["rules"], 1):
            ex = g["example"]
            save = (f"saving {_h(g['saving_process_hours'])} (backed on {g['jobs_with_saving']} job(s))"
                    if g["jobs_with_saving"] else "no measurement backs a saving")
            if g.get("saving_up_to_process_hours"):
                save += f"; it may save up to {_h(g['saving_up_to_process_hours'])} process-hours"
            console.print(Text.assemble((f"{i}. {g['rule']} ", "bold"), g["title"],
                                        f": {g['jobs']} job(s), {_h(g['at_stake_process_hours'])} process-hours "
                                        f"at stake, {save}"))
            # the application name is the log's command line and the message names the job's files: both the
            # user's text, escaped as diagnose escapes it
            console.print(printable(f"   Costliest: job {ex['jobid']} (user {ex['uid']}, {ex['app']}): "
                                    f"{ex['message']}"), highlight=False)
            if ex.get("command"):
                console.print(printable(f"   Command: {ex['command']}"), highlight=False)
