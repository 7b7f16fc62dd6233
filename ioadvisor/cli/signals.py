"""Signals end a command the way Ctrl-C does: SIGTERM (a batch system's or `timeout`'s stop) and SIGHUP (a closed
terminal) raise Interrupted in the main thread, so every `finally` block and context manager on the way out runs
(temporary files and directories are removed, children stopped), and the process exits 128 + the signal's number,
as a shell reports a command a signal ended.

A second signal while the first unwinds is ignored: cleaning up is not cut short halfway. A signal that was
ignored when the command started (`nohup` ignores SIGHUP) stays ignored.
"""
from __future__ import annotations

import os

# the C module under `signal`: importing `signal` itself makes its enums (Signals, Handlers, Sigmasks; 1.3% of a
# cold advice's instructions), which only naming a signal that came needs
import _signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_received: list[int] = []       # the first signal that ended the command, if one did
_owner: list[int] = []          # the pid of the command's own process


class Interrupted(KeyboardInterrupt):
    """The command was stopped by a signal; `signum` says which."""

    def __init__(self, signum: int) -> None:
        import signal
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _handler(signum: int, frame: Any) -> None:
    if _owner and os.getpid() != _owner[0]:
        # a forked child (an archive worker, a log reader) inherited this handler: it dies of the signal as it
        # would have without it, and its parent reports and cleans up
        _signal.signal(signum, _signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if _received:
        return                              # already unwinding: let the cleanup finish
    _received.append(signum)
    raise Interrupted(signum)


def unwind_on_signals() -> None:
    """Install the handlers for SIGINT, SIGTERM and SIGHUP where each still has its default disposition."""
    _owner[:] = [os.getpid()]
    defaults = {_signal.SIGINT: _signal.default_int_handler, _signal.SIGTERM: _signal.SIG_DFL,
                _signal.SIGHUP: _signal.SIG_DFL}
    for signum, default in defaults.items():
        try:
            if _signal.getsignal(signum) == default:
                _signal.signal(signum, _handler)
        except ValueError:                  # not the main thread (the CLI called from a library's thread)
            return


def interrupted_code(e: BaseException) -> int:
    """The exit code for a command that `e` (a KeyboardInterrupt) ended: 128 + the signal's number."""
    return 128 + getattr(e, "signum", _signal.SIGINT)


def exit_code_after_signal(code: Any) -> Any:
    """`code`, or 128 + n where signal n ended the command (whatever code the unwinding produced: click turns
    an interrupt it sees into 'Aborted!' and exit 1)."""
    return 128 + _received[0] if _received else code
