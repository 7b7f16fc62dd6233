"""Small I/O helpers shared by the thin layers."""
from __future__ import annotations

import errno
import json
import math
import os
import re
from pathlib import Path
from typing import Any

from .errors import IOAdvisorError, UsageError

# newline, carriage return, NUL, escape ... and the Unicode line separators: nothing a value written into a
# script or an #SBATCH line may hold (a newline there starts a new shell command)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_line_value(value: object, what: str) -> str:
    """`value` as text when it may go into one line of a script; UsageError naming `what` otherwise."""
    text = str(value)
    m = _CONTROL.search(text)
    if m:
        raise UsageError(f"{what}: {text[:60]!r} holds a control character ({m.group()!r}); "
                         "a value written into a job script must be one line")
    return text


#: errors of the device rather than of the path: full disk, quota, file too large, I/O error
_DEVICE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def atomic_write(path: str | Path, text: str | bytes, mode: int | None = None) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see a half-written file."""
    import tempfile
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_dir():
            raise IsADirectoryError(21, "Is a directory")
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    except OSError as e:
        raise UsageError(f"{p}: cannot write: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, p)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            # the disk refusing the content is a failure of the machine (exit 1), not of the path given
            error = IOAdvisorError if e.errno in _DEVICE_ERRORS else UsageError
            raise error(f"{p}: cannot write: {e.strerror or e}") from None
        raise


def json_safe(obj: Any) -> Any:
    """`obj` with every NaN or infinity replaced by None: JSON has no such tokens, and a reader that meets a
    bare `Infinity` fails."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def to_json(obj: Any, **kw: Any) -> str:
    """Strict JSON text of `obj` (see json_safe); objects JSON does not know become their str()."""
    try:
        # most documents hold no NaN or infinity: encoding refuses one (allow_nan=False), and only then is
        # the document copied without them (the copy costs as much as a third of encoding 500 runs)
        return json.dumps(obj, allow_nan=False, default=str, **kw)
    except ValueError:
        return json.dumps(json_safe(obj), allow_nan=False, default=str, **kw)


def read_text(path: str | Path, error: type[Exception] = UsageError, what: str = "text") -> str:
    """A user's text file, decoded; `error` (one line naming the file, and the line where known) for a missing,
    unreadable, binary (`binary file, not <what>`) or non-UTF-8 file."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise error(f"{p}: no such file") from None
    except OSError as e:
        raise error(f"{p}: cannot read: {e.strerror or e}") from None
    if b"\x00" in data:
        raise error(f"{p}: binary file, not {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise error(f"{p}:{line}: not UTF-8 text") from None


def read_toml(path: str | Path, error: type[Exception] = UsageError) -> dict[str, Any]:
    """A TOML file as a dict; `error` (one line naming the file, and the line where known) for a missing,
    unreadable, binary, non-UTF-8 or invalid file."""
    import tomllib
    p = Path(path)
    text = read_text(p, error, "TOML")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{p}: not valid TOML: {e}") from None
