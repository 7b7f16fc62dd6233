"""The per-log work of an archive scan, as it runs inside a pool worker: read the log with the Darshan library,
judge it with the same rules and settings as `ioadvise diagnose`, and return plain data the parent stores.

A worker never opens the KB (findings are judged with `use_kb=False`); what it returns is JSON-ready, so the
same records can travel through a pipe (one node) or a file (a Slurm array task).
"""
from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from ..errors import IOAdvisorError, UsageError
from ..frozen import frozen
from ..util import printable

__all__ = ["Settings", "setup", "app_name", "job_facts"]


@frozen
class Settings:
    """What every log of one scan is judged and filed with."""

    system: str = "unknown"
    center: str | None = None        # center file or shipped name: OST count for the striping rules, and the
                                     # mounts a log's files must lie under for it to become production runs
    thresholds: str | None = None    # user thresholds file laid over the shipped ones
    memory: int = 4 << 30            # address space a worker may use (RLIMIT_AS): a log needing more fails alone


def app_name(exe: str) -> str:
    """The application a job ran: the base name of the first word of its command line."""
    first = exe.strip().split(maxsplit=1)[0] if exe.strip() else ""
    return os.path.basename(first.rstrip("/")) or exe.strip() or "(not recorded)"


INT64_MAX = 2 ** 63 - 1


def _finite(obj: Any, dropped: list[int]) -> Any:
    """Plain data with every float that is not finite (NaN, an infinity) replaced by None; `dropped` counts
    them. JSON text of the result is strict and sqlite stores each number as it is."""
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        dropped[0] += 1
        return None
    if isinstance(obj, dict):
        return {k: _finite(v, dropped) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v, dropped) for v in obj]
    return obj


def _api_sum(s: Any, attr: str, what: str, top: float, notes: list[str]) -> float:
    """The POSIX + STDIO total of `attr` (as `LogSummary.bytes_read` and `Diagnosis.io_time_per_rank` add them),
    each API's part kept only when it is a finite number from 0 to `top`; a part left out is noted."""
    total = 0
    for api in ("POSIX", "STDIO"):
        if api not in s.apis:
            continue
        v = getattr(s.apis[api], attr)
        if isinstance(v, float) and not math.isfinite(v) or not 0 <= v <= top:
            limit = f", above {top:,}" if math.isfinite(top) else ""
            notes.append(f"{api} {what}: {v} is impossible (not a number, infinite, negative{limit}): left out")
            continue
        total += v
    if total > top:
        notes.append(f"{what}: POSIX and STDIO sum to {total:,}, above {top:,}: left out")
        return 0
    return total


def job_facts(d: Any, notes: list[str] | None = None) -> dict[str, Any]:
    """The facts of one diagnosed job that the center report ranks by (a row of `archive_jobs`): every number
    finite and within its column's range; a value that is not is left out (None, or 0 for a total, where
    nothing is counted) with a line in `notes`."""
    from ..darshanlog.jobrecord import MAX_PROCS
    notes = [] if notes is None else notes
    s = d.summary
    if not 1 <= s.nprocs <= MAX_PROCS:      # read as such by the log reader, which refuses other counts
        raise ValueError(f"{s.nprocs} processes: a job runs on 1 to {MAX_PROCS:,}")
    read = _api_sum(s, "bytes_read", "bytes read", INT64_MAX, notes)
    written = _api_sum(s, "bytes_written", "bytes written", INT64_MAX, notes)
    io_time = (_api_sum(s, "read_time", "read time (s)", math.inf, notes)
               + _api_sum(s, "write_time", "write time (s)", math.inf, notes)) / s.nprocs
    run_time = s.run_time if math.isfinite(s.run_time) and s.run_time >= 0 else 0.0
    return {"jobid": s.jobid, "uid": s.uid, "exe": s.exe, "app": app_name(s.exe), "nprocs": s.nprocs,
            "run_time_s": run_time, "start_time": s.start_time, "io_time_per_rank_s": io_time,
            "bytes_read": read, "bytes_written": written, "layout": s.layout, "files": len(s.files),
            "partial": int(s.partial), "darshan_version": s.darshan_version}


