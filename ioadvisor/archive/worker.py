"""The per-log work of an archive scan, as it runs inside a pool worker: read the log with the Darshan library,
judge it with the same rules and settings as `ioadvise diagnose`, and return plain data the parent stores.

A worker never opens the KB (findings are judged with `use_kb=False`); what it returns is JSON-ready, so the
same records can travel through a pipe (one node) or a file (a Slurm array task).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import IOAdvisorError, UsageError
from ..util import printable

__all__ = ["Settings", "setup", "app_name", "job_facts"]


@dataclass(frozen=True)
class Settings:
    """What every log of one scan is judged and filed with."""

    system: str = "unknown"
    center: str | None = None        # center file or shipped name: OST count for the striping rules, and the
                                     # mounts a log's files must lie under for it to become production runs
    thresholds: str | None = None    # user thresholds file laid over the shipped ones


def app_name(exe: str) -> str:
    """The application a job ran: the base name of the first word of its command line."""
    first = exe.strip().split(maxsplit=1)[0] if exe.strip() else ""
    return os.path.basename(first.rstrip("/")) or exe.strip() or "(not recorded)"


def job_facts(d: Any) -> dict[str, Any]:
    """The facts of one diagnosed job that the center report ranks by (a row of `archive_jobs`)."""
    s = d.summary
    return {"jobid": s.jobid, "uid": s.uid, "exe": s.exe, "app": app_name(s.exe), "nprocs": s.nprocs,
            "run_time_s": s.run_time, "start_time": s.start_time, "io_time_per_rank_s": d.io_time_per_rank,
            "bytes_read": s.bytes_read, "bytes_written": s.bytes_written, "layout": s.layout, "files": len(s.files),
            "partial": int(s.partial), "darshan_version": s.darshan_version}


def setup(settings: Settings) -> Callable[[tuple[str, str]], dict[str, Any]]:
    """Run once per worker: load the Darshan library, the thresholds and the center; send the C library's
    complaints (it writes them to file descriptor 2) to a private file that each log's read checks. Returns the
    handler of one `(path, sha256)` item."""
    from ..diagnose import judge
    from ..diagnose.derive import check_header, import_backend, read_checked
    from .pool import Retire
    from ..diagnose.rules import load_thresholds
    from ..model.types import to_plain

    backend = import_backend()
    if backend is None:
        raise UsageError("reading Darshan logs needs PyDarshan: pip install 'ioadvisor[darshan]'")
    thresholds = load_thresholds(settings.thresholds)
    center = None
    if settings.center:
        from ..center import load_center
        center = load_center(settings.center)
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
        except IOAdvisorError as e:
            return {**out, "status": "failed", "error": getattr(e, "reason", None) or str(e)}
        job = job_facts(d)
        job["filesystem"], runs = _production_runs(p, s, settings.system, center)
        job["nodes"] = s.nodes
        return {**out, "status": "ok", "error": None, "job": job, "findings": [to_plain(f) for f in d.findings],
                "runs": runs}

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
