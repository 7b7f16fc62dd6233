"""The shape of a TOML file, declared once per file kind and checked one way.

The center file, the workload file, the thresholds file and the sweep file each declare their shape as a
`Table`: the keys it may hold, each with its type (and, for a table or an array of tables, the keys inside), and
which keys must be there. `first_problem` walks a parsed document against that declaration and returns the first
`Problem` (an unknown key, a missing key, a value of the wrong type), naming the key by its path, so each file
kind words it as its users know it; `key_line` finds the line of that path in the document's text. What a value
means (a size, a bandwidth, a flavour) is read by the kind's own code once the shape is known to be right.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

from .frozen import frozen

#: the Python types a TOML value of each declared type may have (a bool is never an int or a number here)
TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "bool": (bool,), "number": (int, float), "table": (dict,), "tables": (list,),
    "list": (list,), "scalar": (str, int, float, bool), "text": (str, int), "any": (object,),
}

Path = tuple[str | int, ...]


@frozen
class Field:
    """One key: its name, its type (a key of TYPES), whether it must be present and not empty, and for a
    `table` or `tables` (array of tables) the shape of what is inside."""

    name: str
    type: str = "any"
    required: bool = False
    table: "Table | None" = None


@frozen
class Table:
    """The keys a table may hold. `other`: the shape of every key not listed (None: such a key is unknown);
    `dashes`: a - in a key is read as _ (workload keys may be written either way)."""

    fields: tuple[Field, ...] = ()
    other: Field | None = None
    dashes: bool = False

    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, key: str) -> Field | None:
        name = key.replace("-", "_") if self.dashes else key
        return next((f for f in self.fields if f.name == name), None) or (
            None if self.other is None else Field(key, self.other.type, table=self.other.table))


@frozen
class Problem:
    """What is wrong, where. code: `unknown` (keys: every unknown key of the table, sorted; allowed: the
    table's keys), `missing` (path ends in the missing key), `type` (expected: the declared type, value: what
    was found)."""

    code: str
    path: Path
    keys: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    expected: str = ""
    value: Any = None


def dotted(path: Path) -> str:
    """A key path as users read it: `filesystems[1].ost_count`, `base.api`."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _is(value: Any, type_: str) -> bool:
    if type_ in ("int", "number", "text") and isinstance(value, bool):
        return False
    if type_ == "tables":
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    return isinstance(value, TYPES[type_])


def problems(doc: dict[str, Any], table: Table, path: Path = ()) -> Iterator[Problem]:
    """Every problem of `doc` against `table`, a table's own (unknown keys, then missing ones, then types in
    the document's order) before those of the tables inside it."""
    unknown = sorted(k for k in doc if table.field(k) is None)
    if unknown:
        yield Problem("unknown", path, keys=tuple(unknown), allowed=table.names())
    for f in table.fields:
        if f.required and doc.get(f.name) in (None, ""):
            yield Problem("missing", path + (f.name,))
    for key, value in doc.items():
        f = table.field(key)
        if f is None:
            continue
        if not _is(value, f.type):
            yield Problem("type", path + (key,), expected=f.type, value=value)
            continue
        if f.table is not None and f.type == "table":
            yield from problems(value, f.table, path + (key,))
        elif f.table is not None and f.type == "tables":
            for i, item in enumerate(value):
                yield from problems(item, f.table, path + (key, i))


def first_problem(doc: dict[str, Any], table: Table) -> Problem | None:
    """The first of `problems`, or None when the document has the declared shape."""
    return next(problems(doc, table), None)


_HEADER = re.compile(r"^\s*\[")


def key_line(text: str, path: Path) -> int | None:
    """The 1-based line of the key at `path` (("mpi",), ("filesystems", 1, "ost_count"), ("workload", "nodes"))
    in a document's TOML text: a top-level key before the first table header, a key of a table or of the n-th
    table of an array under its header (the header's line when the key is not written there), a top-level
    table at its header; None when not found. Keys are matched as written (`key =`), not quoted or dotted."""
    lines = text.split("\n")        # TOML lines end at LF (or CRLF) only
    lo, hi, fallback = 0, next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), len(lines)), None
    rest = list(path)
    if len(rest) >= 2:
        name = str(rest.pop(0))
        n = rest.pop(0) if isinstance(rest[0], int) else None
        pattern = (rf"^\s*\[\[\s*{re.escape(name)}\s*\]\]" if n is not None else rf"^\s*\[\s*{re.escape(name)}\s*\]")
        heads = [i for i, ln in enumerate(lines) if re.match(pattern, ln)]
        if len(heads) <= (n or 0):
            return None
        lo = heads[n or 0] + 1
        fallback = lo
        hi = next((i for i in range(lo, len(lines)) if _HEADER.match(lines[i])), len(lines))
    if not rest:
        return fallback
    key = str(rest[0])
    for i in range(lo, hi):
        if re.match(rf"^\s*{re.escape(key)}\s*=", lines[i]):
            return i + 1
    if len(path) == 1:              # a top-level table: its (first) header, `[key]` or `[[key]]`
        return next((i + 1 for i, ln in enumerate(lines) if re.match(rf"^\s*\[\[?\s*{re.escape(key)}\s*\]", ln)),
                    fallback)
    return fallback
