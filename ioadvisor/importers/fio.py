"""fio outputs: `--output-format=json` and `json+` (text before the JSON, such as warnings, is skipped).

fio's plain text output (`normal`, the default) and `terse` are recognised and refused with the option to use:
neither states the job options a run is judged by (`direct`, `size`, `numjobs`), so a buffered write that fit
in memory could not be told from an O_DIRECT one.

One Run per job entry (with `group_reporting`, one per group) and direction (read, write) that moved
bytes. Sequential jobs give the bandwidth (fio's `bw`, KiB/s); random jobs (`rw=randread`, `randwrite`,
`randrw`) give the operation rate (`iops`, unit IOPS) as their value and the bandwidth in the notes.
When a job with `numjobs=N` is reported per process (no group reporting), its N entries are added up into
one Run with `ranks=N`, as fio's own group summary would.

Settings: `bs` -> transfer_size, `numjobs` -> ranks (one node), `size` -> file_size (per job), `direct`,
`ioengine`/`iodepth` in the notes. Layout is `fpp` (each job its own file) unless `filename` names one
file for several jobs, which is `shared`. The file system is the center's whose mount holds the job's
`filename` or `directory` (`importers.place`, as for IOR and mdtest).
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from ..errors import ImportFormatError, IOAdvisorError, UsageError
from ..model.run import Provenance, Run
from ..model.validate import make_run
from ..model.units import parse_size
from . import ImportContext, decode, load_json, place, register, system_of

RANDOM_RW = ("randread", "randwrite", "randrw", "randtrim", "randtrimwrite")


def _json_start(text: str) -> int:
    """Offset of the `{` that opens fio's JSON document (fio may print warnings before it)."""
    m = re.search(r'^\{\s*$|^\{\s*"fio version"', text, re.M)
    return m.start() if m else -1


# fio's plain output: a job's header ("job: (g=0): rw=write, bs=(R) ..."), its result ("job: (groupid=0, jobs=1):
# err= 0: pid=..."), the version line and the groups' summary; terse: "3;fio-3.33;job;..." per job
_TEXT = re.compile(rb"^\S[^\n]*: \(g=\d+\): rw=\w+, |^\S[^\n]*: \(groupid=\d+, jobs=\d+\): err=|"
                   rb"^Run status group \d+ \(all jobs\):|^[2-5];fio-\d", re.M)
TEXT_REFUSED = ("fio's plain text output (--output-format=normal or terse) does not state the job options a run "
                "is judged by (direct, size, numjobs): run fio with --output-format=json (or json+) and import "
                "that")


def _is_text(head: bytes) -> bool:
    """fio's plain or terse output (not its JSON)."""
    return _json_start(head.decode("utf-8", "replace")) < 0 and _TEXT.search(head[:8192]) is not None


def sniff(head: bytes) -> bool:
    if b'"fio version"' not in head:
        return _is_text(head)
    try:
        text = head.decode("utf-8", "replace")
    except Exception:
        return False
    start = _json_start(text)
    return start >= 0 and '"fio version"' in text[start:start + 400]


def _opt(opts: dict[str, Any], key: str) -> str | None:
    v = opts.get(key)
    return None if v is None else str(v)


def _size(text: str | None, what: str) -> int | None:
    """fio sizes (`4k`, `1m`, `64m`); ranges and lists keep their first value; percentages give None."""
    if not text or "%" in text:
        return None
    first = re.split(r"[-,:]", text.strip())[0]
    try:
        return parse_size(first)
    except UsageError:
        raise ValueError(f"{what}: not a size: {text!r}") from None


def _nonneg(v: Any, what: str) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: not a number: {v!r}") from None
    if f != f or f < 0:
        raise ValueError(f"{what}: must not be negative, got {v!r}")
    return f


def _document(text: str, ctx: ImportContext) -> dict:
    """The fio JSON document (fio may print lines before it)."""
    start = _json_start(text)
    if start < 0:
        if _is_text(text[:2 ** 16].encode()):
            raise ImportFormatError(TEXT_REFUSED, ctx.source, 1)
        raise ImportFormatError("not a fio JSON output (run fio with --output-format=json)", ctx.source, 1)
    skipped_lines = text[:start].count("\n")
    doc = load_json(text[start:], ctx.source, "fio JSON", skipped_lines + 1)
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise ImportFormatError("fio JSON without a 'jobs' list", ctx.source, skipped_lines + 1)
    return doc


