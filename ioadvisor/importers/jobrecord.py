"""Job records written by a wrapped batch script (`ioadvise-<jobid>.json`) as production observations.

A record knows the job's cluster and user, its settings, its start and end time and, when it staged a scratch
tier out, the bytes it copied back. From those it makes one `write` run on the tier: bytes staged out / job wall
time, a lower bound of the bandwidth the job wrote with (the job also computed and staged). A record without a
staged volume (no tier, or a `du` that could not count) or whose stage-out failed (its byte count is what was on
the tier, not what came back) holds no measurement and gives no run.

A record is written by the user's own job, so nothing in it is trusted: its tier must be one the center file
describes (the run is filed under that tier's file system, never under a name the record makes up), and its
bandwidth must stay under the file system's rated write peak, or under PHYSICAL_MAX where the center rates none.
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import ImportFormatError, UsageError
from ..frozen import frozen
from ..model.run import Provenance, Run
from ..model.validate import make_run
from . import ImportContext, load_json, register

PREFIX = b'{"job_id":'
# a job id (with an array or het-job suffix) and a host name: nothing that could carry markup or a newline
_JOB_ID = re.compile(r"^[0-9]{1,20}([_+][0-9]{1,10})?$")
_HOST = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
_NAME = re.compile(r"^[A-Za-z0-9._@-]{0,255}$")
#: no job writes faster than this (100 TiB/s): several times the aggregate bandwidth of the fastest parallel
#: file systems in service (tens of TB/s); a record above it is not a measurement
PHYSICAL_MAX = 100 << 40


@frozen
class JobRecord:
    job_id: str
    cluster: str | None                   # $SLURM_CLUSTER_NAME in the job (None: not written, or not under Slurm)
    user: str | None
    host: str | None
    start: int
    end: int | None
    exit_code: int | None
    staged_out_bytes: int | None
    stage_out_seconds: int | None
    stage_out_status: int | None          # 0: every copy succeeded; else some file was not copied back
    settings: dict[str, Any]

    @property
    def tier(self) -> str | None:
        t = self.settings.get("tier")
        return t.get("name") if isinstance(t, dict) else None


def sniff(head: bytes) -> bool:
    return head.lstrip().startswith(PREFIX) and b'"settings":' in head


def _int(d: dict, key: str, source: str, *, required: bool = False) -> int | None:
    v = d.get(key)
    if v is None and not required:
        return None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ImportFormatError(f"job record: {key} must be a non-negative integer, got {v!r}", source or None)
    return v


def read_record(data: bytes, source: str = "") -> JobRecord:
    """Validate a record's bytes; ImportFormatError (naming `source`) for anything that is not one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ImportFormatError(f"job record is not valid JSON: {e}", source or None) from None
    d = load_json(text, source, "job record JSON")
    if not isinstance(d, dict) or "job_id" not in d or not isinstance(d.get("settings"), dict):
        raise ImportFormatError("not an ioadvise job record (job_id and settings expected)", source or None)
    job_id = d["job_id"]
    if isinstance(job_id, bool) or not isinstance(job_id, (str, int)) or not _JOB_ID.match(str(job_id)):
        raise ImportFormatError(f"job record: job_id must be a Slurm job id, got {job_id!r}", source or None)
    host = d.get("host")
    if host is not None and (not isinstance(host, str) or not _HOST.match(host)):
        raise ImportFormatError(f"job record: host must be a host name, got {host!r}", source or None)
    for key in ("cluster", "user"):
        v = d.get(key)
        if v is not None and (not isinstance(v, str) or not _NAME.match(v)):
            raise ImportFormatError(f"job record: {key} must be a name, got {v!r}", source or None)
    rec = JobRecord(job_id=str(job_id), cluster=d.get("cluster") or None, user=d.get("user") or None,
                    host=host or None, start=_int(d, "start", source, required=True),
                    end=_int(d, "end", source), exit_code=_int(d, "exit_code", source),
                    staged_out_bytes=_int(d, "staged_out_bytes", source),
                    stage_out_seconds=_int(d, "stage_out_seconds", source),
                    stage_out_status=_int(d, "stage_out_status", source), settings=d["settings"])
    if rec.end is not None and rec.end < rec.start:
        raise ImportFormatError(f"job record: end {rec.end} is before start {rec.start}", source or None)
    hints = rec.settings.get("hints")
    if hints is not None and not isinstance(hints, dict):
        raise ImportFormatError(f"job record: settings.hints must be an object of KEY: VALUE, got "
                                f"{type(hints).__name__}", source or None)
    tier = rec.settings.get("tier")
    if tier is not None and not (isinstance(tier, dict) and isinstance(tier.get("name", ""), str)):
        raise ImportFormatError("job record: settings.tier must be an object with a name", source or None)
    return rec