def _judged(p: str, s: Any, d: Any, settings: Settings, center: Any) -> dict[str, Any]:
    """The record of a log read and judged: its job's facts, findings and production runs, every number finite
    and in range, and `notes` on each value left out (the log reader's notes on its job record and on the counter
    values it left out among them)."""
    from ..darshanlog.derive import DROPPED_NOTE
    from ..darshanlog.jobrecord import MAX_PROCS, NOTE_PREFIX
    from ..model.types import to_plain
    notes = [n for n in s.notes if n.startswith(NOTE_PREFIX) or DROPPED_NOTE in n]
    job = job_facts(d, notes)
    dropped = [0]
    findings = _finite([to_plain(f) for f in d.findings], dropped)
    for f in findings:
        at = f.get("time_at_stake_s")
        if at is not None and at < 0:
            f["time_at_stake_s"] = None
            dropped[0] += 1
    if dropped[0]:
        notes.append(f"{dropped[0]} value(s) of the findings are not numbers, infinite or a negative time at "
                     f"stake: left out")
    # runs are bytes / run time: none of a log whose byte totals were left out
    whole = job["bytes_read"] == s.bytes_read and job["bytes_written"] == s.bytes_written
    job["filesystem"], runs = _production_runs(p, s, settings.system, center) if whole else (None, [])
    job["nodes"] = s.nodes if s.nodes is None or 1 <= s.nodes <= MAX_PROCS else None
    if s.nodes is not None and job["nodes"] is None:
        notes.append(f"the node count ({s.nodes}) is impossible: left out")
    return {"status": "ok", "error": None, "job": job, "findings": findings, "runs": runs,
            "notes": notes}


def setup(settings: Settings) -> Callable[[tuple[str, str]], dict[str, Any]]:
    """Run once per worker: load the Darshan library, the thresholds and the center; send the C library's
    complaints (it writes them to file descriptor 2) to a private file that each log's read checks. Returns the
    handler of one `(path, sha256)` item."""
    from ..diagnose import judge
    from ..darshanlog.derive import import_backend, read_checked
    from ..darshanlog.header import check_header
    from .pool import Retire
    from ..diagnose.rules import load_thresholds

    backend = import_backend(without_numpy=True)   # records are read through cffi: numpy is start-up time only
    if backend is None:
        raise UsageError("reading Darshan logs needs PyDarshan: pip install 'ioadvisor[darshan]'")
    thresholds = load_thresholds(settings.thresholds)
    center = None
    if settings.center:
        from ..center import load_center
        center = load_center(settings.center)
    from ..util import limit_memory
    limit_memory(settings.memory)
    errfile = tempfile.TemporaryFile()
    os.dup2(errfile.fileno(), 2)
    # a log that crashes the library is reported by the pool; a Python fault dump of the worker adds nothing
    import faulthandler
    faulthandler.disable()

    def handle(item: tuple[str, str]) -> dict[str, Any]:
        path, digest = item
        p = str(Path(path))
        out: dict[str, Any] = {"hash": digest, "path": path}
        try:
            check_header(p)
        except IOAdvisorError as e:
            return {**out, "status": "failed", "error": getattr(e, "reason", None) or str(e)}
        try:
            s = read_checked(p, backend, errfile)
        except IOAdvisorError as e:
            # the library failed with the log open, and closing it then aborts: this worker keeps the handle (a
            # file descriptor, memory) until it exits, so it is replaced after this log
            return Retire({**out, "status": "failed", "error": getattr(e, "reason", None) or str(e)})
        try:
            d = judge(s, thresholds, center, use_kb=False)
            return {**out, **_judged(p, s, d, settings, center)}
        except IOAdvisorError as e:
            return {**out, "status": "failed", "error": getattr(e, "reason", None) or str(e)}
        except MemoryError:          # the next log gets a fresh worker, not one whose heap this log filled
            limit = f"{settings.memory >> 20} MiB"
            return Retire({**out, "status": "failed",
                           "error": f"judging the log needs more memory than a worker's limit of {limit}"})
        except (ArithmeticError, ValueError, TypeError) as e:   # counters no rule foresaw: this log fails alone
            return {**out, "status": "failed", "error": f"impossible counters: {type(e).__name__}: {e}"}

    return handle


def _production_runs(path: str, s: Any, system: str | None, center: Any) -> tuple[str | None, list[dict[str, Any]]]:
    """The file system a log is a measurement of and its runs (`importers.darshan.production_runs`, the rule
    `kb import` and `diagnose --record` apply); (None, []): a diagnosis only."""
    from ..importers import ImportContext
    from ..importers.darshan import measured_on, production_runs
    name = printable(path)          # the name as the KB holds it (a byte that is not UTF-8 as \\xNN)
    ctx = ImportContext(source=name, system=system, kind="production")
    try:
        fs, _, runs = production_runs(s, ctx, name, center)
    except IOAdvisorError:          # counters no run can be made of: the job's facts and findings stand
        return measured_on(s, center), []
    return fs, [r.to_dict() for r in runs]
