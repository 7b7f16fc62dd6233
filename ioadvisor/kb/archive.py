"""A center's Darshan archive as the KB holds it (schema migrations 7 and 8: `archive_logs`, `archive_paths`,
`archive_jobs`, `archive_findings`): what a scan asks of it, what it adds in its transaction, and what the center
report reads. Each function takes the open KB and returns plain values; the production runs of a log are ordinary
runs, added through the store (`KB.add_source`)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence

#: the columns of archive_jobs after its key (the log's hash), as a scan stores a job's facts
JOB_COLUMNS = ("jobid", "uid", "exe", "app", "nprocs", "run_time_s", "start_time", "io_time_per_rank_s",
               "bytes_read", "bytes_written", "layout", "files", "partial", "darshan_version", "nodes", "filesystem")


def path_seen(kb: Any, key: str | bytes) -> tuple[int, int, str] | None:
    """(size, mtime_ns, status of its log) of the path stored under `key`, None for a path not seen before."""
    row = kb.conn.execute("SELECT p.size, p.mtime_ns, l.status FROM archive_paths p JOIN archive_logs l "
                          "ON l.hash = p.hash WHERE p.path = ?", (key,)).fetchone()
    return None if row is None else (row[0], row[1], row[2])


def log_status(kb: Any, digest: str) -> str | None:
    """'ok' or 'failed' for a log already scanned, None for a new one."""
    row = kb.conn.execute("SELECT status FROM archive_logs WHERE hash = ?", (digest,)).fetchone()
    return row[0] if row else None


@contextmanager
def transaction(kb: Any) -> Iterator[None]:
    """One write transaction (taken at once: BEGIN IMMEDIATE), committed when the block ends, else rolled back
    (`schema.rollback`: not a second time where sqlite rolled it back itself)."""
    from .schema import rollback
    conn = kb.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def savepoint(kb: Any) -> None:
    """Mark where one log's additions start, inside the open transaction."""
    kb.conn.execute("SAVEPOINT one_log")


def rollback_to_savepoint(kb: Any) -> None:
    """Undo what was added since `savepoint` (the savepoint stays, to be released)."""
    kb.conn.execute("ROLLBACK TO one_log")


def release_savepoint(kb: Any) -> None:
    kb.conn.execute("RELEASE one_log")


def drop_log(kb: Any, digest: str) -> None:
    """Remove a log's row (a failed log whose retry is stored in its place)."""
    kb.conn.execute("DELETE FROM archive_logs WHERE hash = ?", (digest,))


def add_log(kb: Any, digest: str, path: str, size: int, status: str, error: str | None, system: str,
            scanned_at: str) -> None:
    kb.conn.execute("INSERT INTO archive_logs VALUES (?,?,?,?,?,?,?)",
                    (digest, path, size, status, error, system, scanned_at))


_ADD_JOB = (f"INSERT INTO archive_jobs (hash, {', '.join(JOB_COLUMNS)}) "
            f"VALUES ({', '.join('?' * (len(JOB_COLUMNS) + 1))})")


def add_job(kb: Any, digest: str, job: Mapping[str, Any]) -> None:
    """A log's job facts: `job`'s values of JOB_COLUMNS (a missing one is NULL)."""
    kb.conn.execute(_ADD_JOB, [digest, *[job.get(c) for c in JOB_COLUMNS]])


def add_findings(kb: Any, rows: Sequence[tuple[str, str, str, float | None, str]]) -> None:
    """Findings as (log hash, rule, severity, time at stake in s, the finding as JSON text)."""
    kb.conn.executemany("INSERT INTO archive_findings VALUES (?,?,?,?,?)", rows)


def add_path(kb: Any, key: str | bytes, size: int, mtime_ns: int, digest: str) -> None:
    """Record where a log was seen, with the size and mtime it had (replacing what the path had before)."""
    kb.conn.execute("INSERT OR REPLACE INTO archive_paths VALUES (?,?,?,?)", (key, size, mtime_ns, digest))


def has_jobs(kb: Any) -> bool:
    """Whether the KB holds any scanned job (the archive page of the guide is written only then)."""
    return kb.conn.execute("SELECT 1 FROM main.archive_jobs LIMIT 1").fetchone() is not None


def scanned_systems(kb: Any) -> list[str]:
    """The systems the logs were scanned for (as each scan named it), each once."""
    return [name for (name,) in kb.conn.execute("SELECT DISTINCT system FROM main.archive_logs "
                                                "WHERE system IS NOT NULL")]


def _where(names: Sequence[str]) -> tuple[str, list[str]]:
    """The condition on a log `l` of being scanned for one of `names` (lower case), none for no names."""
    if not names:
        return "", []
    return f"WHERE lower(l.system) IN ({','.join('?' * len(names))})", list(names)


def log_counts(kb: Any, names: Sequence[str], empty_hash: str) -> tuple[dict[str, int], int]:
    """(logs by status, leaving out the one under `empty_hash`; the paths of empty files, each a failure of its
    own) of the logs scanned for `names` (lower case; every log for none)."""
    where, args = _where(names)
    also = f"{where} {'AND' if where else 'WHERE'}"
    conn = kb.conn
    logs = dict(conn.execute(f"SELECT l.status, count(*) FROM main.archive_logs l {also} l.hash != ? "
                             "GROUP BY l.status", (*args, empty_hash)).fetchall())
    empty = conn.execute(f"SELECT count(*) FROM main.archive_paths p JOIN main.archive_logs l ON l.hash = p.hash "
                         f"{also} p.hash = ?", (*args, empty_hash)).fetchone()[0]
    return logs, empty


def jobs(kb: Any, names: Sequence[str]) -> Iterator[dict[str, Any]]:
    """Each archived job of the logs scanned for `names` (lower case; every log for none), streamed: its
    archive_jobs columns with its log's `path` and `system`."""
    where, args = _where(names)
    cur = kb.conn.cursor()
    cur.row_factory = None
    cur.execute(f"SELECT j.*, l.path, l.system FROM main.archive_jobs j JOIN main.archive_logs l "
                f"ON l.hash = j.hash {where}", args)
    columns = [d[0] for d in cur.description]
    for t in cur:
        yield dict(zip(columns, t))


def findings(kb: Any, names: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(log hash, the finding as JSON text) of each finding of the logs scanned for `names` (as `jobs`)."""
    where, args = _where(names)
    cur = kb.conn.cursor()
    cur.row_factory = None
    yield from cur.execute(f"SELECT f.hash, f.finding FROM main.archive_findings f JOIN main.archive_logs l "
                           f"ON l.hash = f.hash {where}", args)


__all__ = ["JOB_COLUMNS", "add_findings", "add_job", "add_log", "add_path", "drop_log", "findings", "has_jobs",
           "jobs", "log_counts", "log_status", "path_seen", "release_savepoint", "rollback_to_savepoint",
           "savepoint", "scanned_systems", "transaction"]
