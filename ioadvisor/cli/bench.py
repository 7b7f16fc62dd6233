"""`ioadvise bench ...`: run the data and metadata kernels, and sweeps of them."""
from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import typer

from ..errors import IOAdvisorError, UsageError
from . import command_app
from .common import (JsonOption, KBOption, cli_errors, console, err_console, escape, print_error, print_json,
                     printable, printable_table, progress_bar, warn)

app = command_app()

bench_app = typer.Typer(help="Measure I/O on this system (IOR- and mdtest-like kernels, sweeps) into the KB.",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")


SystemOpt = Annotated[Optional[str], typer.Option(
    help="System the runs are filed under (default: the center's name, else $SLURM_CLUSTER_NAME, else the "
         "host name).")]
FilesystemOpt = Annotated[Optional[str], typer.Option(
    help="File system the runs are filed under (default: the center file system whose mount holds --dir, "
         "else the mount point).")]
CenterOpt = Annotated[Optional[str], typer.Option(
    help="Center file or name (in $IOADVISE_CENTERS or shipped): gives the system name and maps --dir to a file system "
         "(docs/center.md).")]


def _check_center(spec: str | None) -> str | None:
    """Load the center before anything runs, so a bad file stops the benchmark with exit 2; a file is
    returned as an absolute path (sweep tasks may start elsewhere)."""
    if spec is None:
        return None
    from ..center import load_center
    load_center(spec)
    return os.path.abspath(spec) if Path(spec).is_file() else spec


def default_result_dir() -> Path:
    from ..util import data_home
    return data_home() / "results"


@contextlib.contextmanager
def _rank_errors() -> Iterator[None]:
    """Errors under a launcher: rank 0 reports; a failure on some ranks only aborts the whole MPI job
    so the other ranks do not wait forever in a barrier."""
    from ..bench.comm import launcher_rank
    try:
        yield
    except IOAdvisorError as e:
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized() and mpi.COMM_WORLD.Get_size() > 1:
            print_error(f"rank {mpi.COMM_WORLD.Get_rank()}: {e}")
            sys.stderr.flush()
            mpi.COMM_WORLD.Abort(e.exit_code)
            raise typer.Exit(e.exit_code) from None   # MPI_Abort may return before the job is torn down
        if launcher_rank() == 0:
            # messages name TOML tables such as [base]: print them literally, not as rich markup
            print_error(str(e))
        raise typer.Exit(e.exit_code) from None


def _finish(res: dict[str, Any] | None, system: str | None, result_dir: Optional[Path], kb: Optional[Path],
            json_out: bool) -> None:
    """Write, import and report the result of a kernel's run: on the first rank (the others have none)."""
    if res is None:
        return
    from ..bench import result
    doc = result.document(res, system=system)
    path = result.write(doc, result_dir or default_result_dir())
    imported = None
    if kb is not None:
        from ..ingest import import_file
        from ..kb import KB
        with KB.open(kb) as store:
            # flagged against the center the benchmark ran under, as `kb import --center` would
            imported = import_file(store, path, "bench", center=doc.get("params", {}).get("center"))
    for w in doc.get("warnings", []):
        warn(str(w))
    if json_out:
        print_json({**doc, "result_file": str(path), "kb_runs": imported.runs if imported else None})
        return
    eff = doc["effective"]
    if doc["kind"] == "data":
        title = (f"{eff['api']} {eff['layout']} {'collective' if eff['collective'] else 'independent'} "
                 f"{eff['access']}{' O_DIRECT' if eff['direct'] else ''}")
    else:
        title = f"metadata, {'unique' if eff['unique_dir'] else 'shared'} directories"
    table = printable_table(title=f"{title}: {eff['ranks']} rank(s) on {eff['nodes']} node(s), {eff['fs_type']} "
                                  f"({eff['mount_point']})")
    for col in ("op", "mean", "min", "max", "sd", "95% CI", "reps", "unit"):
        table.add_column(col, justify="left" if col in ("op", "unit") else "right")
    f = lambda v: "-" if v is None else f"{v:,.1f}"  # noqa: E731
    for r in doc["results"]:
        ci = "-" if r["ci95_low"] is None else f"{r['ci95_low']:,.1f}-{r['ci95_high']:,.1f}"
        table.add_row(r["op"], f(r["mean"]), f(r["min"]), f(r["max"]), f(r["sd"]), ci, str(r["n"]), r["unit"])
    console.print(table)
    if eff.get("hints"):
        keys = sorted(eff["hints"])
        console.print("hints in effect: " + ", ".join(f"{k}={eff['hints'][k]}" for k in keys), highlight=False)
    console.print(printable(f"result: {path}" + (f"; {imported.runs} run(s) added to {kb}" if imported and not
                                                 imported.skipped else "")), highlight=False)


@bench_app.command("run")
def run(
    api: Annotated[str, typer.Option(help="posix, mpiio or hdf5.")] = "posix",
    layout: Annotated[str, typer.Option(help="fpp (a file per process) or shared (one file).")] = "fpp",
    collective: Annotated[bool, typer.Option("--collective/--independent",
                                             help="Collective MPI-IO / HDF5 transfers.")] = False,
    hints: Annotated[Optional[str], typer.Option(help="MPI-IO hints KEY=VALUE,... passed in MPI_Info.")] = None,
    transfer_size: Annotated[str, typer.Option("--transfer-size", "-t", help="Bytes per call, e.g. 1MiB.")] = "1MiB",
    block_size: Annotated[str, typer.Option("--block-size", "-b",
                                            help="Bytes per rank and segment (a multiple of the transfer size).")]
    = "16MiB",
    segments: Annotated[int, typer.Option("--segments", "-s", help="Segments (IOR -s).")] = 1,
    reps: Annotated[int, typer.Option("--reps", "-i", help="Repetitions for mean, spread and 95% CI.")] = 1,
    random: Annotated[bool, typer.Option("--random", help="Issue the transfers in shuffled order.")] = False,
    direct: Annotated[bool, typer.Option("--direct", help="O_DIRECT with page-aligned buffers (POSIX).")] = False,
    ops: Annotated[str, typer.Option(help="Phases to time: write, read or write,read.")] = "write,read",
    hdf5_alignment: Annotated[str, typer.Option("--hdf5-alignment",
                                                help="Start the HDF5 dataset at a multiple of this, e.g. the "
                                                     "stripe size (IOR setAlignment); 0: HDF5's default.")] = "0",
    stripe_count: Annotated[int, typer.Option("--stripe-count", help="Lustre: stripes of every file (lfs setstripe "
                                                                     "-c on --dir first; -1: all OSTs; 0: as the "
                                                                     "directory has it).")] = 0,
    stripe_size: Annotated[str, typer.Option("--stripe-size", help="Lustre: stripe size, a multiple of 64KiB "
                                                                   "(0: as the directory has it).")] = "0",
    directory: Annotated[Path, typer.Option("--dir", "-d", help="Directory the test files go to.")] = Path("."),
    drop_caches: Annotated[bool, typer.Option("--drop-caches",
                                              help="Drop the page cache before reading (root only).")] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the test files.")] = False,
    system: SystemOpt = None,
    filesystem: FilesystemOpt = None,
    center: CenterOpt = None,
    result_dir: Annotated[Optional[Path], typer.Option("--result-dir",
                                                       help="Where the result JSON goes "
                                                            "(default ~/.local/share/ioadvisor/results).")] = None,
    kb: Annotated[Optional[Path], typer.Option("--kb", help="Import the result into this knowledge base.")] = None,
    json_out: JsonOption = False,
) -> None:
    """Time IOR-style write and read phases; run it under `mpiexec -n N` or `srun` for N ranks.

    Bandwidth is total bytes over the span from the first open to the last close (fsync included).
    Rank 0 writes the result JSON and prints it; with --kb the result is added to the knowledge base.
    """
    with cli_errors(), _rank_errors():
        from ..bench.params import data_params
        p = data_params(dict(api=api, layout=layout, collective=collective, hints=hints,
                             transfer_size=transfer_size, block_size=block_size, segments=segments, reps=reps,
                             random=random, direct=direct, ops=ops, dir=str(directory), drop_caches=drop_caches,
                             keep=keep, system=system, hdf5_alignment=hdf5_alignment, filesystem=filesystem,
                             stripe_count=stripe_count, stripe_size=stripe_size,
                             center=_check_center(center)))
        if drop_caches and os.geteuid() != 0:
            raise UsageError("--drop-caches needs root; use --direct or a data set larger than memory instead")
        from ..bench.kernel import run_data
        _finish(run_data(p), system, result_dir, kb, json_out)


@bench_app.command("md")
def md(
    files_per_dir: Annotated[int, typer.Option("--files-per-dir", "-n", help="Items per directory.")] = 100,
    dirs_per_rank: Annotated[int, typer.Option("--dirs-per-rank", help="Directories per rank.")] = 1,
    unique_dir: Annotated[bool, typer.Option("--unique-dir", "-u",
                                             help="Each rank in its own directory tree (mdtest -u).")] = False,
    file_size: Annotated[str, typer.Option("--file-size", help="Bytes written at create and read back.")] = "0",
    items: Annotated[str, typer.Option(help="files (mdtest -F), dirs (-D) or both.")] = "files",
    reps: Annotated[int, typer.Option("--reps", "-i", help="Repetitions.")] = 1,
    directory: Annotated[Path, typer.Option("--dir", "-d", help="Directory the tree is made in.")] = Path("."),
    system: SystemOpt = None,
    filesystem: FilesystemOpt = None,
    center: CenterOpt = None,
    result_dir: Annotated[Optional[Path], typer.Option("--result-dir", help="Where the result JSON goes.")] = None,
    kb: Annotated[Optional[Path], typer.Option("--kb", help="Import the result into this knowledge base.")] = None,
    json_out: JsonOption = False,
) -> None:
    """Time create, stat, read and remove of many small files (and directories), mdtest-style, in ops/s."""
    with cli_errors(), _rank_errors():
        from ..bench.params import md_params
        p = md_params(dict(files_per_dir=files_per_dir, dirs_per_rank=dirs_per_rank, unique_dir=unique_dir,
                           file_size=file_size, items=items, reps=reps, dir=str(directory), system=system,
                           filesystem=filesystem, center=_check_center(center)))
        from ..bench.mdkernel import run_md
        _finish(run_md(p), system, result_dir, kb, json_out)


@bench_app.command("sweep")
def sweep(
    file: Annotated[Path, typer.Argument(help="Sweep TOML: base settings, lists of values to vary, "
                                              "exclude/include tables, Slurm options (see docs/bench.md).")],
    mode: Annotated[str, typer.Option(help="allocation: run each config with mpiexec here, one after the other; "
                                           "array: submit one Slurm job array, then wait and import.")]
    = "allocation",
    results: Annotated[Optional[Path], typer.Option(help="Directory for plan, script and result files "
                                                         "(default: a new one under "
                                                         "~/.local/share/ioadvisor/results).")] = None,
    kb: KBOption = None,
    no_kb: Annotated[bool, typer.Option("--no-kb", help="Only write result files; import nothing.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Validate and show the plan (and the array script); "
                                                            "run nothing.")] = False,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Array mode: submit and return; import later with "
                                                            "`ioadvise kb import RESULTS`.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the whole sweep.")] = 3600,
    system: SystemOpt = None,
    filesystem: FilesystemOpt = None,
    center: CenterOpt = None,
    json_out: JsonOption = False,
) -> None:
    """Run the cartesian product of a sweep file and import every result into the KB.

    The whole sweep is validated first: an unknown key or an impossible combination (e.g. collective POSIX)
    stops it before anything runs, naming the key.
    """
    with cli_errors(), _rank_errors():
        from ..bench import sweep as sw
        if mode not in ("allocation", "array"):
            raise UsageError(f"--mode: {mode!r} is not allocation or array")
        plan = sw.plan_sweep(file, results, default_results=default_result_dir())
        naming = {k: v for k, v in (("system", system), ("filesystem", filesystem),
                                    ("center", _check_center(center))) if v}
        for c in plan.configs:          # the command line names the runs of every config (over the sweep file)
            c.settings.update(naming)
            c.settings["center"] = _check_center(c.settings.get("center"))
        if dry_run:
            _show_sweep(plan, mode, json_out)
            return
        refused = sw.srun_without_mpi(plan)
        if refused:
            raise UsageError(f"{file}: {refused}")
        out = _run_sweep(plan, mode, False if no_kb else kb, no_wait=no_wait, timeout=timeout, json_out=json_out)
        _report_sweep(plan, mode, out, json_out)
        if out.failed and not (mode == "array" and no_wait):
            raise typer.Exit(1)


