"""A file to import, read in bounded memory: hashed (and, for a text format, checked line by line) in one
pass, then reopened for the importer. A pipe is copied to a temporary file on the first pass, so the importer
reads the bytes that were hashed; a device or socket is refused unopened (ioadvisor.inputs)."""
from __future__ import annotations

import codecs
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO

from ..errors import ImportFormatError, UsageError
from ..importers import MAX_LINE, SNIFF_BYTES
from ..inputs import RESULT, open_input


class ImportSource:
    """A file to import, read in bounded memory: hashed in one pass, then reopened for the parser."""

    CHUNK = 256 << 10

    def __init__(self, path: Path):
        self.path, self.spool, self.f = path, None, None

    def __enter__(self) -> "ImportSource":
        p = self.path
        self.f = open_input(p, RESULT)          # a regular file or a pipe; a device or socket is refused
        if not stat.S_ISREG(os.fstat(self.f.fileno()).st_mode):
            # a pipe or device: keep what the first pass reads, so the parser reads the same bytes
            self.spool = tempfile.TemporaryFile(prefix="ioadvise-import-")
        self._head = self._read(SNIFF_BYTES)
        return self

    def __exit__(self, *exc: object) -> None:
        for f in (self.f, self.spool):
            if f is not None:
                f.close()

    def _read(self, n: int) -> bytes:
        try:
            data = self.f.read(n)
        except OSError as e:
            raise UsageError(f"{self.path}: cannot read: {e.strerror}") from None
        if self.spool is not None:
            self.spool.write(data)
        return data

    def head(self) -> bytes:
        return self._head

    def scan(self, text: bool, max_bytes: int | None) -> tuple[str, int]:
        """sha256 and size of the whole file. For a text format, refuses a line longer than MAX_LINE or bytes
        that are not UTF-8, naming the line; with max_bytes, refuses a larger file. Stops at the first
        refusal, so /dev/zero or a gigabyte on one line cost at most about MAX_LINE bytes of reading."""
        h = hashlib.sha256()
        dec = codecs.getincrementaldecoder("utf-8")() if text else None
        line, run, size = 1, 0, 0          # current line number, bytes of it read so far
        if max_bytes is not None and self.spool is None and os.fstat(self.f.fileno()).st_size > max_bytes:
            # a regular file's size is known: refused before a byte of it is hashed (a 20 GiB sparse log)
            raise ImportFormatError(f"larger than {max_bytes >> 20} MiB, more than the importer of this "
                                    "format reads (split the file)", str(self.path))
        chunk = self._head
        while chunk:
            h.update(chunk)
            size += len(chunk)
            if max_bytes is not None and size > max_bytes:
                raise ImportFormatError(f"larger than {max_bytes >> 20} MiB, more than the importer of this "
                                        "format reads (split the file)", str(self.path))
            if dec is not None:
                try:
                    dec.decode(chunk)
                except UnicodeDecodeError as e:
                    at = max(0, e.start - len(dec.getstate()[0]))
                    raise ImportFormatError("not UTF-8 text", str(self.path),
                                            line + chunk.count(b"\n", 0, at)) from None
                if run + len(chunk) <= MAX_LINE:       # no line in this chunk can be too long: count only
                    last = chunk.rfind(b"\n")
                    line += chunk.count(b"\n")
                    run = run + len(chunk) if last < 0 else len(chunk) - last - 1
                else:
                    start = 0
                    while True:
                        nl = chunk.find(b"\n", start)
                        end = len(chunk) if nl < 0 else nl
                        if run + end - start > MAX_LINE:
                            raise ImportFormatError(f"line longer than {MAX_LINE >> 20} MiB: not a benchmark "
                                                    "output", str(self.path), line)
                        if nl < 0:
                            run += end - start
                            break
                        line, run, start = line + 1, 0, nl + 1
            chunk = self._read(self.CHUNK)
        if dec is not None:
            try:
                dec.decode(b"", final=True)
            except UnicodeDecodeError:
                raise ImportFormatError("not UTF-8 text", str(self.path), line) from None
        return h.hexdigest(), size

    def reopen(self) -> BinaryIO:
        f = self.spool if self.spool is not None else self.f
        f.seek(0)
        return f

    def read_all(self) -> bytes:
        return self.reopen().read()
