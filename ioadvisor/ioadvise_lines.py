"""The `#IOADVISE` line grammar, read here and nowhere else in Python (`job.describe` uses it for `advise
--script`, `wrap` and `submit`). The Lua hook (slurm/job_submit.lua) reads lines the same way; the cases in
tests/data/ioadvise_lines.json hold both to it, line by line.

- A line is an `#IOADVISE` line when it starts with `#IOADVISE` followed by a blank or the end of the line.
  Lines end at "\\n" only (as bash splits them); blanks are space, tab, CR, VT and FF (what sbatch skips).
- The rest is words separated by blanks. A word is made of plain characters and quoted parts, '...' or "...",
  joined as the shell joins them: `outdir="my out"` is one word, `outdir=my out` two. There are no escapes: a
  backslash is an ordinary character. A quote left open is an error for the whole line.
- A `#` at the start of a word (not quoted) begins a comment: the rest of the line is not read.
- Each word is KEY=VALUE, split at its first `=` (the value may hold more `=`, or be empty); a `-` in a key
  reads as `_` (`stage-in` is `stage_in`). A word without `=` is kept apart (`bare`) for the caller to report.
Which keys exist and what their values mean is `ioadvisor.job`'s business, not the grammar's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

PREFIX = "#IOADVISE"
BLANKS = " \t\r\v\f"
_B = re.escape(BLANKS)
_BLANKS = re.compile(f"[{_B}]*")
# one character at a time (never a nested quantifier), so a failed quote costs one scan of the line
_WORD = re.compile(f"""(?:[^{_B}"']|"[^"]*"|'[^']*')+""")
_QUOTED = re.compile(r""""([^"]*)"|'([^']*)'""")


@dataclass(frozen=True)
class Reading:
    """One `#IOADVISE` line read: its KEY=VALUE items in order (keys with `_` for `-`), and words without `=`."""

    items: tuple[tuple[str, str], ...]
    bare: tuple[str, ...] = ()


def is_ioadvise(line: str) -> bool:
    return line.startswith(PREFIX) and (len(line) == len(PREFIX) or line[len(PREFIX)] in BLANKS)


def words(text: str) -> list[str]:
    """The words of the text after the prefix; ValueError when a quote is left open."""
    out: list[str] = []
    pos = 0
    while True:
        pos = _BLANKS.match(text, pos).end()
        if pos >= len(text) or text[pos] == "#":
            return out
        m = _WORD.match(text, pos)
        if m is None or m.end() < len(text) and text[m.end()] not in BLANKS:
            at = m.end() if m else pos
            raise ValueError(f"the quote ({text[at]}) at column {len(PREFIX) + at + 1} is not closed")
        out.append(_QUOTED.sub(lambda q: q.group(1) if q.group(1) is not None else q.group(2), m.group(0)))
        pos = m.end()


def read_line(line: str) -> Reading | None:
    """The reading of one line (without its "\\n"); None when it is not an `#IOADVISE` line; ValueError (the
    reason, for the caller to name the file and line) when a quote is left open."""
    if not is_ioadvise(line):
        return None
    items: list[tuple[str, str]] = []
    bare: list[str] = []
    for word in words(line[len(PREFIX):]):
        key, eq, value = word.partition("=")
        if eq:
            items.append((key.replace("-", "_"), value))
        else:
            bare.append(word)
    return Reading(tuple(items), tuple(bare))


def ioadvise_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of each `#IOADVISE` line of a script."""
    for n, line in enumerate(text.split("\n"), 1):
        if is_ioadvise(line):
            yield n, line