def _show_sweep(plan: Any, mode: str, json_out: bool) -> None:
    """`--dry-run`: the plan's configs (and, in array mode, the job script), nothing run."""
    from ..bench import sweep as sw
    doc = {"plan": json.loads(plan.to_json()), "mode": mode}
    if mode == "array":
        doc["script"] = sw.render_array_script(plan, Path(plan.results) / sw.PLAN_FILE)
    if json_out:
        print_json(doc)
        return
    table = printable_table(title=f"sweep {plan.name}: {len(plan.configs)} config(s), {plan.kind}")
    for col in ("#", "ranks", "config"):
        table.add_column(col)
    for c in plan.configs:
        table.add_row(str(c.index), str(c.ranks), c.label)
    console.print(table)
    if mode == "array":
        typer.echo(doc["script"], nl=False)


def _run_sweep(plan: Any, mode: str, target_kb: Any, *, no_wait: bool, timeout: float, json_out: bool) -> Any:
    """Run the sweep here (allocation) or as a job array (waiting for it unless `no_wait`), with a progress bar;
    the outcome."""
    from ..bench import sweep as sw
    with progress_bar(json_out) as prog:
        task = prog.add_task(f"sweep {plan.name}", total=len(plan.configs))

        def progress(event: str, done: int, total: int, label: str) -> None:
            prog.update(task, completed=done, description=f"{plan.name}: {label}")

        if mode == "allocation":
            return sw.run_allocation(plan, kb=target_kb, progress=progress, timeout=timeout)
        job_id, script = sw.submit_array(plan)
        err_console.print(f"submitted job array {job_id} ({printable(str(script))})", highlight=False)
        if no_wait:
            return sw.SweepOutcome(plan, job_id=job_id)
        return sw.wait_and_ingest(plan, job_id, kb=target_kb, progress=progress, timeout=timeout)


