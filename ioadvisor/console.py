"""The `ioadvise` console script: for `ioadvise diagnose LOG`, the log starts being read before the command line
is even parsed; then the command runs (`ioadvisor.cli.main`).

`diagnose` spends its time in two places: this process importing the command-line layer and the rules, and the
child that reads the log importing PyDarshan's backend and parsing. Forking the child first lets the two run side by
side; `diagnose` takes the read over once its own checks of the file pass (`darshanlog.child.start_read`). A path
that is not a Darshan log is not read here: the command reports it as it always does.
"""
from __future__ import annotations

import sys


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["diagnose"]:
        from .darshanlog.child import prefetch
        prefetch(args[1:])
    from .cli import main as run
    run()
