"""An archive scan as a Slurm job array, for archives larger than one node handles.

The submitting process lists the logs and hashes the new ones (so that no content is given to two tasks), then
writes a plan into a work directory: per task a slice of the list of new logs. Each array task diagnoses its
slice with the same worker pool as a one-node scan (as many workers as the task has CPUs) and writes its results
to `task-K.jsonl` in the work directory, atomically. The submitting process merges each task's file into the KB
as it lands, one transaction per task, through the same `add_results` as a one-node scan; merging is idempotent,
so `ioadvise archive merge WORK` after re-running a failed task alone (`sbatch --array=K WORK/archive.sbatch`)
completes the KB, and merging a file twice adds nothing.
"""
from __future__ import annotations

import json
import shlex
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import SlurmError, UsageError
from ..frozen import asdict
from ..util import atomic_write, printable
from .scan import ScanOutcome, list_logs, pending_logs
from .store import add_results, write_failed
from .worker import Settings

__all__ = ["ArrayOutcome", "plan_array", "render_script", "submit", "merge", "wait_and_merge", "run_task"]

PLAN, SCRIPT, RESULT, LOG = "plan.json", "archive.sbatch", "task-{k}.jsonl", "slurm-{job}_{k}.out"

#: how an array task is started: `-P` keeps the current directory off sys.path. A task re-run alone with
#: `sbatch --array=K WORK/archive.sbatch` runs in the directory sbatch was called from, and a folder named
#: `ioadvisor` there (a clone's parent directory) would otherwise become the package the task imports
TASK = (sys.executable, "-P", "-m", "ioadvisor.archive.array")


