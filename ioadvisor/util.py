"""Small I/O helpers shared by the thin layers."""
from __future__ import annotations

import errno
import gc
import json
import math
import os
import re
from contextlib import contextmanager
from pathlib import Path

from .errors import IOAdvisorError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator


class LazyPattern:
    """A regular expression compiled when first used, then used as the compiled pattern (`.search`, `.match`,
    `.sub` ... are the pattern's own methods from then on). For a module's patterns that a command may never use:
    compiled at import, each would cost every command that imports the module (a character class reaching past
    U+00FF, as the control characters below, takes 0.4-0.8 ms to compile)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def __getattr__(self, name: str) -> Any:
        value = getattr(re.compile(self.pattern), name)
        setattr(self, name, value)
        return value


#: Unicode's Bidi_Control characters (the marks LRM, RLM and ALM, the embeddings, overrides and isolates): shown,
#: they reorder the text around them, so a name or a script line reads as something other than it is
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# newline, carriage return, NUL, escape ... the Unicode line separators and the bidirectional controls: nothing
# a value written into a script or an #SBATCH line may hold (a newline there starts a new shell command)
_CONTROL = LazyPattern(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")


def check_line_value(value: object, what: str) -> str:
    """`value` as text when it may go into one line of a script; UsageError naming `what` otherwise."""
    text = str(value)
    m = _CONTROL.search(text)
    if m:
        raise UsageError(f"{what}: {text[:60]!r} holds a control character ({m.group()!r}); "
                         "a value written into a job script must be one line")
    return text


# what would act on a terminal instead of showing: C0 and C1 controls (newline, CR, ESC ...), DEL, the Unicode
# line and paragraph separators, the bidirectional controls (which reorder the text shown) and lone surrogates
# (the bytes of a file name that are not UTF-8, as Python decodes them)
_UNPRINTABLE = LazyPattern(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """`text` as it may reach a terminal: each character of _UNPRINTABLE written as an escape (\\n, \\x1b,
    \\u2028; a file name's byte that is not UTF-8 as \\xNN), so a name with a newline or an escape sequence
    prints as one visible line."""
    def shown(m: re.Match[str]) -> str:
        c = m.group()
        o = ord(c)
        if c in _NAMED:
            return _NAMED[c]
        if 0xDC80 <= o <= 0xDCFF:
            return f"\\x{o - 0xDC00:02x}"
        return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"
    return _UNPRINTABLE.sub(shown, text)


#: errors of the device rather than of the path: full disk, quota, file too large, I/O error
_DEVICE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (/proc), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, text: str | bytes, mode: int | None = None) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see a half-written file.

    The file gets the permissions a plain new file would (0666, or `mode`, less the umask), not the
    owner-only ones its temporary file starts with: a guide, an export or a script is read by others."""
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
        os.chmod(tmp, (0o666 if mode is None else mode) & ~_umask())
        os.replace(tmp, p)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            # the disk refusing the content is a failure of the machine (exit 1), not of the path given
            error = IOAdvisorError if e.errno in _DEVICE_ERRORS else UsageError
            raise error(f"{p}: cannot write: {e.strerror or e}") from None
        raise


def home_dir() -> Path | None:
    """The user's home directory: $HOME when set and not empty, else the password entry's; None when neither
    names one (a user id with no entry, as in some containers)."""
    home = os.environ.get("HOME")
    if home:
        return Path(home)
    try:
        import pwd
        entry = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return None
    return Path(entry) if entry else None


def data_home() -> Path:
    """$XDG_DATA_HOME/ioadvisor (~/.local/share/ioadvisor by default): where the KB and results are kept
    unless named; UsageError where there is no home directory to hold it."""
    base = os.environ.get("XDG_DATA_HOME")
    if base and os.path.isabs(base):
        return Path(base) / "ioadvisor"
    home = home_dir()
    if home is None:
        raise UsageError("no home directory (HOME is unset and this user id has no password entry): set "
                         "XDG_DATA_HOME, or name the knowledge base (--kb, IOADVISE_KB) and results (--result-dir)")
    return home / ".local" / "share" / "ioadvisor"


def cache_dir(*parts: str) -> Path | None:
    """The directory `parts` of the cache ($XDG_CACHE_HOME/ioadvisor, else ~/.cache/ioadvisor), made if
    missing; None where there is none: no home directory, a home that is missing or not a directory (a home
    is never made), or a directory that cannot be made (a read-only home). A cache only saves time: a caller
    without one does the work again, and one that cannot write to it goes on without it."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):                 # a relative value is ignored, as the XDG rules say
        base = Path(xdg)
    else:
        home = home_dir()
        if home is None or not os.path.isdir(home):
            return None
        base = home / ".cache"
    d = base.joinpath("ioadvisor", *parts)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return d


def private_dir(prefix: str) -> Path:
    """A new temporary directory of this process's own, removed with its content when the process ends (by
    this process only: a forked worker that exits leaves it to its parent)."""
    import atexit
    import shutil
    import tempfile
    d = Path(tempfile.mkdtemp(prefix=prefix))
    pid = os.getpid()
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(d, ignore_errors=True))
    return d


def limit_memory(nbytes: int) -> None:
    """In a child process: cap its address space at `nbytes` (RLIMIT_AS, lowered only), so that a hostile input
    ends in MemoryError (or a failed allocation in a C library) in that child instead of taking the machine's
    memory. Where the platform has no such limit, nothing is done."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = nbytes if hard == resource.RLIM_INFINITY else min(nbytes, hard)
        if soft == resource.RLIM_INFINITY or soft > cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass


