"""Queries the layers above the KB ask of an open `KB` that its store has no method for: the SQL stays under
kb/, next to the schema it reads (kb/schema.py), so what a KB or a published snapshot must hold is declared in
one place. Each function takes the open KB and returns plain values."""
from __future__ import annotations

import json
from typing import Any, Iterator

#: the production runs an archive scan made of a center's Darshan archive (their source is a log of
#: `main.archive_logs`; never a measurement: the guide's tables and plots and the targets of `bench plan` leave
#: them out), as an SQL condition on a row of all_runs
ARCHIVE_RUN_SQL = "(kind = 'production' AND source_hash IN (SELECT hash FROM main.archive_logs))"


def system_summaries(kb: Any) -> Iterator[tuple[str, str, int, list[str], list[str]]]:
    """(system, origin, runs, distinct sources, distinct file systems) per system and origin (user or reference)
    of every run the KB reads; a source or file system that is NULL is left out of its list."""
    # JSON arrays, not group_concat: a name may hold the comma group_concat would separate with
    q = ("SELECT system, origin, count(*), json_group_array(DISTINCT source), json_group_array(DISTINCT filesystem) "
         "FROM all_runs GROUP BY system, origin")
    for system, origin, n, sources, fss in kb.conn.execute(q):
        yield (system, origin, n, [x for x in json.loads(sources) if x is not None],
               [x for x in json.loads(fss) if x is not None])


def archived_sources(kb: Any, system: str) -> set[str]:
    """The source hashes of the production runs of `system` (any case) that an archive scan made, not a job's
    own record (`jobs collect`, `diagnose --record`, `kb import`)."""
    return {r[0] for r in kb.conn.execute(f"SELECT DISTINCT source_hash FROM all_runs WHERE system = ? "
                                          f"COLLATE NOCASE AND {ARCHIVE_RUN_SQL}", (system,))}


def system_sizes(kb: Any, db: str, system: str | None = None) -> list[tuple[str, int]]:
    """(system as stored, runs) of every system of `db` with runs, or of `system` only (any case), from the
    per-system summary the KB keeps current as runs change (not a count over every run)."""
    sql, args = f"SELECT system, sum(n_runs) FROM {db}.system_fs", []
    if system is not None:
        sql, args = sql + " WHERE system = ? COLLATE NOCASE", [system]
    return [(name, n) for name, n in kb.conn.execute(sql + " GROUP BY system HAVING sum(n_runs) > 0", args)]


__all__ = ["ARCHIVE_RUN_SQL", "archived_sources", "system_sizes", "system_summaries"]
