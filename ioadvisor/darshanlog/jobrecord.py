"""The job record of a Darshan log held to what a real job can state, before anything is derived from it.

Any user can write a log, and a corrupt one states anything: 0 or 2^63 - 1 processes, a run of minus 30 years or
of 31,700 years, user id -5. A process count outside what any machine runs makes the log unreadable (every
per-process figure divides by it); any other impossible field is left out (None, or a run time of 0: none
recorded) with a note naming the value, so that no total, ranking or production run is built on it.
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_PROCS", "MAX_RUN_S", "NOTE_PREFIX", "ImpossibleJob", "checked_job"]

# Twice the cores of the largest machines built (Frontier about 9.4 million, Fugaku 7.6 million): a job of more
# processes than this has a corrupt record
MAX_PROCS = 2 ** 24
# No batch system keeps a job for a year
MAX_RUN_S = 366 * 86400.0
MAX_UID = 2 ** 32 - 1            # uid_t is 32 bits unsigned
NOTE_PREFIX = "the job record's "


class ImpossibleJob(ValueError):
    """A job record no job can have (a process count outside 1 .. MAX_PROCS)."""


def _int(v: Any) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError, OverflowError):
        return None


def checked_job(job: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the job record with impossible fields left out, one note per field left out); ImpossibleJob for a
    process count no job has. `job` is PyDarshan's `log_get_job` dict (nprocs, run_time, uid, jobid,
    start_time_sec); it is not changed."""
    out = dict(job)
    notes: list[str] = []
    n = _int(job.get("nprocs"))
    if n is None or not 1 <= n <= MAX_PROCS:
        raise ImpossibleJob(f"the job record states {job.get('nprocs')} processes; a job runs on 1 to "
                            f"{MAX_PROCS:,} (corrupt job record)")
    rt = job.get("run_time")
    try:
        rt_f = float(rt) if rt is not None else 0.0
    except (TypeError, ValueError, OverflowError):
        rt_f = math.nan
    if not (math.isfinite(rt_f) and 0 <= rt_f <= MAX_RUN_S):
        notes.append(f"{NOTE_PREFIX}run time ({rt} s) is impossible (below 0, above {MAX_RUN_S:,.0f} s or not "
                     f"a number): left out, as if none were recorded")
        out["run_time"] = 0.0
    for key, what, top in (("uid", "user id", MAX_UID), ("jobid", "job id", 2 ** 63 - 1),
                           ("start_time_sec", "start time", 2 ** 63 - 1)):
        if key in job and job[key] is not None:
            v = _int(job[key])
            if v is None or not 0 <= v <= top:
                notes.append(f"{NOTE_PREFIX}{what} ({job[key]}) is impossible: left out")
                out[key] = None
    return out, notes
