"""A run and its `runs` row: the table's columns (as the migrations in schema.py leave them) and the
conversions both ways, which the store, the CSV fast path and the migrations share."""
from __future__ import annotations

import json
import operator
import sqlite3

from ..model.run import PROV_FIELDS, RUN_FIELDS, Provenance, Run, content_key, run_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

#: the `runs` table's columns, in order
RUN_COLUMNS = (
    "id", "source_hash", "seq", "system", "filesystem", "fs_type", "ost_count", "tier", "op", "api", "layout",
    "collective", "hints", "stripe_count", "stripe_size", "nodes", "ranks", "ranks_per_node", "transfer_size",
    "block_size", "segments", "file_size", "total_bytes", "files_per_dir", "items_per_rank", "access", "direct",
    "reps", "value", "unit", "value_given", "unit_given", "value_min", "value_max", "value_sd", "ci95_low",
    "ci95_high", "notes", "source", "citation", "command", "tool", "tool_version", "importer", "date", "job_id",
    "kind", "flags",
)


def content_ids(runs: Iterable[Run]) -> list[str]:
    """Content-derived ids: the n-th run with the same content key gets occurrence n."""
    seen: dict[str, int] = {}
    out = []
    for r in runs:
        key = content_key(r)
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append(run_id(key, n))
    return out


_PROV_COLS = tuple(f for f in PROV_FIELDS if f in RUN_COLUMNS and f != "source_hash")
assert set(_PROV_COLS) | {"source_hash"} == set(PROV_FIELDS), "every Provenance field needs a runs column"
_RUN_ATTRS = tuple(c for c in RUN_COLUMNS if c not in PROV_FIELDS and c not in ("source_hash", "seq", "id"))
assert set(_RUN_ATTRS) == set(RUN_FIELDS), "every Run field needs a runs column"

# A Run to its `runs` row: attribute getters and one reordering, all in C (imports of a million runs spend
# their time here otherwise).
_GET_RUN = operator.attrgetter(*_RUN_ATTRS)
_GET_PROV = operator.attrgetter(*_PROV_COLS)
_ROW_NAMES = ("id", "source_hash", "seq") + _RUN_ATTRS + _PROV_COLS + ("",)
_TO_ROW = operator.itemgetter(*(_ROW_NAMES.index(c) if c in _ROW_NAMES else len(_ROW_NAMES) - 1
                                for c in RUN_COLUMNS))
_HINTS, _COLL, _DIRECT, _FLAGS = (_ROW_NAMES.index(c) for c in ("hints", "collective", "direct", "flags"))


def run_row(run: Run, rid: str | None, source_hash: str, seq: int) -> tuple:
    v = [rid, source_hash, seq, *_GET_RUN(run), *_GET_PROV(run.provenance), None]
    h = v[_HINTS]
    v[_HINTS] = json.dumps(dict(sorted(h.items()))) if h else None
    for i in (_COLL, _DIRECT):
        if v[i] is not None:
            v[i] = int(v[i])
    v[_FLAGS] = ",".join(v[_FLAGS]) if v[_FLAGS] else None
    return _TO_ROW(v)


#: what an import stores of a run besides its id, source hash and position: the `runs` columns after those
VALUES = RUN_COLUMNS[3:]
assert RUN_COLUMNS[:3] == ("id", "source_hash", "seq")
V_SYSTEM, V_FLAGS = VALUES.index("system"), VALUES.index("flags")
assert V_FLAGS == len(VALUES) - 1


def keyed_row(run: Run) -> tuple[str, tuple]:
    """A run as an import stores it: (its content key, its VALUES)."""
    return content_key(run), run_row(run, None, "", 0)[3:]


def values_run(values: tuple) -> Run:
    """The Run of stored VALUES (for the evidence flags)."""
    return row_to_run({**dict(zip(VALUES, values)), "id": None, "source_hash": ""})


def row_to_run(row: sqlite3.Row | dict) -> Run:
    """A `runs` row back to a Run."""
    if isinstance(row, sqlite3.Row):
        # a Row finds a column by name by comparing it with each column's in turn: a dict of the row is made once
        row = dict(zip(row.keys(), row))
    kw = {c: row[c] for c in _RUN_ATTRS}
    hints = kw["hints"]
    kw["hints"] = json.loads(hints) if hints else {}
    for b in ("collective", "direct"):
        if kw[b] is not None:
            kw[b] = bool(kw[b])
    kw["flags"] = tuple(kw["flags"].split(",")) if kw["flags"] else ()
    # Rows come from our own schema, so every field is present and typed: fill the frozen instances' dicts
    # directly instead of running the generated __init__ (about 5x faster on large result sets).
    prov = object.__new__(Provenance)
    prov.__dict__.update({f: row[f] for f in _PROV_COLS}, source_hash=row["source_hash"] or "")
    run = object.__new__(Run)
    run.__dict__.update(kw, provenance=prov, id=row["id"])
    return run


def record(row: dict[str, Any]) -> dict[str, Any]:
    """A `runs` row as its documented JSON form, built directly (no dataclass round trip)."""
    out = {c: row[c] for c in _RUN_ATTRS}
    out["hints"] = json.loads(out["hints"]) if out["hints"] else {}
    for b in ("collective", "direct"):
        if out[b] is not None:
            out[b] = bool(out[b])
    out["flags"] = out["flags"].split(",") if out["flags"] else []
    out["provenance"] = {f: row[f] for f in PROV_FIELDS}
    out["id"], out["origin"] = row["id"], row["origin"]
    return out
