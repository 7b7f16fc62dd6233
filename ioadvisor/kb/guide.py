"""What the center guide (docs.collect) reads of the KB, as plain tuples: which systems have measurements, their
sizes, one system's measured runs copied once into a temporary table (`SystemTable`) that sqlite then groups and
summarises, and the runs a provenance page lists."""
from __future__ import annotations

import signal
import sqlite3
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")

#: a run the guide shows as a measurement of a file system: not a production job's bytes / run time (a lower
#: bound, whatever road it came by: archive scan, `kb import` or `diagnose --record` of a log, a job record)
MEASUREMENT_SQL = "kind IS NOT 'production'"
_FS_LABEL = "coalesce(nullif(filesystem, ''), '-')"
_ORDER = "ORDER BY origin DESC, source_hash, seq"
#: row ids or run ids per query where runs are read by id
ID_CHUNK = 500


def _tuples(conn: sqlite3.Connection) -> sqlite3.Cursor:
    cur = conn.cursor()
    cur.row_factory = None                        # plain tuples: much faster than sqlite3.Row for many runs
    return cur


def system_runs(kb: Any, names: Sequence[str], columns: Sequence[str]) -> list[tuple]:
    """(lower-case system, *columns) of every run of the named systems (any case), in one pass over the KB, in
    the guide's order (the user's runs first, then by source and place in it)."""
    cur = _tuples(kb.conn)
    marks = ",".join("?" * len(names)) or "NULL"
    cur.execute(f"SELECT lower(system), {', '.join(columns)} FROM all_runs WHERE lower(system) IN ({marks}) "
                "ORDER BY origin DESC, source_hash, seq", [n.lower() for n in names])
    return cur.fetchall()


def has_measurements(kb: Any, system: str) -> bool:
    """Whether `system` (any case) has a run that is not a production job's."""
    return kb.conn.execute(f"SELECT 1 FROM all_runs WHERE system = ? COLLATE NOCASE AND {MEASUREMENT_SQL} LIMIT 1",
                           (system,)).fetchone() is not None


def runs_per_fs(kb: Any, db: str) -> list[tuple[str, str, int]]:
    """(lower-case system, file system, runs) of `db` from the per-system summary, as far as it can be read (an
    empty list where it cannot: a KB without the summary). The summary names a run without a file system by its
    file system type, and counts production runs too: sizes to plan by, not the guide's counts."""
    try:
        return [tuple(r) for r in kb.conn.execute(f"SELECT lower(system), fsname, n_runs FROM {db}.system_fs")]
    except sqlite3.Error:
        return []


def runs_by_id(kb: Any, ids: Sequence[str], columns: Sequence[str]) -> Iterator[tuple]:
    """`columns` (the first of them the id) of the runs with these ids, ID_CHUNK ids a query."""
    cur = _tuples(kb.conn)
    for i in range(0, len(ids), ID_CHUNK):
        chunk = ids[i:i + ID_CHUNK]
        q = f"SELECT {', '.join(columns)} FROM all_runs WHERE id IN ({','.join('?' * len(chunk))})"
        yield from cur.execute(q, chunk)


