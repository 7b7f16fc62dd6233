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
- A line inside a here-document's body is data for a command, not a comment: it is never an `#IOADVISE` line
  (`directive_lines`). A body starts after a command line with `<<WORD` or `<<-WORD` (the word may be quoted,
  `'EOF'`, `"EOF"`, `\\EOF`; not inside quotes, a comment, `((...))` arithmetic or a `<<<` here-string), and
  ends at a line that is the word (after leading tabs with `<<-`); several on one line follow one another.
"""
from __future__ import annotations

import re
from typing import Iterator

from .frozen import frozen

PREFIX = "#IOADVISE"
BLANKS = " \t\r\v\f"
_B = re.escape(BLANKS)
_BLANKS = re.compile(f"[{_B}]*")
# one character at a time (never a nested quantifier), so a failed quote costs one scan of the line
_WORD = re.compile(f"""(?:[^{_B}"']|"[^"]*"|'[^']*')+""")
_QUOTED = re.compile(r""""([^"]*)"|'([^']*)'""")


@frozen
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
    """(1-based line number, line) of each `#IOADVISE` line of a script, here-document bodies left out."""
    pending: list[tuple[str, bool]] = []        # here-documents whose bodies come next: (word, strip tabs)
    k = 0                                       # pending[k]: the one whose body this line is in
    for n, line in enumerate(text.split("\n"), 1):
        if k < len(pending):
            word, strip = pending[k]
            if (line.lstrip("\t") if strip else line) == word:
                k += 1
        elif is_ioadvise(line):
            yield n, line
        else:
            pending, k = heredocs(line), 0


_WORD_END = " \t;&|()<>"          # what ends an unquoted shell word
_SPECIAL = re.compile(r"""[\\'"#()<]""")


def heredocs(line: str) -> list[tuple[str, bool]]:
    """The here-documents a command line opens, in order: (delimiter with its quotes removed, whether `<<-`
    strips leading tabs). One pass over the line."""
    out: list[tuple[str, bool]] = []
    if "<<" not in line:
        return out
    i, n, quote, arith = 0, len(line), "", 0
    while i < n:
        m = _SPECIAL.search(line, i)           # only these characters change anything
        if m is None:
            break
        i = m.start()
        c = line[i]
        if quote == "'" or (quote == '"' and c != "\\"):
            quote = "" if c == quote else quote
        elif c == "\\":
            i += 1                                # the next character is quoted
        elif arith:
            arith += (c == "(") - (c == ")")      # (( ... )): << is a shift there
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in _WORD_END):
            break                                 # a comment
        elif line.startswith("((", i):
            arith, i = 2, i + 1
        elif line.startswith("<<<", i):
            i += 2                                # a here-string
        elif line.startswith("<<", i):
            strip = line.startswith("<<-", i)
            i += 3 if strip else 2
            while i < n and line[i] in " \t":
                i += 1
            word, i = _word(line, i)
            if word:
                out.append((word, strip))
            continue
        i += 1
    return out


def _word(line: str, i: int) -> tuple[str, int]:
    """The shell word at `i` with its quotes and backslashes removed, and where it ends ("" for none or an
    unclosed quote)."""
    parts: list[str] = []
    n = len(line)
    while i < n and line[i] not in _WORD_END:
        c = line[i]
        if c in "'\"":
            close = line.find(c, i + 1)
            if close < 0:
                return "", n
            parts.append(line[i + 1:close])
            i = close + 1
        elif c == "\\" and i + 1 < n:
            parts.append(line[i + 1])
            i += 2
        else:
            parts.append(c)
            i += 1
    return "".join(parts), i
