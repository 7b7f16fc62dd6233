"""Shared CLI pieces: error translation, output helpers, common options."""
from __future__ import annotations

import contextlib
import functools
import os
import sys

from ..errors import IOAdvisorError
from ..util import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterator, NoReturn


PIPE_WIDTH = 4096     # the width tables are laid out for when stdout is not a terminal: no table is cut
#: the widths a terminal is taken to have, whatever $COLUMNS says (into a pipe or a file: up to PIPE_WIDTH)
MIN_WIDTH, MAX_WIDTH = 20, 1000
#: what states the width: the shell's $COLUMNS (read by rich, click's help and cli/text.py) and typer's own
WIDTH_VARIABLES = ("COLUMNS", "TERMINAL_WIDTH")


def sane_width(environ: Any = os.environ, terminal: bool | None = None) -> None:
    """Hold $COLUMNS and $TERMINAL_WIDTH to a width output can be laid out for, before anything reads them: a
    value that is not a whole number above 0 (`0`, `-5`, `1e20`, `wide`) is dropped, so the terminal's own
    size (or the pipe's width) is used; a number is held between MIN_WIDTH and MAX_WIDTH on a terminal, or
    PIPE_WIDTH into a pipe or file. Without this, a width of 0 printed nothing, and a width of 100,000,000
    drew a help text for 52 s in 2 GB before a MemoryError."""
    if terminal is None:
        try:
            terminal = sys.stdout.isatty()
        except (AttributeError, ValueError):
            terminal = False
    top = MAX_WIDTH if terminal else PIPE_WIDTH
    for name in WIDTH_VARIABLES:
        value = environ.get(name)
        if value is None:
            continue
        v = value.strip()
        if not (v.isascii() and v.isdigit()) or int(v) == 0:
            del environ[name]
        elif len(v) > 6 or not MIN_WIDTH <= int(v) <= top:
            environ[name] = str(min(max(int(v[:7]), MIN_WIDTH), top))
        elif v != value:
            environ[name] = v


class _LazyConsole:
    """A rich Console made on first use: rich costs tens of milliseconds to import, which a command that
    prints JSON or plain lines (`advise --json`, `kb list`) need not pay at start-up."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Any = None

    def get(self) -> Any:
        """The rich Console itself (for APIs that want one, such as rich.progress)."""
        if self._console is None:
            from rich.console import Console
            self._console = Console(**self._options)
            # to a pipe or a file, nothing is broken at 80 columns (rich's width when there is no terminal): a
            # sentence stays on one line and a table has its natural width, for grep and for whatever displays
            # it later ($COLUMNS, when set, still gives tables a width)
            if not self._console.is_terminal:
                self._console.soft_wrap = True
                if not os.environ.get("COLUMNS", "").isdigit():
                    self._console.width = PIPE_WIDTH
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)


# No markup or emoji substitution by default: most printed text carries user input (system names, paths,
# script lines), and "[red]" or ":smile:" in it must print as written. Styled text is built with rich.text.Text.
console = _LazyConsole(markup=False, emoji=False)
err_console = _LazyConsole(stderr=True, markup=False, emoji=False)


def escape(text: str) -> str:
    """`text` made printable (see printable) and its rich markup literal (rich.markup.escape, imported when an
    error is printed)."""
    from rich.markup import escape as rich_escape
    return rich_escape(printable(text))


def print_error(message: str) -> None:
    """`Error: MESSAGE` on stderr, one line whatever the message holds."""
    err_console.print(f"[bold red]Error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)


def warn(message: str) -> None:
    """`warning: MESSAGE` on stderr, one line whatever the message holds."""
    err_console.print("warning: " + printable(message), style="yellow", highlight=False, markup=False,
                      soft_wrap=True)


@contextlib.contextmanager
def cli_errors() -> Iterator[None]:
    """Turn library errors into a one-line `Error: ...` on stderr and the error's exit code."""
    try:
        yield
    except IOAdvisorError as e:
        print_error(str(e))
        raise SystemExit(e.exit_code) from None
    except KeyboardInterrupt as e:
        from .signals import interrupted_code
        code = interrupted_code(e)
        err_console.print("Interrupted", highlight=False)
        raise SystemExit(code) from None
    except Exception as e:
        # the knowledge base failing under a command (a full disk, a read-only or corrupt file): one line
        sqlite3 = sys.modules.get("sqlite3")
        if sqlite3 is None or not isinstance(e, sqlite3.Error):
            raise
        err_console.print(f"Error: knowledge base: {e}", highlight=False, soft_wrap=True)
        raise SystemExit(1) from None


class OutputError(IOAdvisorError):
    """Standard output refused a write: the disk is full, the pipe closed, the device failed."""


