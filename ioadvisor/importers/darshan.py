"""Darshan logs as production observations: one `Run` per direction (write, read) the job moved data in.

The value is the job's bytes divided by its run time: a lower bound of the I/O bandwidth it achieved, since
the job also computed. Layout, API, ranks, request size and the stripe count of its busiest file come from the
log. The log is parsed by `ioadvisor.diagnose.derive` in a child process, so a bad log cannot crash the caller.
"""
from __future__ import annotations

import os
import tempfile
from collections import Counter

from ..diagnose.derive import SIZE_BINS, LogSummary, check_header, sniff, summarize
from ..errors import ImportFormatError
from ..model.run import Provenance, Run
from ..model.validate import make_run
from . import ImportContext, register


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
    return summary_runs(s, ctx, ctx.source)


register("darshan", sniff, parse, text=False, check=check_header)
