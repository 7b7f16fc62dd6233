"""What advice derives from a system's runs, as the KB holds it (schema migration 9: `advise_fits` and
`advise_evidence`, each row a system's derived value under the signature of what it was derived from), and the
reads of the runs it is derived from: what a signature rests on, the row ids a fit or a validation samples from
(streamed, a few bytes a run), and the chosen runs read whole. `db` is "main" (the user's KB) or "ref" (the layer
below: the shipped reference data or a center's published snapshot)."""
from __future__ import annotations

import sqlite3

from ..model.run import Run
from .rows import row_to_run

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator, Sequence

#: what is stored per system: (table, column of the value)
DERIVED = {"fits": ("advise_fits", "fits"), "evidence": ("advise_evidence", "obs")}
#: row ids per query when runs are read by row id
ROWID_CHUNK = 500


def fit_basis(kb: Any, system: str) -> tuple[int | None, int, list[list]]:
    """What a system's fits rest on in the user's KB: its largest run rowid (rowids only grow), its number of
    sources, and the system's (file system, run count) pairs from the summary the KB keeps current."""
    row = kb.conn.execute("SELECT max(rowid) FROM main.runs").fetchone()
    src = kb.conn.execute("SELECT count(*) FROM main.sources").fetchone()
    counts = kb.conn.execute("SELECT fsname, n_runs FROM main.system_fs WHERE system = ? COLLATE NOCASE "
                             "ORDER BY fsname, system", (system,)).fetchall()
    return row[0], src[0], [list(c) for c in counts]


def _tuples(kb: Any, sql: str, args: Sequence[Any]) -> Iterator[tuple]:
    """The rows of `sql` as plain tuples, streamed from the KB (not fetched whole)."""
    cur = kb.conn.cursor()
    cur.row_factory = None
    yield from cur.execute(sql, args)


def fit_rowids(kb: Any, db: str, system: str) -> Iterator[tuple[str | None, str, int]]:
    """(file system, op, rowid) of every run of `system` (any case) in `db` that a fit may rest on, from the
    system index alone: production observations (Darshan, job records) are lower bounds of what the job could
    do, and runs flagged at import (cache-sized, above the rated peak) measured memory, not the file system."""
    return _tuples(kb, f"SELECT filesystem, op, rowid FROM {db}.runs WHERE system = ? "
                       "COLLATE NOCASE AND kind IS NOT 'production' AND flags IS NULL", (system,))


def validation_rowids(kb: Any, db: str, system: str) -> Iterator[tuple[str | None, str, int]]:
    """(file system, op, rowid) of every run but production jobs' of the system named exactly `system` in `db`,
    in rowid order, from the system index alone (the name in any case, then as stored)."""
    return _tuples(kb, f"SELECT filesystem, op, rowid FROM {db}.runs WHERE system = ? COLLATE NOCASE AND system = ? "
                       "AND kind IS NOT 'production' ORDER BY rowid", (system, system))


def runs_at_rowids(kb: Any, db: str, rowids: Sequence[int]) -> Iterator[tuple[int, Run]]:
    """(rowid, run) of the runs of `db` at these row ids, ROWID_CHUNK row ids a query."""
    for i in range(0, len(rowids), ROWID_CHUNK):
        part = rowids[i:i + ROWID_CHUNK]
        for r in kb.conn.execute(f"SELECT rowid AS _rowid, * FROM {db}.runs "
                                 f"WHERE rowid IN ({','.join('?' * len(part))})", part):
            yield r["_rowid"], row_to_run(r)


def runs_by_ids(kb: Any, ids: list[str]) -> dict[str, Run]:
    """The runs with these ids (for evidence), in one query."""
    if not ids:
        return {}
    q = ",".join("?" * len(ids))
    return {r["id"]: row_to_run(r) for r in kb.conn.execute(f"SELECT * FROM all_runs WHERE id IN ({q})", ids)}


def load_derived(kb: Any, kind: str, system: str, db: str = "main") -> tuple[str, str] | None:
    """(signature, value) as stored for `system` (`kind` one of DERIVED, both JSON text), None where none is or
    the table cannot be read (a KB of a schema that read-only use leaves as it is has none)."""
    table, column = DERIVED[kind]
    try:
        row = kb.conn.execute(f"SELECT signature, {column} FROM {db}.{table} WHERE system = ?",
                              (system,)).fetchone()
    except sqlite3.Error:
        return None
    return (row[0], row[1]) if row else None


def store_derived(kb: Any, kind: str, system: str, signature: str, value: str, db: str = "main") -> None:
    """Store `system`'s derived value under its signature (both JSON text), replacing the one before; nothing on a
    KB that cannot be written (read-only: the caller's in-process cache still serves)."""
    table, _ = DERIVED[kind]
    try:
        kb.conn.execute(f"INSERT OR REPLACE INTO {db}.{table} VALUES (?,?,?)", (system, signature, value))
    except sqlite3.Error:
        pass


__all__ = ["DERIVED", "fit_basis", "fit_rowids", "load_derived", "runs_at_rowids", "runs_by_ids", "store_derived",
           "validation_rowids"]
