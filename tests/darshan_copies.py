"""Real Darshan logs for archive tests and the archive benchmark: the distinct logs of the darshan wheel, and
copies of them that differ in content (another user or job id in the job record), so that a scan by content hash
treats each copy as a job of its own. Every other record of a copy is the wheel log's own."""
from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

DARSHAN_MAGIC = 6567223
MODS = 16
# version[8], magic int64, compression type + partial flag (uint32 each), name map and 16 module maps
# ({offset, length} uint64 each), the modules' versions (uint32 x 16); the compressed job record follows
JOB_AT = 40 + 16 * MODS + 4 * MODS


def wheel_logs() -> list[Path]:
    """Every distinct log shipped in the darshan wheel (some are shipped twice under two names)."""
    import darshan
    out, seen = [], set()
    for p in sorted(Path(darshan.__file__).parent.rglob("*.darshan")):
        h = hashlib.sha256(p.read_bytes()).hexdigest()
        if h not in seen:
            seen.add(h)
            out.append(p)
    return out


def with_job(data: bytes, *, uid: int | None = None, jobid: int | None = None) -> bytes:
    """The log `data` with the job record's user id and/or job id replaced: the job record is inflated, changed,
    deflated again, and every region after it moved by the change in length (the header's maps updated).
    Log format 3.1x/3.2x (the wheel's): the record starts uid, start time, end time, nprocs, jobid (int64)."""
    if not data[:4] in (b"3.10", b"3.21"):
        raise ValueError(f"log format {data[:4]!r}: only 3.10 and 3.21 job records are rewritten here")
    order = "<" if struct.unpack_from("<q", data, 8)[0] == DARSHAN_MAGIC else ">"
    if data[16] != 0:
        raise ValueError("only zlib-compressed logs are rewritten here")
    maps = [struct.unpack_from(order + "QQ", data, 24 + 16 * i) for i in range(1 + MODS)]
    job_end = min(off for off, length in maps if length)
    job = bytearray(zlib.decompress(data[JOB_AT:job_end]))
    if uid is not None:
        struct.pack_into(order + "q", job, 0, uid)
    if jobid is not None:
        struct.pack_into(order + "q", job, 32, jobid)
    packed = zlib.compress(bytes(job))
    delta = len(packed) - (job_end - JOB_AT)
    head = bytearray(data[:JOB_AT])
    for i, (off, length) in enumerate(maps):
        if length:
            struct.pack_into(order + "QQ", head, 24 + 16 * i, off + delta, length)
    return bytes(head) + packed + data[job_end:]


def with_exe(data: bytes, exe: str) -> bytes:
    """The log `data` with the first word of the job's command line (the executable) replaced by `exe`: the
    command line follows the job record's fixed fields and its 1024-byte metadata string; the rest of it (the
    arguments, the mount table) is kept. Same format limits as `with_job`."""
    order = "<" if struct.unpack_from("<q", data, 8)[0] == DARSHAN_MAGIC else ">"
    maps = [struct.unpack_from(order + "QQ", data, 24 + 16 * i) for i in range(1 + MODS)]
    job_end = min(off for off, length in maps if length)
    job = zlib.decompress(data[JOB_AT:job_end])
    at = 40 + 1024
    first = job[at:].split(b" ", 1)[0]
    job = job[:at] + exe.encode() + job[at + len(first):]
    packed = zlib.compress(job)
    delta = len(packed) - (job_end - JOB_AT)
    head = bytearray(data[:JOB_AT])
    for i, (off, length) in enumerate(maps):
        if length:
            struct.pack_into(order + "QQ", head, 24 + 16 * i, off + delta, length)
    return bytes(head) + packed + data[job_end:]