@dataclass
class ArrayOutcome:
    """What an array scan did: the plan's counts, the job, the tasks merged and those whose results are missing."""

    work: str
    files: int = 0
    unchanged: int = 0
    duplicates: int = 0
    to_read: int = 0
    tasks: int = 0
    job_id: str | None = None
    merged: list[int] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    added: dict[str, int] = field(default_factory=lambda: {"logs": 0, "failed": 0, "jobs": 0, "measured": 0,
                                                           "findings": 0, "runs": 0})
    failed: list[dict[str, str]] = field(default_factory=list)
    notes: list[dict[str, str]] = field(default_factory=list)      # a value of a log left out, per note

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_array(roots: Iterable[str | Path], kb: Any, settings: Settings, *, tasks: int, work: Path,
               timeout: float = 120.0, retry_failed: bool = False, slurm: dict[str, str] | None = None
               ) -> tuple[dict[str, Any], ArrayOutcome]:
    """List and hash the logs, split the new ones into at most `tasks` contiguous slices, write the plan and the
    array script into `work`. Returns the plan and the outcome so far (nothing submitted)."""
    if tasks < 1:
        raise UsageError("--tasks must be at least 1")
    work = work.resolve()
    if work.exists() and any(work.iterdir()):
        raise UsageError(f"{work}: the work directory must be new or empty (it holds one array scan)")
    probe = ScanOutcome()
    files = list_logs(roots)
    seen: list[tuple[str, int, int, str]] = []
    items = [list(x) for x in pending_logs(kb, files, probe, seen, retry_failed=retry_failed)]
    n = min(tasks, len(items)) or 0
    slices = [items[len(items) * k // n: len(items) * (k + 1) // n] for k in range(n)] if n else []
    plan = {"version": 1, "settings": asdict(settings), "timeout": timeout, "seen": seen, "slices": slices,
            "slurm": dict(slurm or {}), "python": sys.executable}
    out = ArrayOutcome(work=str(work), files=len(files), unchanged=probe.unchanged, duplicates=probe.duplicates,
                       to_read=len(items), tasks=n,
                       failed=[{"path": p, "error": e} for p, e in probe.failed])
    atomic_write(work / PLAN, json.dumps(plan))
    if n:
        atomic_write(work / SCRIPT, render_script(work, n, plan["slurm"]), mode=0o755)
    return plan, out


def render_script(work: Path, tasks: int, slurm: dict[str, str]) -> str:
    """The array script: task K diagnoses slice K of the plan. Pure."""
    from ..slurm.array import render
    return render(name="ioadvise-archive", tasks=tasks, output=str(work / LOG.format(job="%A", k="%a")),
                  size=("--ntasks=1", f"--cpus-per-task={int(slurm.get('cpus_per_task') or 1)}"),
                  options={f"--{key}": slurm.get(key) for key in ("partition", "time", "account", "qos", "mem")},
                  comment="each task diagnoses the slice of the plan whose index is its array task id",
                  command=f"exec {shlex.join(TASK)} {shlex.quote(str(work))} "
                          f"\"$SLURM_ARRAY_TASK_ID\"")


def submit(work: Path) -> str:
    """Submit the work directory's array script; returns the job id."""
    from ..slurm.array import submit as submit_array
    return submit_array(work / SCRIPT, cwd=work)


def run_task(work: Path, k: int) -> Path:
    """Body of array task `k`: diagnose its slice with a pool of the task's CPUs; write its results file."""
    from .pool import default_workers
    from .scan import diagnose_logs
    plan = json.loads((work / PLAN).read_text())
    if not 0 <= k < len(plan["slices"]):
        raise UsageError(f"{work}: the plan has {len(plan['slices'])} tasks, not task {k}")
    settings = Settings(**plan["settings"])
    items = [(p, h, size) for p, h, size in plan["slices"][k]]
    recs = list(diagnose_logs(items, settings, default_workers(), plan["timeout"]))
    target = work / RESULT.format(k=k)
    atomic_write(target, "".join(json.dumps(r, sort_keys=True) + "\n" for r in recs))
    return target


def merge(work: Path, kb: Any, out: ArrayOutcome | None = None, *, only: Iterable[int] | None = None,
          center: Any = None) -> ArrayOutcome:
    """Merge the results files present in `work` (or those of the tasks `only`) into the open KB, one
    transaction per task; tasks whose file is missing are listed with the command that re-runs them alone."""
    plan = json.loads((work / PLAN).read_text())
    out = out or ArrayOutcome(work=str(work), tasks=len(plan["slices"]), to_read=sum(map(len, plan["slices"])))
    system = plan["settings"]["system"]
    seen = [tuple(r) for r in plan["seen"]]
    for k in (range(len(plan["slices"])) if only is None else only):
        f = work / RESULT.format(k=k)
        if not f.exists() or k in out.merged:
            continue
        recs = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        unstored: list[tuple[str, str]] = []
        try:
            got, seen = add_results(kb, recs, seen, system=system, center=center, failed=unstored)
        except sqlite3.OperationalError as e:
            raise write_failed(kb, e, out.added["logs"]) from None
        for key, v in got.items():
            out.added[key] += v
        out.failed += [{"path": r["path"], "error": r["error"]} for r in recs if r["status"] != "ok"]
        out.failed += [{"path": p, "error": e} for p, e in unstored]
        out.notes += [{"path": r["path"], "note": n} for r in recs for n in r.get("notes") or ()]
        out.merged.append(k)
    if only is None:
        _, seen = add_results(kb, [], seen, system=system, center=center)   # paths of contents known before
        out.missing = [{"task": k, "rerun": f"sbatch --array={k} {shlex.quote(str(work / SCRIPT))}"}
                       for k in range(len(plan["slices"])) if k not in out.merged]
    return out


def wait_and_merge(work: Path, job_id: str, kb: Any, out: ArrayOutcome, *, timeout: float = 86400,
                   poll: float = 1.0, progress: Callable[[int, int], None] | None = None,
                   center: Any = None) -> ArrayOutcome:
    """Merge each task's results as they land, until all have or the job has left the queue."""
    from ..slurm.array import wait

    def collect() -> int:
        pending = [k for k in range(out.tasks) if k not in out.merged and (work / RESULT.format(k=k)).exists()]
        if pending:
            merge(work, kb, out, only=pending, center=center)
            if progress:
                progress(len(out.merged), out.tasks)
        return len(out.merged)

    if not wait(job_id, collect, out.tasks, timeout=timeout, poll=poll):
        raise SlurmError(f"job {job_id} did not finish within {timeout:.0f} s; merge later with "
                         f"`ioadvise archive merge {work}`")
    merge(work, kb, out, center=center)
    for m in out.missing:
        log = work / LOG.format(job=job_id, k=m["task"])
        m["log"] = str(log) if log.exists() else None
    return out


def _main(argv: list[str]) -> int:
    """`python -P -m ioadvisor.archive.array WORK K`: what one array task runs."""
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m ioadvisor.archive.array WORK_DIR TASK_INDEX", file=sys.stderr)
        return 2
    try:
        target = run_task(Path(argv[0]), int(argv[1]))
    except UsageError as e:
        print(f"Error: {printable(str(e))}", file=sys.stderr)
        return 2
    print(f"wrote {printable(str(target))}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