def record_runs(rec: JobRecord, ctx: ImportContext) -> list[Run]:
    """The production run a finished record supports (none without a staged volume), on the file system of its
    tier in the center of `ctx.center`, else the one named like the system (`ctx.system`, else the record's
    cluster)."""
    if rec.end is None:
        raise ImportFormatError(f"job {rec.job_id} has not finished (its record has no end time)", ctx.source or None)
    if not rec.staged_out_bytes or rec.stage_out_status:
        return []           # nothing staged, or a copy failed: the byte count is not what came back
    center = record_center(ctx.center, ctx.system or rec.cluster)
    fs = tier_filesystem(rec, center, ctx.source)
    elapsed = max(rec.end - rec.start, 1)
    value = rec.staged_out_bytes / elapsed
    _check_bandwidth(rec, value, center.filesystem(fs) if center else None, ctx.source)
    s = rec.settings
    hints = {str(k): str(v) for k, v in (s.get("hints") or {}).items()}
    note = (f"job {rec.job_id} on {rec.host or 'an unknown host'}: {rec.staged_out_bytes} bytes staged out of tier "
            f"{rec.tier} after {elapsed} s of wall time (exit code {rec.exit_code}); the value is bytes / wall time, "
            f"a lower bound of the bandwidth the job wrote with")
    system = ctx.system or (center.name if center is not None else None) or rec.cluster or "unknown"
    try:
        return [make_run(value=value, unit="B/s", system=system, filesystem=ctx.filesystem or fs, tier=rec.tier,
                         op="write", hints=hints, stripe_count=s.get("stripe_count"),
                         stripe_size=s.get("stripe_size"), total_bytes=rec.staged_out_bytes, notes=note,
                         provenance=Provenance(source=ctx.source, tool="ioadvise wrap", importer="jobrecord/1",
                                               job_id=rec.job_id, kind="production"))]
    except UsageError as e:
        raise ImportFormatError(f"job record: {e}", ctx.source or None) from None


def record_center(spec: Any, system: str | None) -> Any:
    """The center a record is judged by: `spec` (a Center, a center file or a name), else the center named
    `system`; None when there is neither."""
    from ..center import center_for
    if spec is not None and hasattr(spec, "tiers"):
        return spec
    return center_for(spec, system)


def tier_filesystem(rec: JobRecord, center: Any, source: str = "") -> str:
    """The file system of the record's tier, as the center file names it; a tier the center does not describe
    is refused (a record must not add a file system that advice would then offer)."""
    if center is None:
        raise ImportFormatError(f"job record: tier {rec.tier!r} is described by no center file known here: pass "
                                f"--center with the center file that describes it", source or None)
    tier = center.tier(rec.tier)
    if tier is None:
        known = ", ".join(t.name for t in center.tiers) or "none"
        raise ImportFormatError(f"job record: tier {rec.tier!r} is not a tier of center {center.name} (its tiers: "
                                f"{known})", source or None)
    return tier.filesystem


def _check_bandwidth(rec: JobRecord, value: float, fs: Any, source: str) -> None:
    """Refuse a bandwidth above the file system's rated write peak, or above PHYSICAL_MAX without one."""
    rated = getattr(fs, "rated_write_bandwidth", None)
    bound, what = (rated, f"the rated write peak of {fs.name}") if rated else (PHYSICAL_MAX, "any file system's")
    if value > bound:
        raise ImportFormatError(f"job record: {rec.staged_out_bytes} bytes in {max(rec.end - rec.start, 1)} s is "
                                f"{value / (1 << 30):.4g} GiB/s, above {what} ({bound / (1 << 30):.4g} GiB/s): "
                                f"not a measurement", source or None)


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    return record_runs(read_record(data, ctx.source), ctx)


register("jobrecord", sniff, parse)
