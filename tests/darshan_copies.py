"""Real Darshan logs for archive tests and the archive benchmark: the distinct logs of the darshan wheel, and
copies of them that differ in content (another user or job id in the job record, or a counter of a module record
set to any value), so that a scan by content hash treats each copy as a job of its own. Every other record of a
copy is the wheel log's own."""
from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path
from typing import Callable

DARSHAN_MAGIC = 6567223
MODS = 16
# version[8], magic int64, compression type + partial flag (uint32 each), name map and 16 module maps
# ({offset, length} uint64 each), the modules' versions (uint32 x 16); the compressed job record follows
JOB_AT = 40 + 16 * MODS + 4 * MODS
JOB_FIELDS = {"uid": 0, "start_time": 8, "end_time": 16, "nprocs": 24, "jobid": 32}   # int64 each


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


def _layout(data: bytes) -> tuple[str, list[tuple[int, int]]]:
    """(byte order, the name map and the 16 module maps as (offset, length)) of a 3.10 or 3.21 log."""
    if not data[:4] in (b"3.10", b"3.21"):
        raise ValueError(f"log format {data[:4]!r}: only 3.10 and 3.21 logs are rewritten here")
    order = "<" if struct.unpack_from("<q", data, 8)[0] == DARSHAN_MAGIC else ">"
    if data[16] != 0:
        raise ValueError("only zlib-compressed logs are rewritten here")
    return order, [struct.unpack_from(order + "QQ", data, 24 + 16 * i) for i in range(1 + MODS)]


def _streams(region: bytes) -> list[bytes]:
    """The inflated pieces of a region: the library writes a region as one or more zlib streams in a row."""
    pieces = []
    while region:
        inflate = zlib.decompressobj()
        pieces.append(inflate.decompress(region))
        if not inflate.eof:
            raise ValueError("a region ends inside a zlib stream")
        region = inflate.unused_data
    return pieces


def _rewrite(data: bytes, start: int, end: int, change: Callable[[bytearray], None]) -> bytes:
    """`data` with the region at [start, end) inflated, changed in place by `change`, deflated again stream by
    stream (each as long as before), and every region after it moved by the change in length (the header's maps
    updated)."""
    order, maps = _layout(data)
    pieces = _streams(data[start:end])
    body = bytearray(b"".join(pieces))
    change(body)
    packed, at = b"", 0
    for piece in pieces:
        packed += zlib.compress(bytes(body[at:at + len(piece)]))
        at += len(piece)
    delta = len(packed) - (end - start)
    head = bytearray(data[:JOB_AT])
    for i, (off, length) in enumerate(maps):
        if length and off >= end:
            struct.pack_into(order + "QQ", head, 24 + 16 * i, off + delta, length)
        elif length and off == start:
            struct.pack_into(order + "QQ", head, 24 + 16 * i, off, len(packed))
    return bytes(head) + data[JOB_AT:start] + packed + data[end:]


def with_job(data: bytes, *, exe: str | None = None, **fields: int | None) -> bytes:
    """The log `data` with fields of the job record replaced (uid, start_time, end_time, nprocs, jobid, as in
    JOB_FIELDS; None leaves one as it is) and/or its command line (`exe`, one line). Log format 3.1x/3.2x (the
    wheel's): the record starts with those five int64s and 1,024 bytes of metadata, then the command line ends at
    the first newline (the mount table follows)."""
    order, maps = _layout(data)
    job_end = min(off for off, length in maps if length)

    def change(job: bytearray) -> None:
        for name, value in fields.items():
            if value is not None:
                struct.pack_into(order + "q", job, JOB_FIELDS[name], value)
        if exe is not None:
            at = 40 + 1024
            job[at:job.index(b"\n", at)] = exe.encode()
    return _rewrite(data, JOB_AT, job_end, change)


