"""The checks every Darshan log passes before the Darshan library reads it: the version string and magic number at
its start, and a length no header is below. Pure Python and cheap to import: they run in the caller (and, for
`ioadvise diagnose`, before the command line is parsed; see `child.prefetch`)."""
from __future__ import annotations

import struct
from pathlib import Path

from ..errors import ImportFormatError, UsageError

DARSHAN_MAGIC = 6567223          # DARSHAN_MAGIC_NR, stored as int64 right after the 8-byte version string

# Every Darshan 3.x log format starts with an 8-byte version string and the magic number as an int64; what follows
# (the compression type, the partial flag, the name and module maps) differs between formats (3.00-3.21 hold 16
# module maps, 3.41 holds 64 and moved the name map), so only PyDarshan, in the child, reads it. The smallest header
# of any format (3.00: 24 fixed bytes, the name map and 16 module maps of 16 bytes each) is a floor no log is below.
MIN_HEADER_BYTES = 24 + 16 + 16 * 16


def check_header(path: str | Path) -> None:
    """Raise UsageError for a missing path or a directory, ImportFormatError unless `path` starts like a Darshan 3.x
    log (version string, magic number) and is at least as long as the smallest Darshan header. These checks hold
    for every log format; the rest of the header and the records are checked by the Darshan library itself."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{p}: no such file")
    if p.is_dir():
        raise UsageError(f"{p}: is a directory, not a Darshan log")
    with open(p, "rb") as f:
        head = f.read(16)
    if not sniff(head):
        raise ImportFormatError("not a Darshan log (no Darshan magic number in the header)", str(p))
    size = p.stat().st_size
    if size < MIN_HEADER_BYTES:
        raise ImportFormatError(f"truncated Darshan log: {size} bytes, shorter than any Darshan header "
                                f"({MIN_HEADER_BYTES} bytes)", str(p))


def sniff(head: bytes) -> bool:
    """True if `head` starts with a Darshan 3.x header (version string, then the magic number either way round)."""
    if len(head) < 16 or not head.startswith(b"3."):
        return False
    return DARSHAN_MAGIC in (struct.unpack_from("<q", head, 8)[0], struct.unpack_from(">q", head, 8)[0])


def memory_refusal(limit_bytes: int) -> str:
    """Why a log is refused whose reading ran out of an address-space limit of `limit_bytes` (<= 0: none)."""
    size = f"{limit_bytes / (1 << 30):.3g} GiB" if limit_bytes >= 1 << 30 else f"{limit_bytes >> 20} MiB"
    limit = f"the reader's limit of {size}" if limit_bytes > 0 else "the memory there is"
    return f"reading the log needs more memory than {limit}; refused"
