"""Reading the files a user hands to a command: each kind of file has a size cap, and what is not a regular file
(a named pipe, a device, a socket) is refused by its type before it is opened, so no command waits forever on a
pipe without a writer or reads /dev/zero until memory runs out.

The type is looked up first (os.stat, following symbolic links) and only a regular file, or a pipe where the
kind accepts one, is opened; the open never blocks (O_NONBLOCK) and the opened file's type is checked again, in
case the name was replaced in between. Reading stops one byte past the cap, whatever the file claims its size
is. Every refusal is one line naming the file (exit code 2).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import ImportFormatError, UsageError
from .frozen import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["Kind", "SCRIPT", "TOML", "RECORD", "PLAN", "LOG", "RESULT", "check_input", "open_input", "read_input",
           "size_text"]


class Kind(NamedTuple):
    """A kind of input file: its name in messages, the most bytes read of it (None: the reader bounds itself),
    and whether a pipe is accepted (read as it comes, e.g. `<(zcat results.gz)`)."""

    what: str
    limit: int | None
    pipes: bool = False


SCRIPT = Kind("job script", 16 << 20)
TOML = Kind("TOML file", 4 << 20)            # center, workload, thresholds and sweep files
RECORD = Kind("job record", 16 << 20)
PLAN = Kind("sweep plan", 64 << 20)
LOG = Kind("Darshan log", 2 << 30)
RESULT = Kind("result file", None, pipes=True)   # kb import: bounded by its importers (importers.MAX_*)


def size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} bytes"


def _error(error: type[Exception], p: Path, reason: str) -> Exception:
    if issubclass(error, ImportFormatError):
        return error(reason, str(p))
    return error(f"{p}: {reason}")


def _type_refusal(mode: int, kind: Kind) -> str | None:
    """Why a file of this mode is not read as `kind`, or None."""
    if stat.S_ISREG(mode) or (kind.pipes and stat.S_ISFIFO(mode)):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    what = ("a named pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "of another type")
    return f"is {what}, not a regular file{' or a pipe' if kind.pipes else ''}: a {kind.what} is not read from it"


def _too_large(kind: Kind) -> str:
    return f"larger than {size_text(kind.limit or 0)}, more than a {kind.what} may be"


def check_input(path: str | Path, kind: Kind, error: type[Exception] = UsageError) -> os.stat_result:
    """The file's stat if it may be read as `kind` (its type, and its size against the cap), without opening it;
    `error` naming the file otherwise."""
    p = path if isinstance(path, Path) else Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise _error(error, p, "no such file") from None
    except OSError as e:
        raise _error(error, p, f"cannot read: {e.strerror or e}") from None
    why = _type_refusal(st.st_mode, kind)
    if why:
        raise _error(error, p, why)
    if kind.limit is not None and stat.S_ISREG(st.st_mode) and st.st_size > kind.limit:
        raise _error(error, p, _too_large(kind))
    return st


def open_input(path: str | Path, kind: Kind, error: type[Exception] = UsageError) -> BinaryIO:
    """The file opened for reading in binary, once `check_input` allows it; the caller reads at most the cap."""
    p = path if isinstance(path, Path) else Path(path)
    check_input(p, kind, error)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _error(error, p, "no such file") from None
    except OSError as e:
        raise _error(error, p, f"cannot read: {e.strerror or e}") from None
    try:
        why = _type_refusal(os.fstat(fd).st_mode, kind)     # the name may have been replaced since the stat
        if why:
            raise _error(error, p, why)
        os.set_blocking(fd, True)       # a pipe: wait for its writer's bytes (none connected: end of file)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | Path, kind: Kind, error: type[Exception] = UsageError) -> bytes:
    """The whole file as bytes, refused (`error` naming the file) when it is not of a readable type or holds
    more than the cap of its kind."""
    p = Path(path)
    with open_input(p, kind, error) as f:
        try:
            data = f.read() if kind.limit is None else f.read(kind.limit + 1)
        except OSError as e:
            raise _error(error, p, f"cannot read: {e.strerror or e}") from None
    if kind.limit is not None and len(data) > kind.limit:
        raise _error(error, p, _too_large(kind))
    return data
