"""The `ioadvise` console script: for `ioadvise diagnose LOG`, the log starts being read before the command line
is even parsed; then the command runs (`ioadvisor.cli.main`).

`diagnose` spends its time in two places: this process importing the command-line layer and the rules, and the
child that reads the log importing PyDarshan's backend and parsing. Forking the child first lets the two run side by
side; `diagnose` takes the read over once its own checks of the file pass (`darshanlog.child.start_read`). A path
that is not a Darshan log is not read here: the command reports it as it always does. What both sides need (the
summary's records) is made once, before the fork.

`ioadvise advise ...` as users type it is read without typer (`cli.advise.parse`), whose import is about a quarter
of a cold advice; a command line it does not fully understand (--help, an error, an option it does not know) goes
to typer as every other command does.

A diagnosis, and such an advice, end without tearing the interpreter down module by module (a quarter of a small
log's time, 5% of a cold advice's instructions): the exit handlers run and the output is flushed, then the process
exits with the command's code. Every file the command writes is closed by then (written atomically, see
`ioadvisor.util`; the KB's connection is closed when the advice is made).
"""
from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def main() -> None:
    args = sys.argv[1:]
    diagnosing = args[:1] == ["diagnose"]
    if diagnosing:
        # the summary's records are made before the fork: the child builds its
        # answer of them and this process reads it back, so each would otherwise make them again, at the same cost
        from .darshanlog import summary  # noqa: F401
        from .darshanlog.child import prefetch
        prefetch(args[1:])
    run = _plain_advice(args[1:]) if args[:1] == ["advise"] else None
    if run is None:
        from .cli import main as run
        if not diagnosing:
            run()
            return
    try:
        run()
        code = 0
    except SystemExit as e:
        code = e.code
    import atexit
    import os
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 1
    if code is None:
        code = 0
    elif not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    os._exit(code)


def _plain_advice(args: list[str]) -> Any:
    """`ioadvise advise ARGS` as a function to run, where its command line is read without typer; else None.

    Its first generation of cyclic garbage is collected every 50,000 allocations, not 700 (util.GC_THRESHOLD, as an
    import's): the collector scanned the new modules' objects again and again while they were imported, for nothing
    to free (1.6% of a cold advice's instructions)."""
    import gc

    from .cli import advise
    params = advise.parse(args)
    if params is None:
        return None
    from .cli.common import run_command, sane_width
    from .util import GC_THRESHOLD
    gc.set_threshold(*GC_THRESHOLD)
    return lambda: run_command(lambda: (sane_width(), advise.run(params)))
