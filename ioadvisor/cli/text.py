"""Plain-text output without rich, for the listing commands whose start-up is a target (`kb list`): importing
rich and laying out a table of 50 rows with it costs about 40 ms, a third of the whole process.

The look is that of the rich tables elsewhere (a simple head: bold column names over a rule, two spaces between
columns, numbers to the right), laid out for the width rich would use: $COLUMNS, else the terminal's, else 80.
"""
from __future__ import annotations

import os
import sys
from typing import Iterable, Sequence

ELLIPSIS = "…"
RULE = "─"


def terminal_width() -> int:
    """Columns to lay out for, found as rich finds them: $COLUMNS, else the size of the terminal on stdin,
    stdout or stderr, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for fd in (0, 1, 2):
        try:
            return os.get_terminal_size(fd).columns or 80
        except (OSError, ValueError):
            continue
    return 80


def cell_width(text: str) -> int:
    """Terminal cells `text` takes: two for a wide (East Asian) character, none for a combining one."""
    if text.isascii():
        return len(text)
    import unicodedata
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def _head(text: str, width: int) -> str:
    """The longest start of `text` that takes at most `width` cells."""
    used = 0
    for n, ch in enumerate(text):
        used += cell_width(ch)
        if used > width:
            return text[:n]
    return text


def fit(text: str, width: int, ellipsis: str = ELLIPSIS) -> str:
    """`text` cut to at most `width` cells, an ellipsis marking the cut."""
    if cell_width(text) <= width:
        return text
    return _head(text, width - cell_width(ellipsis)) + ellipsis if width >= cell_width(ellipsis) else ""


def wrap(text: str, width: int) -> list[str]:
    """`text` broken at spaces into lines of at most `width` cells (a longer word is cut into pieces)."""
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        while cell_width(word) > width:                  # a word longer than a line: on lines of its own
            if line:
                lines.append(line)
                line = ""
            cut = _head(word, width) or word[:1]
            lines.append(cut)
            word = word[len(cut):]
        candidate = f"{line} {word}" if line else word
        if line and cell_width(candidate) > width:
            lines.append(line)
            line = word
        else:
            line = candidate
    lines.append(line)
    return lines


def _styled() -> bool:
    """Whether stdout takes terminal styles (bold), as rich decides: a terminal that is not dumb, or
    FORCE_COLOR."""
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM", "").lower() not in ("dumb", "unknown")


def _encodable(text: str) -> bool:
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def table(columns: Sequence[str], rows: Iterable[Sequence[str]], *, right: Iterable[str] = (),
          shrink: str | None = None, width: int | None = None) -> list[str]:
    """Lines of a table: every column as wide as its widest cell, except `shrink`, which gives way (cut with an
    ellipsis, never below its name) so that the table fits `width` cells (default: terminal_width()). Every cell
    is made printable (`util.printable`): a KB written by an older version may hold control or bidirectional
    characters in a name, which would reorder or break the lines shown."""
    from ..util import printable
    rows = [[printable(str(c)) for c in r] for r in rows]
    widths = [max([cell_width(c), *(cell_width(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    gap = 2
    if shrink in columns:
        i = columns.index(shrink)
        total = sum(widths) + gap * (len(widths) - 1)
        limit = terminal_width() if width is None else width
        if total > limit:
            widths[i] = max(widths[i] - (total - limit), cell_width(columns[i]))
    right = set(right)

    unicode = _encodable(RULE + ELLIPSIS)
    rule, ellipsis = (RULE, ELLIPSIS) if unicode else ("-", "...")

    def line(cells: Sequence[str]) -> str:
        out = []
        for c, w, name in zip(cells, widths, columns):
            c = fit(c, w, ellipsis)
            pad = " " * (w - cell_width(c))
            out.append(pad + c if name in right else c + pad)
        return (" " * gap).join(out).rstrip()

    head = line(columns)
    if _styled():
        head = f"\x1b[1m{head}\x1b[0m"
    return [head, rule * (sum(widths) + gap * (len(widths) - 1)), *(line(r) for r in rows)]


def echo(lines: Iterable[str]) -> None:
    """Lines on stdout."""
    sys.stdout.write("".join(f"{ln}\n" for ln in lines))
