"""A Darshan log read in a forked child process, and reads started before the command line is parsed.

The Darshan C library is only called in a child: a corrupt log can make it crash, print errors or return partial
data, and none of that may take the caller down. This module holds the fork and the pipe and nothing else, so it
costs almost nothing to import: `ioadvise diagnose LOG` forks the reader before it imports the command-line layer
(`prefetch`, called by `ioadvisor.console`), and the two then run side by side. What the child does is
`derive.child_main`; a log is read only after the checks of the file and its header (`header`) (`start_read`, which
takes a prefetched read over only once they pass).
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import time
from pathlib import Path
from typing import Any

from .header import check_header, sniff

CHILD_TIMEOUT = 120.0
# what a prefetch reads at most before the checks of `start_read` ran: the header's first bytes
_HEAD = 16


class LogRead:
    """A log being read in a child process; `result()` waits for its LogSummary, `cancel()` stops the child when
    the caller gives up first."""

    def __init__(self, path: str, pid: int, fd: int, timeout: float):
        self.path, self.pid, self.fd, self.timeout = path, pid, fd, timeout
        self._done = False

    def _reap(self, kill: bool) -> int:
        if self._done:
            return 0
        self._done = True
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass
        while True:
            try:
                return os.waitpid(self.pid, 0)[1]
            except InterruptedError:
                continue
            except ChildProcessError:
                return 0

    def cancel(self) -> None:
        self._reap(kill=True)

    def result(self) -> Any:
        """The LogSummary; ImportFormatError naming the file if the child refused the log, crashed or timed out,
        UsageError if PyDarshan is missing."""
        from ..errors import ImportFormatError, UsageError
        p = self.path
        chunks: list[bytes] = []
        deadline = time.monotonic() + self.timeout
        try:
            while True:
                left = deadline - time.monotonic()
                ready = select.select([self.fd], [], [], max(0.0, left))[0] if left > 0 else []
                if not ready:
                    self._reap(kill=True)
                    raise ImportFormatError(f"reading the log took more than {self.timeout:.0f} s; gave up", p)
                data = os.read(self.fd, 1 << 20)
                if not data:
                    break
                chunks.append(data)
        except BaseException:
            self._reap(kill=True)
            raise
        status = self._reap(kill=False)
        if not chunks:
            if os.WIFSIGNALED(status):
                try:
                    name = signal.Signals(os.WTERMSIG(status)).name
                except ValueError:
                    name = f"signal {os.WTERMSIG(status)}"
                raise ImportFormatError(
                    f"the Darshan library crashed reading this log ({name}): the log is truncated or corrupt", p)
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
            raise ImportFormatError(f"the log reader stopped without an answer (exit code {code})", p)
        try:
            kind, payload = pickle.loads(b"".join(chunks))
        except Exception:                    # the child died halfway through its answer
            raise ImportFormatError("the log reader stopped in the middle of its answer", p) from None
        if kind == "ok":
            return payload
        if kind == "usage":
            raise UsageError(payload)
        raise ImportFormatError(payload, p)


def summarize(path: str | Path, *, timeout: float = CHILD_TIMEOUT) -> Any:
    """Parse a Darshan log into a LogSummary, isolated in a child process.

    Raises ImportFormatError (exit 2) for foreign, truncated or corrupt logs, UsageError if PyDarshan is missing.
    """
    return start_read(path, timeout=timeout).result()


def start_read(path: str | Path, *, timeout: float = CHILD_TIMEOUT) -> LogRead:
    """Check the file and its header, then start reading the log in a child process and return at once: the
    caller can do other work (load thresholds, import the rules) while the child imports PyDarshan and reads. A
    read `prefetch` started before the command line was parsed is taken over, after the same checks.
    Raises what `inputs.check_input` and `header.check_header` raise."""
    from ..errors import ImportFormatError
    from ..inputs import LOG, check_input
    p = str(Path(path))
    try:
        check_input(p, LOG, ImportFormatError)  # a pipe or device is not opened; a log larger than the cap not read
        check_header(p)
    except BaseException:
        early = take(p)
        if early is not None:
            early.cancel()
        raise
    read = take(p) or fork_read(p, timeout)
    read.timeout = timeout
    return read


def fork_read(path: str, timeout: float) -> LogRead:
    """Fork a child that reads `path` (derive.child_main) and sends its answer back through a pipe."""
    parent = os.getpid()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                   # the child: never returns into the caller's code
        code = 0
        try:
            os.close(r)
            from .derive import child_main
            child_main(path, w, parent)
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(w)
    return LogRead(path, pid, r, timeout)


# reads started by `prefetch`: path -> (the file's identity when it was started, the read)
_started: dict[str, tuple[tuple[int, ...], LogRead]] = {}


def _identity_of(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def prefetch(args: list[str], timeout: float = CHILD_TIMEOUT) -> None:
    """Start reading the first argument that is a regular file starting like a Darshan log, for `take` to hand
    over; options, missing files and anything else are left alone for the command to report. A read nobody takes
    ends with this process (the child asks the kernel to kill it when its parent ends)."""
    import stat
    for a in args:
        if a.startswith("-"):
            continue
        p = str(Path(a))
        try:
            st = os.stat(p)
            if not stat.S_ISREG(st.st_mode):
                continue
            with open(p, "rb") as f:
                head = f.read(_HEAD)
        except (OSError, ValueError):
            continue
        if not sniff(head):
            continue
        _started[p] = (_identity_of(st), fork_read(p, timeout))
        return


def take(path: str) -> LogRead | None:
    """The read `prefetch` started for `path`, if the file is still the one it started on; else None (and a read
    of a file changed since is stopped)."""
    early = _started.pop(path, None)
    if early is None:
        return None
    try:
        same = early[0] == _identity_of(os.stat(path))
    except OSError:
        same = False
    if same:
        return early[1]
    early[1].cancel()
    return None