def module_layout(path: Path, module: str) -> tuple[int, list[str], list[str]] | None:
    """(module index, counter names, float counter names) of `module` in the log at `path`, when the log's records
    of it have the layout of the library's current version (base record id + rank, int64 counters, double float
    counters); None when the log has no such module or an older version of it."""
    from darshan.backend import cffi_backend as raw
    log = raw.log_open(str(path))
    try:
        mods = raw.log_get_modules(log)
    finally:
        raw.log_close(log)
    if module not in mods:
        return None
    names, fnames = raw.counter_names(module), raw.fcounter_names(module)
    size = raw.ffi.sizeof(raw._structdefs[module].rstrip("*").strip())
    if size != 16 + 8 * (len(names) + len(fnames)):
        return None
    order, maps = _layout(path.read_bytes())
    off, length = maps[1 + mods[module]["idx"]]
    body = b"".join(_streams(path.read_bytes()[off:off + length]))
    return (mods[module]["idx"], names, fnames) if body and len(body) % size == 0 else None


def _region(path: Path, module: str) -> tuple[bytes, str, list, int, int, list[str], list[str]]:
    """The log at `path` and where its `module` records lie: (bytes, byte order, header maps, offset, length,
    counter names, float counter names). ValueError when they are not of the current layout (`module_layout`)."""
    found = module_layout(path, module)
    if found is None:
        raise ValueError(f"{path.name}: no {module} records of the current layout")
    idx, names, fnames = found
    data = path.read_bytes()
    order, maps = _layout(data)
    off, length = maps[1 + idx]
    return data, order, maps, off, length, names, fnames


def with_counter(path: Path, module: str, counter: str, value: int | float, *, record: int = 0) -> bytes:
    """The log at `path` with one counter of one record of `module` set to `value` (an int64 counter packed as
    int64, wrapping like C; a float counter as a double: NaN and infinities as themselves). ValueError when the
    log's records of `module` are not of the library's current layout (`module_layout`)."""
    data, order, maps, off, length, names, fnames = _region(path, module)
    size = 16 + 8 * (len(names) + len(fnames))

    def change(body: bytearray) -> None:
        at = (record % (len(body) // size)) * size + 16
        if counter in names:
            struct.pack_into(order + "Q", body, at + 8 * names.index(counter), int(value) % 2 ** 64)
        else:
            struct.pack_into(order + "d", body, at + 8 * (len(names) + fnames.index(counter)), float(value))
    return _rewrite(data, off, off + length, change)


def with_records(path: Path, module: str, n: int) -> bytes:
    """The log at `path` with its `module` records replaced by `n` copies of its first record, each under its own
    record id (the first's plus its index): a job with that many files, in a region that deflates to a few bytes
    per record. ValueError as for `with_counter`."""
    data, order, maps, off, length, names, fnames = _region(path, module)
    size = 16 + 8 * (len(names) + len(fnames))
    first = bytearray(b"".join(_streams(data[off:off + length]))[:size])
    base = struct.unpack_from(order + "Q", first, 0)[0]
    body = bytearray(size * n)
    for i in range(n):
        body[i * size:(i + 1) * size] = first
        struct.pack_into(order + "Q", body, i * size, (base + i) % 2 ** 64)
    packed = zlib.compress(bytes(body))
    delta = len(packed) - length
    head = bytearray(data[:JOB_AT])
    for i, (o, ln) in enumerate(maps):
        if ln and o > off:
            struct.pack_into(order + "QQ", head, 24 + 16 * i, o + delta, ln)
        elif ln and o == off:
            struct.pack_into(order + "QQ", head, 24 + 16 * i, o, len(packed))
    return bytes(head) + data[JOB_AT:off] + packed + data[off + length:]


def with_exe(data: bytes, exe: str) -> bytes:
    """The log `data` with the first word of the job's command line (the executable) replaced by `exe`: the
    command line follows the job record's fixed fields and its 1024-byte metadata string; the rest of it (the
    arguments, the mount table) is kept. The job record is deflated again as one stream, so `exe` may be of any
    length. Same format limits as `with_job`."""
    order, maps = _layout(data)
    job_end = min(off for off, length in maps if length)
    job = b"".join(_streams(data[JOB_AT:job_end]))
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
