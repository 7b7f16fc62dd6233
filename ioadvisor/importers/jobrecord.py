"""Job records written by a wrapped batch script (`ioadvise-<jobid>.json`) as production observations.

A record knows the job's settings, its start and end time and, when it staged a scratch tier out, the bytes it
copied back. From those it makes one `write` run on the tier: bytes staged out / job wall time, a lower bound
of the bandwidth the job wrote with (the job also computed and staged). A record without a staged volume (no
tier, or a `du` that could not count) or whose stage-out failed (its byte count is what was on the tier, not what
came back) holds no measurement and gives no run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ImportFormatError, UsageError
from ..model.run import Provenance, Run
from ..model.validate import make_run
from . import ImportContext, load_json, register

PREFIX = b'{"job_id":'
# a job id (with an array or het-job suffix) and a host name: nothing that could carry markup or a newline
_JOB_ID = re.compile(r"^[0-9]{1,20}([_+][0-9]{1,10})?$")
_HOST = re.compile(r"^[A-Za-z0-9._-]{1,255}$")


@dataclass(frozen=True)
class JobRecord:
    job_id: str
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
    rec = JobRecord(job_id=str(job_id), host=host or None, start=_int(d, "start", source, required=True),
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
    """The production run a finished record supports (none without a staged volume)."""
    if rec.end is None:
        raise ImportFormatError(f"job {rec.job_id} has not finished (its record has no end time)", ctx.source or None)
    if not rec.staged_out_bytes or rec.stage_out_status:
        return []           # nothing staged, or a copy failed: the byte count is not what came back
    elapsed = max(rec.end - rec.start, 1)
    s = rec.settings
    hints = {str(k): str(v) for k, v in (s.get("hints") or {}).items()}
    note = (f"job {rec.job_id} on {rec.host or 'an unknown host'}: {rec.staged_out_bytes} bytes staged out of tier "
            f"{rec.tier} after {elapsed} s of wall time (exit code {rec.exit_code}); the value is bytes / wall time, "
            f"a lower bound of the bandwidth the job wrote with")
    try:
        return [make_run(value=rec.staged_out_bytes / elapsed, unit="B/s", system=ctx.system or "unknown",
                         filesystem=ctx.filesystem or rec.tier, tier=rec.tier, op="write", hints=hints,
                         stripe_count=s.get("stripe_count"), stripe_size=s.get("stripe_size"),
                         total_bytes=rec.staged_out_bytes, notes=note,
                         provenance=Provenance(source=ctx.source, tool="ioadvise wrap", importer="jobrecord/1",
                                               job_id=rec.job_id, kind="production"))]
    except UsageError as e:
        raise ImportFormatError(f"job record: {e}", ctx.source or None) from None


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    return record_runs(read_record(data, ctx.source), ctx)


register("jobrecord", sniff, parse)