class SystemTable:
    """One system's measured runs (`columns` of them, with `fs`: the file system's name, "-" for none), or those
    of some of its file systems (`only`, `but`), copied into the temporary table temp.doc_runs once; what the
    guide shows of them is then read from it per file system. `close` drops it."""

    # a system with more than this share of the KB's runs is copied by one sequential pass over the runs table:
    # following the system index to each of its runs costs several times more per run than reading every run
    SCAN_SHARE = 1 / 8

    def __init__(self, kb: Any, name: str, columns: Sequence[str], only: Sequence[str] | None = None,
                 but: Sequence[str] = ()):
        self.conn = kb.conn
        self.columns = ", ".join(columns)
        sizes = [r[0] for r in self.conn.execute(
            "SELECT sum(n_runs) FROM main.system_fs UNION ALL SELECT sum(n_runs) FROM main.system_fs "
            "WHERE system = ? COLLATE NOCASE", (name,))]
        scan = bool(sizes[0]) and (sizes[1] or 0) > sizes[0] * self.SCAN_SHARE
        self.conn.execute("DROP TABLE IF EXISTS temp.doc_runs")
        # `+system` keeps sqlite off the system index (the same rows either way); production runs (jobs' bytes /
        # run time, whether from an archive scan, `kb import`, `diagnose --record` or job records) are no
        # measurements of the file systems: left out of every table and plot. A part of a large system read
        # beside its others: the runs of the file systems `only` names, or of those `but` does not name
        fs = (f" AND {_FS_LABEL} IN ({','.join('?' * len(only))})" if only is not None else "") + (
            f" AND {_FS_LABEL} NOT IN ({','.join('?' * len(but))})" if but else "")
        self.conn.execute(f"CREATE TEMP TABLE doc_runs AS SELECT {_FS_LABEL} AS fs, {self.columns} FROM all_runs "
                          f"WHERE {'+' if scan else ''}system = ? COLLATE NOCASE AND {MEASUREMENT_SQL}{fs}",
                          (name, *(only or ()), *but))
        #: runs per file system
        self.counts: dict[str, int] = dict(self.conn.execute("SELECT fs, count(*) FROM temp.doc_runs GROUP BY fs"))

    def _query(self, sql: str, args: tuple = ()) -> Iterator[tuple]:
        return _tuples(self.conn).execute(sql, args)

    def runs(self, fs: str, limit: int | None = None) -> Iterator[tuple]:
        """The columns of the runs on `fs` in the guide's order, the first `limit` of them where given (streamed)."""
        sql = f"SELECT {self.columns} FROM temp.doc_runs WHERE fs = ? {_ORDER}"
        return self._query(sql + (f" LIMIT {int(limit)}" if limit is not None else ""), (fs,))

    def ids(self, fs: str, limit: int) -> list[str]:
        """The ids of the first `limit` runs on `fs` in the guide's order."""
        return [t[0] for t in self._query(f"SELECT id FROM temp.doc_runs WHERE fs = ? {_ORDER} LIMIT {int(limit)}",
                                          (fs,))]

    def ci_runs(self) -> Iterator[tuple]:
        """The columns of the runs that state a 95% confidence interval, in the guide's order (streamed)."""
        return self._query(f"SELECT {self.columns} FROM temp.doc_runs WHERE ci95_low IS NOT NULL "
                           f"AND ci95_high IS NOT NULL {_ORDER}")

    def group_medians(self, fs: str, group: Sequence[str], row: Sequence[str], aggregate: type,
                      convert: Callable[[tuple], T]) -> list[T]:
        """Per group of the runs on `fs` with equal `group` columns, `convert` of (what `aggregate` finishes with,
        a rowid, *that run's `row` columns). `aggregate` is a sqlite aggregate class whose `step` takes (value,
        id, rowid, flags) of each run of a group; it runs with signals held (`signals_held`)."""
        self.conn.create_aggregate("doc_group_values", 4, aggregate)
        try:
            with signals_held(self.conn):
                return [convert(t) for t in self._query(
                    f"SELECT g.med, {', '.join('d.' + c for c in row)} FROM (SELECT doc_group_values(value, "
                    f"id, rowid, flags) AS med FROM temp.doc_runs WHERE fs = ? GROUP BY {', '.join(group)}) AS g "
                    "JOIN temp.doc_runs AS d ON d.rowid = g.med", (fs,))]
        finally:
            self.conn.create_aggregate("doc_group_values", 4, None)

    def run(self, rowid: int, row: Sequence[str]) -> tuple:
        """The `row` columns of one run, by its rowid in the table."""
        return next(iter(self._query(f"SELECT {', '.join(row)} FROM temp.doc_runs WHERE rowid = ?", (rowid,))))

    def close(self) -> None:
        self.conn.execute("DROP TABLE IF EXISTS temp.doc_runs")


HELD_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextmanager
def signals_held(conn: sqlite3.Connection) -> Iterator[None]:
    """Run a query whose Python callbacks (an aggregate) must not be where a signal's exception is raised: sqlite
    turns any exception of a callback into "user-defined aggregate's ... raised error", so a Ctrl-C became that
    message and exit 1. While the query runs, SIGINT, SIGTERM and SIGHUP (those with a Python handler) are only
    noted, and sqlite's progress handler stops the query at once when one is; then the signal is handed to the
    handler it was meant for, which raises as it would have (KeyboardInterrupt: exit 128+n). In a thread other
    than the main one no handler runs anyway, and nothing is changed."""
    held: list[int] = []
    saved: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in HELD_SIGNALS:
            handler = signal.getsignal(signum)
            if callable(handler):
                saved[signum] = signal.signal(signum, lambda n, _frame: held.append(n))
    conn.set_progress_handler(lambda: 1 if held else 0, 10_000)
    try:
        yield
    except sqlite3.OperationalError:
        if not held:
            raise                               # not the query stopped for a signal: a real error
    finally:
        conn.set_progress_handler(None, 0)
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        if held:
            saved[held[0]](held[0], None)       # raises (KeyboardInterrupt, or the CLI's own exception)
            raise KeyboardInterrupt(signal.Signals(held[0]).name)


__all__ = ["HELD_SIGNALS", "MEASUREMENT_SQL", "SystemTable", "has_measurements", "runs_by_id", "runs_per_fs",
           "signals_held", "system_runs"]