def _report_sweep(plan: Any, mode: str, out: Any, json_out: bool) -> None:
    """What was measured and imported, and each failed config (with its array task)."""
    summary = {"name": plan.name, "mode": mode, "configs": len(plan.configs), "results_dir": plan.results,
               "job_id": out.job_id, "results": out.results, "kb_runs": out.kb_runs,
               "failed": [{"index": i, "config": plan.configs[i].label, "error": e,
                           "task": f"{out.job_id}_{i}" if out.job_id else None} for i, e in out.failed]}
    if json_out:
        print_json(summary)
        return
    console.print(f"sweep {plan.name}: {len(out.results)} of {len(plan.configs)} config(s) measured, "
                  f"{out.kb_runs} run(s) added to the KB; results in {plan.results}", highlight=False)
    for f in summary["failed"]:
        task = f" (array task {f['task']})" if f["task"] else ""
        err_console.print(f"[red]failed[/] config {f['index']}{task} ({escape(str(f['config']))}): "
                          f"{escape(str(f['error']))}", highlight=False, markup=True)


@bench_app.command("plan")
def plan(
    budget: Annotated[int, typer.Option("--budget", "-n", help="How many benchmark points to propose.")] = 8,
    system: Annotated[Optional[str], typer.Option(help="System to plan for (a shipped center or a system of the "
                                                       "KB).")] = None,
    center: CenterOpt = None,
    filesystem: Annotated[Optional[str], typer.Option(help="File system to measure (default: the one jobs use "
                                                           "unless told otherwise).")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Sweep file to write (default: "
                                                                     "plan-SYSTEM.toml here).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the sweep file if it exists.")] = False,
    directory: Annotated[Optional[str], typer.Option("--dir", help="Directory the benchmarks write to (default: "
                                                                   "ioadvise-plan under the file system's mount).")]
    = None,
    max_nodes: Annotated[Optional[int], typer.Option("--max-nodes", help="Largest node count to propose "
                                                                         "(default: twice the largest measured, or "
                                                                         "the targets' largest).")] = None,
    ranks_per_node: Annotated[Optional[int], typer.Option("--ranks-per-node", help="Most ranks per node to "
                                                                                   "propose (default: the "
                                                                                   "targets').")] = None,
    transfer_size: Annotated[str, typer.Option("--transfer-size", "-t", help="Bytes per call of the "
                                                                             "benchmarks.")] = "1MiB",
    block_size: Annotated[str, typer.Option("--block-size", "-b", help="Bytes per rank of the benchmarks.")]
    = "1GiB",
    reps: Annotated[int, typer.Option("--reps", "-i", help="Repetitions of each benchmark.")] = 3,
    objective: Annotated[str, typer.Option(help="options: narrow the interval of every option the advice weighs "
                                                "for each target; decision: narrow the interval of the ratio the "
                                                "advice's choice turns on (the option it advises / "
                                                "default).")] = "options",
    partition: Annotated[Optional[str], typer.Option(help="[slurm] partition of the sweep file.")] = None,
    time_limit: Annotated[Optional[str], typer.Option("--time", help="[slurm] time limit of each array task.")]
    = None,
    kb: KBOption = None,
    json_out: JsonOption = False,
) -> None:
    """Propose the benchmark points that would most narrow the advice's intervals for the center's common
    workloads (its production records in the KB, else a default set), and write them as a sweep file that
    `ioadvise bench sweep FILE --mode array` runs as one Slurm job array.
    """
    with cli_errors():
        from ..bench import plan as bp
        from ..center import resolve_center
        from ..kb import KB
        _check_plan_options(budget, reps, transfer_size, block_size)
        center_path = _check_center(center)
        with progress_bar(json_out) as prog:
            task = prog.add_task("fitting and planning", total=None)
            with KB.open(kb) as store:
                c = resolve_center(system, center_path, store)
                result = bp.plan_for(store, system, c, budget, filesystem=filesystem, max_nodes=max_nodes,
                                     rpn_max=ranks_per_node, objective=objective)
            prog.update(task, completed=1, total=1)
        path = out or Path(f"plan-{c.name}.toml")
        _write_sweep_file(path, result, c, directory, force=force, center_path=center_path,
                          transfer_size=transfer_size, block_size=block_size, reps=reps,
                          slurm={"partition": partition, "time": time_limit})
        if json_out:
            print_json({**result.to_json(), "sweep_file": str(path)})
        else:
            _render_plan(result, path)