def _job_groups(doc: dict, ctx: ImportContext) -> dict[tuple, list[dict]]:
    """The job entries by (name, group): fio reports a job once per process, and those entries are added up."""
    groups: dict[tuple, list[dict]] = {}
    for job in doc["jobs"]:
        if not isinstance(job, dict):
            raise ImportFormatError("fio JSON: a job entry is not an object", ctx.source)
        groups.setdefault((job.get("jobname"), job.get("groupid")), []).append(job)
    return groups


def _job_runs(entries: list[dict], opts: dict, prov: Provenance, ctx: ImportContext) -> list[Run]:
    """One job's runs: one per direction (read, write) that moved bytes."""
    if any(int(e.get("error", 0) or 0) for e in entries):
        raise ValueError("fio reported an error for this job")
    rw = (_opt(opts, "rw") or _opt(opts, "readwrite") or "read").lower()
    random_access = rw in RANDOM_RW
    numjobs = int(_opt(opts, "numjobs") or 1)
    ranks = numjobs if len(entries) == 1 else len(entries)
    bs = _size(_opt(opts, "bs") or _opt(opts, "blocksize"), "bs") or 4096
    size = _size(_opt(opts, "size"), "size")
    direct = (_opt(opts, "direct") or "0").strip() not in ("0", "false", "")
    filename = _opt(opts, "filename")
    shared = bool(filename) and ranks > 1 and ":" not in filename
    engine = _opt(opts, "ioengine") or "psync"
    depth = _opt(opts, "iodepth") or "1"
    # where the job's files were: `filename` (the first of a:b), else `directory` (the first of a:b)
    where = (filename or _opt(opts, "directory") or "").split(":")[0] or None
    filesystem, tier = place(ctx, where, "fio")
    runs = []
    for direction in ("read", "write"):
        stats = [e.get(direction) or {} for e in entries]
        io_bytes = sum(_nonneg(s.get("io_bytes", 0), f"{direction}.io_bytes") for s in stats)
        if io_bytes <= 0:
            continue
        bw_kib = sum(_nonneg(s.get("bw"), f"{direction}.bw") for s in stats)
        iops = sum(_nonneg(s.get("iops"), f"{direction}.iops") for s in stats)
        notes = [f"ioengine={engine}, iodepth={depth}"]
        if len(entries) > 1:
            notes.append(f"sum of {len(entries)} per-process job entries")
        if random_access:
            value, unit = iops, "IOPS"
            notes.append(f"bandwidth {bw_kib / 1024:.2f} MiB/s")
        else:
            value, unit = bw_kib, "KiB/s"
            notes.append(f"{iops:.2f} IOPS")
        op = ("rand" + direction) if random_access else direction
        runs.append(make_run(
            system=system_of(ctx), filesystem=filesystem, tier=tier, op=op, api="POSIX",
            layout="shared" if shared else "fpp", nodes=1, ranks=ranks, ranks_per_node=ranks,
            transfer_size=bs, file_size=size, total_bytes=int(io_bytes),
            access="random" if random_access else "sequential", direct=direct, value=value, unit=unit,
            notes="; ".join(notes), provenance=prov))
    return runs


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    doc = _document(decode(data, ctx.source), ctx)
    version = str(doc.get("fio version", "")).removeprefix("fio-") or None
    date = None
    if isinstance(doc.get("timestamp"), (int, float)):
        date = datetime.fromtimestamp(doc["timestamp"], tz=timezone.utc).date().isoformat()
    gopts = doc.get("global options") or {}
    runs: list[Run] = []
    for (name, _gid), entries in _job_groups(doc, ctx).items():
        opts = {**gopts, **(entries[0].get("job options") or {})}
        cmd = "fio " + " ".join(f"--{k}={v}" for k, v in opts.items())
        prov = Provenance(source=ctx.source, command=cmd, tool="fio", tool_version=version,
                          importer="fio/1", date=date, kind=ctx.kind)
        try:
            runs.extend(_job_runs(entries, opts, prov, ctx))
        except (ValueError, IOAdvisorError) as e:
            raise ImportFormatError(f"fio JSON job {name!r}: {e}", ctx.source) from None
    return runs


register("fio", sniff, parse)