class _CheckedStdout:
    """Standard output whose every refused write raises OutputError (exit 1, one line), and which then drops
    the rest, so that nothing half-written is taken for a result and no second error follows at exit. Writes go
    through a buffered writer: Python's unbuffered stdout (PYTHONUNBUFFERED, as in many batch jobs) drops the
    rest of a partly written block without a word."""

    def __init__(self, stream: Any) -> None:
        import io
        raw = stream.buffer
        if not isinstance(raw, io.BufferedIOBase):                  # a raw FileIO: give it a buffer
            raw = io.BufferedWriter(raw)
        self._stream = io.TextIOWrapper(raw, encoding=stream.encoding, errors=stream.errors,
                                        line_buffering=stream.isatty(), write_through=False)
        self._failed: OSError | None = None

    def _refused(self, e: OSError) -> OutputError:
        import os
        if self._failed is None:
            self._failed = e
            try:           # what is left in the buffers goes nowhere, not into a second error at exit
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self._stream.fileno())
                os.close(devnull)
            except OSError:
                pass
        return OutputError(f"cannot write the output: {e.strerror or e}")

    def write(self, text: str) -> int:
        if self._failed is not None:
            raise self._refused(self._failed)
        try:
            return self._stream.write(text)
        except OSError as e:
            raise self._refused(e) from None

    def flush(self) -> None:
        if self._failed is not None:
            return
        try:
            self._stream.flush()
        except OSError as e:
            raise self._refused(e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def checked_stdout() -> Any:
    """Replace sys.stdout by one whose failures are OutputError (see _CheckedStdout); returns it."""
    if not isinstance(sys.stdout, _CheckedStdout) and hasattr(sys.stdout, "buffer"):
        sys.stdout = _CheckedStdout(sys.stdout)
    return sys.stdout


def run_command(command: Callable[[], Any]) -> NoReturn:
    """Run `command` (typer's app, or a command line read without it), then flush its output; a failed write to
    stdout (a full disk, a closed pipe) is one line and exit 1, never a silent truncation, a traceback or exit 0.
    SIGINT, SIGTERM and SIGHUP unwind the command (its `finally` blocks and context managers remove temporary
    files) and exit 128+n."""
    from .signals import exit_code_after_signal, unwind_on_signals
    out = checked_stdout()
    code: Any = 0
    unwind_on_signals()
    try:
        command()
    except SystemExit as e:
        code = e.code
    except KeyboardInterrupt:                   # a signal outside a command's own error handling
        code = 130
    except OutputError as e:                     # raised outside a command's own error handling
        err_console.print(f"Error: {e}", highlight=False, soft_wrap=True)
        code = e.exit_code
    code = exit_code_after_signal(code)
    try:
        out.flush()
    except OutputError as e:
        err_console.print(f"Error: {e}", highlight=False, soft_wrap=True)
        code = e.exit_code
    sys.exit(code)


def progress_bar(quiet: bool = False, *, unit: str = "count") -> Any:
    """A rich progress display on stderr with elapsed time and ETA; silent (disabled) with `quiet` (e.g.
    --json) or when stderr is not a terminal, so pipes and logs get nothing of it. unit="bytes" shows
    transferred sizes, else done/total counts."""
    from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    amount = DownloadColumn(binary_units=True) if unit == "bytes" else MofNCompleteColumn()
    return Progress(TextColumn("{task.description}"), BarColumn(), amount, TimeElapsedColumn(),
                    TextColumn("ETA"), TimeRemainingColumn(), console=err_console.get(), transient=True,
                    disable=quiet or not err_console.is_terminal)


def table(columns: tuple[str, ...], *, right: tuple[str, ...] = (), title: str | None = None) -> Any:
    """A rich table in the commands' one style: a rule under the header, no outer edge; the columns named in
    `right` (numbers) right-aligned. Text cells are made printable as they are added (see `printable_table`)."""
    from rich import box
    t = printable_table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title=title)
    for col in columns:
        t.add_column(col, justify="right" if col in right else "left")
    return t


def printable_table(**kwargs: Any) -> Any:
    """A rich Table whose plain-text title and cells are made printable (`printable`): names and notes from a KB
    (an older version's rows too), a plan or a log may hold control or bidirectional characters. Styled cells
    (rich Text) are the caller's own and pass as they are."""
    if isinstance(kwargs.get("title"), str):
        kwargs["title"] = printable(kwargs["title"])
    return _printable_table_class()(**kwargs)


@functools.cache
def _printable_table_class() -> type:
    """The Table subclass of `printable_table`, made once (rich is imported only when a table is drawn)."""
    from rich.table import Table

    class PrintableTable(Table):
        def add_row(self, *cells: Any, **kw: Any) -> None:
            super().add_row(*(printable(c) if isinstance(c, str) else c for c in cells), **kw)
    return PrintableTable


def print_json(obj: Any) -> None:
    """JSON on stdout, nothing else; never a NaN or Infinity token (they become null)."""
    from ..util import to_json
    sys.stdout.write(to_json(obj, indent=2) + "\n")


# the typer annotations of the options several commands share (cli/options.py declares them), made when a
# command module asks for one: `advise` read without typer (cli/advise.py) never imports typer
_SHARED = {"KBOption": "KB", "JsonOption": "JSON", "RanksPerNode": "RANKS_PER_NODE", "BytesPerRank": "BYTES_PER_RANK",
           "TotalBytes": "TOTAL_BYTES", "ApiOpt": "API", "LayoutOpt": "LAYOUT", "OpOpt": "OP",
           "AccessSize": "ACCESS_SIZE", "RandomOpt": "RANDOM", "FilesOpt": "FILES", "LifetimeOpt": "LIFETIME",
           "CollectiveOpt": "COLLECTIVE"}


def __getattr__(name: str) -> Any:
    if name not in _SHARED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import options
    value = globals()[name] = options.annotated(getattr(options, _SHARED[name]))
    return value