def _check_plan_options(budget: int, reps: int, transfer_size: str, block_size: str) -> None:
    """Options that would make a plan nobody can run stop before the model is fitted."""
    from ..bench.params import data_params
    if budget < 1:
        raise UsageError(f"--budget must be at least 1, got {budget}")
    if reps < 1:
        raise UsageError(f"--reps must be at least 1, got {reps}")
    data_params({"transfer_size": transfer_size, "block_size": block_size})   # bad sizes stop here


def _write_sweep_file(path: Path, result: Any, center: Any, directory: str | None, *, force: bool,
                      center_path: str | None, transfer_size: str, block_size: str, reps: int,
                      slurm: dict[str, str | None]) -> None:
    """The plan written as a sweep file that `bench sweep` accepts, benchmarks under `directory` (default: below
    the file system's mount); an existing file only with `force`."""
    from ..bench import plan as bp
    from ..bench.sweep import plan_sweep
    from ..util import atomic_write
    fs = center.filesystem(result.filesystem)
    target_dir = directory or (bp.default_dir(fs) if fs else None)
    if not target_dir:
        raise UsageError(f"{result.filesystem} has no mount in the center file to put the benchmarks under: "
                         f"give --dir")
    text = bp.sweep_text(result, directory=os.path.abspath(os.path.expanduser(target_dir)),
                         transfer_size=transfer_size, block_size=block_size, reps=reps,
                         center=center_path if center_path and Path(center_path).is_file() else None,
                         slurm=slurm)
    plan_sweep(path, text=text)          # what is written, bench sweep accepts
    if path.exists() and not force:
        raise UsageError(f"{path} exists: pass --force to overwrite it, or --out another file")
    atomic_write(path, text)


