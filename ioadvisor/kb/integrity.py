"""A published snapshot's integrity.

Every open of a published KB checks its header against its size (`check_snapshot`, a 100-byte read): a file cut
short (even by less than a page, which SQLite reads as rows of NULLs), cut to a page or with bytes appended is
refused. The snapshot also holds the sha256 of its own bytes (`published.sha256`), computed with the digest's
text zeroed (`seal`); `verify_snapshot` reads the whole file to compare, which catches any byte altered, at the
cost of reading the file (1.4 s for a snapshot of a million runs, 445 MB, on a loaded 2-core machine; SQLite's
`PRAGMA quick_check` took 1.8 s): `kb stats` does it, not every command.
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path

from ..errors import KBError

_BLANK = "0" * 64
_MAGIC = b"SQLite format 3\0"


def _header_sizes(head: bytes) -> tuple[int, int] | None:
    """(page size, page count) an SQLite header states, or None where it states no valid count."""
    if len(head) < 100 or not head.startswith(_MAGIC):
        return None
    page = int.from_bytes(head[16:18], "big")
    page = 2 ** 16 if page == 1 else page
    count, changes, valid_for = (int.from_bytes(head[i:i + 4], "big") for i in (28, 24, 92))
    return (page, count) if count and changes == valid_for else None


def check_snapshot(path: Path) -> None:
    """KBError unless the file at `path` is as long as its header says: an SQLite file, of whole pages, none
    missing and nothing after them."""
    try:
        with open(path, "rb") as f:
            head = f.read(100)
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise KBError(f"{path}: cannot read: {e.strerror or e}") from None
    sizes = _header_sizes(head)
    if sizes is None:
        raise KBError(f"{path}: not a published knowledge base (no SQLite header with its size); publish it again "
                      "(`ioadvise kb publish`)")
    page, count = sizes
    if size != page * count:
        raise KBError(f"{path}: truncated or altered: {size:,} bytes where its header says {count:,} pages of "
                      f"{page:,} bytes ({page * count:,}); publish it again (`ioadvise kb publish`)")


def _digest(view: memoryview, at: int) -> str:
    """The sha256 of `view` with the 64 bytes at `at` read as zeros."""
    import hashlib          # here, not at import: every open of a snapshot checks its size, few its digest
    h = hashlib.sha256()
    for a, b in ((0, at), (at + 64, len(view))):
        for k in range(a, b, 1 << 24):
            h.update(view[k:min(b, k + (1 << 24))])
        if a == 0:
            h.update(_BLANK.encode())
    return h.hexdigest()


def seal(tmp: str, blank: str) -> None:
    """Write the file's digest over the placeholder `blank` (64 hex digits that occur once in it)."""
    with open(tmp, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        at = m.find(blank.encode())
        if at < 0 or m.find(blank.encode(), at + 1) >= 0:
            raise KBError(f"{tmp}: the digest's placeholder is not in the file once")
        m[at:at + 64] = _digest(memoryview(m), at).encode()
        m.flush()


def verify_snapshot(path: Path, digest: str) -> None:
    """KBError unless the bytes of the snapshot at `path` have the sha256 `digest` it holds (`_seal`)."""
    check_snapshot(path)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        at = m.find(digest.encode())
        if at < 0 or _digest(memoryview(m), at) != digest:
            raise KBError(f"{path}: altered since it was published (its bytes do not have the digest it was "
                          "published with); publish it again (`ioadvise kb publish`)")