def die_with_parent(ppid: int | None = None) -> None:
    """In a child process: end when the process that started it ends, however that ends (a SIGKILL too), so
    no worker or reader outlives the command. Linux: the kernel's parent-death signal (prctl
    PR_SET_PDEATHSIG, SIGKILL; it fires when the thread that forked the child ends, and every fork here is
    made by the command's main thread); elsewhere a thread that watches the parent's process id."""
    if ppid is None:                     # a multiprocessing child: its parent as multiprocessing knows it
        import multiprocessing as mp
        parent = mp.parent_process()
        ppid = parent.pid if parent is not None else os.getppid()
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:         # 1: PR_SET_PDEATHSIG
            raise OSError(ctypes.get_errno(), "prctl")
    except (OSError, AttributeError):
        import threading
        import time

        def watch() -> None:
            while os.getppid() == ppid:
                time.sleep(0.5)
            os._exit(1)
        threading.Thread(target=watch, daemon=True, name="watch-parent").start()
    if os.getppid() != ppid:            # the parent ended before the signal was asked for
        os._exit(1)


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


def read_text(path: str | Path, kind: Any, error: type[Exception] = UsageError) -> str:
    """A user's text file of an `inputs.Kind`, decoded; `error` (one line naming the file, and the line where
    known) for a missing, unreadable, binary (`binary file, not a <kind>`) or non-UTF-8 file, or one the kind
    does not read (a pipe, a device, more bytes than its cap)."""
    from .inputs import read_input
    p = Path(path)
    data = read_input(p, kind, error)
    if b"\x00" in data:
        raise error(f"{p}: binary file, not a {kind.what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise error(f"{p}:{line}: not UTF-8 text") from None


def loads_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads`, with what it parses but Python cannot hold (arrays or tables nested deeper than its
    recursion allows, an integer of more digits than it converts from text: tracebacks) raised as the
    TOMLDecodeError of any other invalid TOML, which every caller reports in one line."""
    import sys
    import tomllib
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("arrays or tables nested too deep") from None
    except tomllib.TOMLDecodeError:
        raise
    except ValueError:          # int('9' * 5000)
        raise tomllib.TOMLDecodeError(f"an integer of more than {sys.get_int_max_str_digits()} digits") from None


def read_toml(path: str | Path, error: type[Exception] = UsageError) -> dict[str, Any]:
    """A TOML file as a dict; `error` (one line naming the file, and the line where known) for a missing,
    unreadable, binary, non-UTF-8 or invalid file."""
    import tomllib

    from .inputs import TOML
    p = Path(path)
    text = read_text(p, TOML, error)
    try:
        return loads_toml(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{p}: not valid TOML: {e}") from None


# Python's cyclic garbage collector where a step makes many objects and no reference cycles, so that collections
# find nothing to free and only cost time. Its first generation collected every GC_THRESHOLD[0] allocations instead
# of 700 (`few_collections`, or set for a whole process): an import's rows, caches and batches had been scanned
# every 700 allocations (a tenth of reading a million rows), a cold advice's new modules while they were imported
# (1.6% of its instructions); a few collections per batch still bound any cycle a hostile file makes. Or no cycle
# collection at all (`cycles_paused`) around a read that holds only acyclic objects it frees by their reference
# counts (a Darshan log's records, a system's runs read for the guide).
GC_THRESHOLD = (50_000, 100, 1000)


@contextmanager
def few_collections() -> Iterator[None]:
    """The cyclic collector's thresholds at GC_THRESHOLD meanwhile, then as they were."""
    old = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*old)


@contextmanager
def cycles_paused() -> Iterator[None]:
    """The cyclic collector off meanwhile, then on again if it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
