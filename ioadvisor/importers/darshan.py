"""Darshan logs as production observations: one `Run` per direction (write, read) the job moved data in.

A log measures a center only when the files it moved data through lie under that center's mounts
(`placement`): its runs are filed under the file system holding them. Without a center, or for a job that ran
elsewhere, a log is no measurement and yields no run. `ioadvise kb import`, `diagnose --record` and
`archive scan` all apply this one rule.

The value is the job's bytes divided by its run time: a lower bound of the I/O bandwidth it achieved, since
the job also computed. Layout, API, ranks, request size and the stripe count of its busiest file come from the
log. The log is parsed by `ioadvisor.darshanlog.derive` in a child process, so a bad log cannot crash the caller.
"""
from __future__ import annotations

import os
import tempfile
from collections import Counter
from typing import Any

from ..darshanlog.child import summarize
from ..darshanlog.derive import SIZE_BINS, LogSummary
from ..darshanlog.header import check_header, sniff
from ..errors import ImportFormatError
from ..frozen import replace
from ..model.run import Provenance, Run
from ..model.validate import make_run
from . import ImportContext, NoMeasurement, register

# share of a job's bytes (through files) that must lie under the center's mounts for the job to be a measurement
# of the center: nearly all, so that a job reading a small input from a file system the center file does not
# describe still counts, and a job of another machine (none of its bytes there) never does
MEASURED_SHARE = 0.99


def placement(s: LogSummary, center: Any) -> tuple[str | None, str]:
    """(the center file system a job's production runs are filed under, or None when the log is no measurement
    of `center`; why, in one sentence). The job's files that moved data (through POSIX, MPI-IO or STDIO) must
    hold at least MEASURED_SHARE of its bytes under the mounts of `center`; the file system holding most of them
    is named. A log of a job that ran elsewhere, of a job that moved data through no file, or without a center
    measures nothing."""
    from ..center import place_of_path
    if center is None:
        return None, ("no center (--center, or a center named like the system): a Darshan log measures a "
                      "center only when its files lie under the center's mounts")
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
    if not inside + outside:
        return None, f"the job moved no data through a file: no measurement of {center.name}"
    share = inside / (inside + outside)
    if not inside or inside < MEASURED_SHARE * (inside + outside):
        return None, (f"{inside} of the {inside + outside} bytes the job moved through files ({share:.1%}) lie "
                      f"under the mounts of {center.name}, less than {MEASURED_SHARE:.0%}: a job that ran "
                      f"elsewhere, no measurement of {center.name}")
    fs = max(moved, key=lambda k: (moved[k], k))
    return fs, f"{share:.1%} of the job's bytes through files lie under the mounts of {center.name}; filed under {fs}"


def measured_on(s: LogSummary, center: Any) -> str | None:
    """The center file system a log's production runs are filed under (`placement`), or None."""
    return placement(s, center)[0]


def production_runs(s: LogSummary, ctx: ImportContext, digest_source: str,
                    center: Any) -> tuple[str | None, str, list[Run]]:
    """(file system, why, runs): the production runs of a summarized log as a measurement of `center` (a
    Center or None), filed under the file system `placement` names, with the center's name as system unless the
    context names one; no run when the log measures nothing of the center."""
    fs, why = placement(s, center)
    if fs is None:
        return None, why, []
    ctx = replace(ctx, system=ctx.system or center.name, filesystem=fs)
    return fs, why, summary_runs(s, ctx, digest_source)


def summary_runs(s: LogSummary, ctx: ImportContext, digest_source: str) -> list[Run]:
    """The production runs of a summarized log: one per direction it moved data in (none without a run time)."""
    runs = []
    if s.run_time <= 0:
        return runs
    api = "HDF5" if "HDF5" in s.apis else ("MPIIO" if s.has_mpiio else "POSIX")
    busiest = max(s.files, key=lambda f: f.bytes, default=None)
    layout = s.layout if s.layout in ("shared", "fpp") else None
    coll = None
    if s.has_mpiio:
        coll = (s.mpiio_coll_reads + s.mpiio_coll_writes) > (s.mpiio_indep_reads + s.mpiio_indep_writes)
    for op, moved, hist in (("write", s.bytes_written, s.write_sizes), ("read", s.bytes_read, s.read_sizes)):
        if moved <= 0:
            continue
        common = Counter({b: hist.get(b, 0) for b in SIZE_BINS}).most_common(1)
        note = (f"Darshan log of job {s.jobid} ({s.exe[:80]}): {moved} bytes {op} in {s.run_time:.0f} s of run time; "
                f"the value is bytes / run time, a lower bound of the I/O bandwidth; request size bin "
                f"{common[0][0] if common and common[0][1] else '-'}")
        runs.append(make_run(
            value=moved / s.run_time, unit="B/s",
            system=ctx.system or "unknown", filesystem=ctx.filesystem,
            fs_type=busiest.fs_type if busiest else None, op=op, api=api, layout=layout, collective=coll,
            ranks=s.nprocs, total_bytes=moved,
            stripe_count=busiest.lustre.stripe_count if busiest and busiest.lustre else None,
            stripe_size=busiest.lustre.stripe_size if busiest and busiest.lustre else None,
            file_size=busiest.bytes if busiest else None,
            notes=note,
            provenance=Provenance(source=digest_source, tool="darshan", tool_version=s.darshan_version,
                                  importer="darshan/1", job_id=str(s.jobid) if s.jobid is not None else None,
                                  kind=ctx.kind if ctx.kind != "benchmark" else "production")))
    return runs


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    """Runs for a Darshan log given as bytes (written to a private temporary file for the C library)."""
    if not sniff(data[:64]):
        raise ImportFormatError("not a Darshan log (no Darshan magic number in the header)", ctx.source or None)
    fd, tmp = tempfile.mkstemp(suffix=".darshan")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            s = summarize(tmp)
        except ImportFormatError as e:
            raise ImportFormatError(e.reason, ctx.source or None) from None
    finally:
        os.unlink(tmp)
    from ..center import center_for
    center = ctx.center
    if center is not None and not hasattr(center, "filesystems"):
        center = center_for(center, None)
    elif center is None:
        center = center_for(None, ctx.system)       # the center named like --system, if there is one
    fs, why, runs = production_runs(s, ctx, ctx.source, center)
    if fs is None:
        raise NoMeasurement(why)
    return runs


register("darshan", sniff, parse, text=False, check=check_header)