def _render_advice(result: Any) -> None:
    """What `ioadvise advise` advises for each target now: the choice the plan's points would confirm or overturn."""
    from ..model.units import format_size
    for t, a in zip(result.targets, result.advice):
        w = t.workload
        mode = "" if a["collective"] is None else (" coll" if a["collective"] else " indep")
        where = a["tier"] or a["filesystem"]
        stripes = f", {a['stripe_count']} stripe(s)" if a["stripe_count"] else ""
        size = f" x {format_size(a['stripe_size'])}" if stripes and a["stripe_size"] else ""
        pred = f" (predicted {a['predicted']:,.0f} {a['unit']})" if a["predicted"] is not None else ""
        console.print(printable(f"advised now for {w.nodes}x{w.ranks_per_node} {w.api} {w.layout} {w.op}: "
                                f"{where}, {a['layout']}, {a['api']}{mode}{stripes}{size}{pred}"),
                      highlight=False, soft_wrap=True)


def _render_plan(result: Any, path: Path) -> None:
    src = ("the KB's production records" if result.target_source == "production"
           else "the default workloads (no production records in the KB; archived jobs are never targets)")
    console.print(f"{result.system} ({result.filesystem}): {len(result.proposals)} of {result.candidates} "
                  f"candidate point(s), for {len(result.targets)} workload(s) from {src}", highlight=False)
    decision = result.objective == "decision"
    from ..bench.plan import WIDE
    table = printable_table(title="proposed benchmarks and the typical 90% interval (high/low) expected "
                                  + ("of the ratio advised option / default at each target" if decision else
                                     "at the targets' options") + " once each is measured")
    cols = ["#", "nodes", "ranks/node", "API", "layout", "stripes"] + \
        (["advised/default"] if decision else ["mean bw", "one run"]) + ["narrower by"]
    for col in cols:
        table.add_column(col, justify="right" if col not in ("API", "layout") else "left")
    prev = result.posterior_now
    for k, p in enumerate(result.proposals, 1):
        b = p.point
        mode = b.api if b.collective is None else f"{b.api} {'coll' if b.collective else 'indep'}"
        # in log space: the share of the interval's (log) width this point removes
        red = (math.log(prev) - math.log(p.posterior_after)) / math.log(prev) if prev > 1 else 0.0
        widths = [f"{p.posterior_after:.2f}x"] + ([] if decision else [f"{p.width_after:.2f}x"])
        table.add_row(str(k), str(b.nodes), str(b.ranks_per_node), mode, b.layout,
                      "default" if b.stripe_count is None else str(b.stripe_count), *widths, f"{100 * red:.1f}%")
        prev = p.posterior_after
    console.print(table)
    last = result.proposals[-1]
    what = "of advised option / default" if decision else "of the mean bandwidth"
    pct = lambda v: f"{100 * v:.0f}%"  # noqa: E731
    console.print(f"typical 90% interval {what} (high/low): now {result.posterior_now:.2f}x, after these points "
                  f"{last.posterior_after:.2f}x, after as many random points of the grid {result.posterior_random:.2f}x"
                  + ("" if decision else f"; of one run: {result.width_now:.2f}x, {last.width_after:.2f}x, "
                     f"{result.width_random:.2f}x"), highlight=False, soft_wrap=True)
    console.print(f"typical: the geometric mean over the targets' options (weighted), each counted at most "
                  f"{WIDE:.0f}x; an interval wider than {WIDE:.0f}x (the prediction within 10x either way) means "
                  f"the model cannot predict there: {pct(result.wide_now)} of the options now, "
                  f"{pct(result.wide_after)} after these points, {pct(result.wide_random)} after random points",
                  highlight=False, soft_wrap=True)
    _render_advice(result)
    for n in result.notes:
        console.print(f"Note: {n}", highlight=False)
    console.print(printable(f"sweep file: {path} (run it with: ioadvise bench sweep {path} --mode array)"), highlight=False)
