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

__all__ = ["MEASURED_SHARE", "Settings", "setup", "app_name", "job_facts", "measured_on", "nodes_stated"]


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


# share of a job's bytes (through files) that must lie under the center's mounts for the job to be a measurement
# of the center: nearly all, so that a job reading a small input from a file system the center file does not
# describe still counts, and a job of another machine (none of its bytes there) never does
MEASURED_SHARE = 0.99


def measured_on(s: Any, center: Any) -> str | None:
    """The center file system a job's production runs are filed under, or None when the log is kept as a
    diagnosis only. The job's files that moved data (through POSIX, MPI-IO or STDIO) must hold at least
    MEASURED_SHARE of its bytes under the mounts of `center`; the file system holding most of them is named. A
    log of a job that ran elsewhere, of a job that moved data through no file, or a scan without a center
    measures nothing of the center."""
    from ..center import place_of_path
    if center is None:
        return None
    moved: dict[str | None, int] = {}
    by_dir: dict[str, Any] = {}          # a file per process: thousands of files, a few directories
    data = [(f.path, f.bytes) for f in s.files if f.bytes > 0 and not f.special]
    data += [(a["file"], a["bytes"]) for a in s.stdio_streams if a["bytes"] > 0]     # terminal streams left out
    for path, nbytes in data:
        d = os.path.dirname(path)
        if d not in by_dir:
            by_dir[d] = place_of_path(center, os.path.join(d, "x"))
        fs = by_dir[d][0] if by_dir[d] else None
        moved[fs] = moved.get(fs, 0) + nbytes
    outside = moved.pop(None, 0)
    inside = sum(moved.values())
    if not inside or inside < MEASURED_SHARE * (inside + outside):
        return None
    return max(moved, key=lambda fs: (moved[fs], fs))


def nodes_stated(path: str, modules: tuple[str, ...], nprocs: int, backend: Any) -> int | None:
    """The job's node count where the log states it, else None: the BG/Q module's BGQ_NNODES, or the distinct
    host names of DXT trace records when they cover every rank (a trace of some ranks says nothing of the
    others). Darshan's other modules record no node count."""
    wanted = [m for m in ("BG/Q", "DXT_POSIX", "DXT_MPIIO") if m in modules]
    if not wanted:
        return None
    from ..diagnose.derive import open_log
    log = open_log(backend, path)
    try:
        if "BG/Q" in wanted:
            rec = backend.log_get_record(log, "BG/Q", dtype="dict")
            n = int(rec["counters"][backend.counter_names("BGQ").index("BGQ_NNODES")]) if rec else 0
            if n > 0:
                return n
        hosts: dict[int, str] = {}
        budget = 2 * nprocs + 64          # records read at most: a trace of a few ranks over many files is not read
        for mod in wanted:
            if mod == "BG/Q":
                continue
            while len(hosts) < nprocs and budget > 0 and (rec := backend.log_get_record(log, mod, dtype="dict")):
                budget -= 1
                hosts.setdefault(int(rec["rank"]), rec["hostname"])
        return len(set(hosts.values())) if nprocs > 0 and len(hosts) == nprocs else None
    finally:
        backend.log_close(log)


def setup(settings: Settings) -> Callable[[tuple[str, str]], dict[str, Any]]:
    """Run once per worker: load the Darshan library, the thresholds and the center; send the C library's
    complaints (it writes them to file descriptor 2) to a private file that each log's read checks. Returns the
    handler of one `(path, sha256)` item."""
    from ..diagnose import judge
    from ..diagnose.derive import check_header, import_backend, read_checked
    from ..diagnose.rules import load_thresholds
    from ..importers import ImportContext
    from ..importers.darshan import summary_runs
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
            s = read_checked(p, backend, errfile)
            d = judge(s, thresholds, center, use_kb=False)
        except IOAdvisorError as e:
            return {**out, "status": "failed", "error": getattr(e, "reason", None) or str(e)}
        job = job_facts(d)
        job["filesystem"] = measured_on(s, center)
        try:
            job["nodes"] = nodes_stated(p, s.modules, s.nprocs, backend)
        except Exception:                # the node count is a detail: the log itself was read
            job["nodes"] = None
        runs: list[dict[str, Any]] = []
        if job["filesystem"] is not None:
            name = printable(p)          # the name as the KB holds it (a byte that is not UTF-8 as \\xNN)
            ctx = ImportContext(source=name, system=settings.system, filesystem=job["filesystem"],
                                kind="production")
            try:
                runs = [r.to_dict() for r in summary_runs(s, ctx, name)]
            except IOAdvisorError:       # counters no run can be made of: the job's facts and findings stand
                pass
        return {**out, "status": "ok", "error": None, "job": job, "findings": [to_plain(f) for f in d.findings],
                "runs": runs}

    return handle
