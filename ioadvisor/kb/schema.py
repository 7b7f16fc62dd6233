"""KB schema and forward migrations, tracked with PRAGMA user_version. Each migration runs in a transaction."""
from __future__ import annotations

import os
import sqlite3

from ..errors import KBError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

COMPARISON_COLUMNS = ("system", "filesystem", "op", "factor", "better", "worse", "condition", "source",
                      "citation", "notes", "nodes_min", "nodes_max")

# The file system a run is counted under when a center is derived from runs (center.center_from_runs).
UNKNOWN_FS = "unknown"
FSNAME = "coalesce(nullif({r}.filesystem, ''), nullif({r}.fs_type, ''), 'unknown')"
_ADD = f"""
    INSERT INTO system_fs (system, fsname, fs_type, ost_count, n_runs, first_rowid)
    VALUES (NEW.system, {FSNAME.format(r="NEW")}, lower(nullif(NEW.fs_type, '')), nullif(NEW.ost_count, 0), 1,
            NEW.rowid)
    ON CONFLICT (system, fsname) DO UPDATE SET
        fs_type = coalesce(excluded.fs_type, fs_type),
        ost_count = CASE WHEN ost_count IS NULL OR excluded.ost_count > ost_count THEN excluded.ost_count
                         ELSE ost_count END,
        n_runs = n_runs + 1;"""
_DROP = f"""
    UPDATE system_fs SET n_runs = n_runs - 1, stale = 1
    WHERE system = OLD.system AND fsname = {FSNAME.format(r="OLD")};"""



def _rekey_runs(conn: sqlite3.Connection) -> None:
    """Move runs that fail today's validation (an infinite value, a stripe count of "lots": earlier versions
    let them in, and they broke docs build and export) to the `quarantine` table, with the reason; then give
    every other run its content-derived id. Copies already in twice (the old ids came from file bytes, so a
    CRLF or exported copy could be) keep both rows, as occurrences 0 and 1; `kb delete` removes one."""
    from ..errors import IOAdvisorError
    from ..model.run import content_key, run_id
    from ..model.validate import check_run
    from .rows import row_to_run
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'quarantine'").fetchone():
        conn.execute("CREATE TABLE quarantine AS SELECT * FROM runs WHERE 0")
        conn.execute("ALTER TABLE quarantine ADD COLUMN reason TEXT")
    for row in conn.execute("SELECT * FROM runs ORDER BY rowid").fetchall():
        try:
            check_run(row_to_run(row))
        except (IOAdvisorError, TypeError, ValueError) as e:
            conn.execute("INSERT INTO quarantine SELECT *, ? FROM runs WHERE id = ?", (str(e), row["id"]))
            conn.execute("DELETE FROM runs WHERE id = ?", (row["id"],))
    rows = conn.execute("SELECT * FROM runs ORDER BY rowid").fetchall()
    seen: dict[str, int] = {}
    conn.execute("CREATE TEMP TABLE rekey (old TEXT PRIMARY KEY, new TEXT)")
    for row in rows:
        key = content_key(row_to_run(row))
        n = seen.get(key, 0)
        seen[key] = n + 1
        conn.execute("INSERT INTO rekey VALUES (?, ?)", (row["id"], run_id(key, n)))
    conn.execute("UPDATE runs SET id = (SELECT new FROM rekey WHERE old = runs.id)")
    conn.execute("DROP TABLE rekey")


MIGRATIONS: list = [
    # 1: runs, their sources, and published ordinal comparisons
    """
    CREATE TABLE sources (
        hash TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        format TEXT NOT NULL,
        importer TEXT NOT NULL,
        imported_at TEXT NOT NULL,
        n_runs INTEGER NOT NULL
    );
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        source_hash TEXT NOT NULL REFERENCES sources(hash),
        seq INTEGER NOT NULL,
        system TEXT NOT NULL, filesystem TEXT, fs_type TEXT, ost_count INTEGER, tier TEXT,
        op TEXT NOT NULL, api TEXT, layout TEXT, collective INTEGER, hints TEXT,
        stripe_count INTEGER, stripe_size INTEGER,
        nodes INTEGER, ranks INTEGER, ranks_per_node INTEGER,
        transfer_size INTEGER, block_size INTEGER, segments INTEGER, file_size INTEGER, total_bytes INTEGER,
        files_per_dir INTEGER, items_per_rank INTEGER, access TEXT, direct INTEGER, reps INTEGER,
        value REAL NOT NULL CHECK (value >= 0), unit TEXT NOT NULL, value_given REAL, unit_given TEXT,
        value_min REAL, value_max REAL, value_sd REAL, ci95_low REAL, ci95_high REAL,
        notes TEXT, source TEXT, citation TEXT, command TEXT, tool TEXT, tool_version TEXT, importer TEXT,
        date TEXT, job_id TEXT, kind TEXT NOT NULL DEFAULT 'benchmark'
    );
    CREATE INDEX runs_system_op ON runs(system COLLATE NOCASE, op, api, layout);
    CREATE INDEX runs_op ON runs(op, api);
    CREATE INDEX runs_source ON runs(source_hash);
    CREATE TABLE comparisons (
        id INTEGER PRIMARY KEY,
        source_hash TEXT NOT NULL REFERENCES sources(hash),
        system TEXT NOT NULL, filesystem TEXT, op TEXT, factor TEXT NOT NULL,
        better TEXT NOT NULL, worse TEXT NOT NULL, condition TEXT,
        source TEXT, citation TEXT, notes TEXT
    );
    CREATE INDEX comparisons_system ON comparisons(system COLLATE NOCASE, factor);
    """,
    # 2: the client node counts a comparison was measured over, so advice can say when a job is outside them
    """
    ALTER TABLE comparisons ADD COLUMN nodes_min INTEGER;
    ALTER TABLE comparisons ADD COLUMN nodes_max INTEGER;
    """,
    # 3: per system and file system, what a center derived from the runs needs (type, largest OST count, run
    # count, order of first appearance), kept current by triggers so that no call has to read every run.
    # Deleting or changing a run marks its row stale; readers recompute stale rows from that system's runs.
    # The system index also holds file system and kind, so the row ids of a system's runs per (file system,
    # op), from which fits sample, come from the index alone.
    f"""
    CREATE TABLE system_fs (
        system TEXT NOT NULL,
        fsname TEXT NOT NULL,
        fs_type TEXT,
        ost_count INTEGER,
        n_runs INTEGER NOT NULL,
        first_rowid INTEGER NOT NULL,
        stale INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (system, fsname)
    );
    CREATE TRIGGER runs_system_fs_insert AFTER INSERT ON runs BEGIN {{add}} END;
    CREATE TRIGGER runs_system_fs_delete AFTER DELETE ON runs BEGIN {{drop}} END;
    CREATE TRIGGER runs_system_fs_update AFTER UPDATE OF system, filesystem, fs_type, ost_count ON runs
    BEGIN {{drop}} {{add}} END;
    DROP INDEX runs_system_op;
    CREATE INDEX runs_system_op_fs ON runs(system COLLATE NOCASE, op, api, layout, filesystem, kind);
    INSERT INTO system_fs (system, fsname, fs_type, ost_count, n_runs, first_rowid, stale)
        SELECT system, {FSNAME.format(r="runs")}, NULL, max(nullif(ost_count, 0)), count(*), min(rowid), 1
        FROM runs GROUP BY 1, 2;
    """.replace("{add}", _ADD).replace("{drop}", _DROP),
    # 4: evidence flags set at import, comma-separated (cache-sized, above-peak); NULL for a clean run
    """
    ALTER TABLE runs ADD COLUMN flags TEXT;
    """,
    # 5: runs added by KB.add_runs update the summary once per batch (a trigger per row cost 15% of an
    # import's time); deleting or changing runs still goes through the triggers
    """
    DROP TRIGGER IF EXISTS runs_system_fs_insert;
    """,
    # 6: run ids derive from the run's content, not from the file's bytes and position (see model.run.run_id)
    lambda conn: _rekey_runs(conn),
    # 7: a center's Darshan archive (ioadvisor.archive): every log scanned, by the sha256 of its bytes, with
    # whether it could be read; every path seen with the size and mtime it had (a path unchanged since is not
    # read again); per job the facts the center report ranks by, and the findings of `diagnose` on its log.
    # The production runs of a log are ordinary runs (kind 'production') whose source hash is the log's hash.
    """
    CREATE TABLE IF NOT EXISTS archive_logs (
        hash TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
        error TEXT,
        system TEXT,
        scanned_at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS archive_paths (
        path TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        hash TEXT NOT NULL REFERENCES archive_logs(hash)
    );
    CREATE INDEX IF NOT EXISTS archive_paths_hash ON archive_paths(hash);
    CREATE TABLE IF NOT EXISTS archive_jobs (
        hash TEXT PRIMARY KEY REFERENCES archive_logs(hash),
        jobid INTEGER, uid INTEGER, exe TEXT NOT NULL, app TEXT NOT NULL,
        nprocs INTEGER NOT NULL, run_time_s REAL NOT NULL, start_time INTEGER,
        io_time_per_rank_s REAL NOT NULL, bytes_read INTEGER NOT NULL, bytes_written INTEGER NOT NULL,
        layout TEXT, files INTEGER NOT NULL, partial INTEGER NOT NULL, darshan_version TEXT
    );
    CREATE INDEX IF NOT EXISTS archive_jobs_uid ON archive_jobs(uid);
    CREATE INDEX IF NOT EXISTS archive_jobs_app ON archive_jobs(app);
    CREATE TABLE IF NOT EXISTS archive_findings (
        hash TEXT NOT NULL REFERENCES archive_logs(hash),
        rule TEXT NOT NULL,
        severity TEXT NOT NULL,
        time_at_stake_s REAL,
        finding TEXT NOT NULL,
        PRIMARY KEY (hash, rule)
    );
    CREATE INDEX IF NOT EXISTS archive_findings_rule ON archive_findings(rule);
    """,
    # 8: per archived job, the node count its log states (NULL: the log does not say) and the center file system
    # its files lie under (NULL: under none of the scan's center's mounts; the job is a diagnosis, not a
    # measurement, and has no production runs)
    lambda conn: _add_columns(conn, "archive_jobs", {"nodes": "INTEGER", "filesystem": "TEXT"}),
    # 9: what advice derives from a system's runs, kept for the next process (advise.fits): its fitted models
    # and its evidence index, each stored under the signature of what it was derived from; and the row that
    # names a center's published snapshot (kb.publish; empty in every other KB). Earlier versions created these
    # tables where they were first written: a KB that has them keeps them and what they hold.
    """
    CREATE TABLE IF NOT EXISTS advise_fits (system TEXT PRIMARY KEY, signature TEXT, fits TEXT);
    CREATE TABLE IF NOT EXISTS advise_evidence (system TEXT PRIMARY KEY, signature TEXT, obs TEXT);
    CREATE TABLE IF NOT EXISTS published (snapshot TEXT NOT NULL, published_at TEXT NOT NULL, source TEXT NOT NULL);
    """,
    # 10: a published snapshot's sha256 of its own bytes (computed with this text zeroed, kb.publish), which
    # `kb stats` checks; `source` stays empty (the staff KB's path is not published)
    lambda conn: _add_columns(conn, "published", {"sha256": "TEXT"}),
]

SCHEMA_VERSION = len(MIGRATIONS)
#: the schema the migrations leave, as sqlite keeps it (sqlite_master's statements, in their order), generated into
#: schema.sql by `write_current()` (tests/test_kb_tables.py fails until a new migration's is): an
#: empty database is given it at once, in one transaction. A missing KB read as an empty one in memory (every
#: advice of a center's user without a KB of their own) took 3.5x as long stepping through each migration, every
#: DDL statement making sqlite reparse the schema.
CURRENT_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.sql")
_CURRENT_HEAD = ("-- The schema ioadvisor's migrations (kb/schema.py) leave, as sqlite keeps it, in its order; "
                 "generated by\n-- `python -c 'from ioadvisor.kb.schema import write_current; write_current()'`: "
                 "do not edit.")
_SEPARATOR = "\n--\n"       # a line no statement sqlite keeps holds


def current() -> list[str]:
    """The statements of CURRENT_FILE."""
    with open(CURRENT_FILE, encoding="utf-8") as f:
        return f.read().rstrip("\n").split(_SEPARATOR)[1:]


def stepped_schema() -> list[str]:
    """The statements the migrations leave in an empty database, applied one after another (what CURRENT_FILE
    holds)."""
    conn = sqlite3.connect(":memory:")
    try:
        for step in MIGRATIONS:
            _apply(conn, step)
        return [sql for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")]
    finally:
        conn.close()
#: the oldest schema read as it is where the KB cannot be written (a read-only file or mount, a center's
#: published snapshot): the migrations after it add only tables that a reader does without (stored fits, which
#: such a reader could not store either)
READ_AS_IS_FROM = 8


def _add_columns(conn: sqlite3.Connection, table: str, columns: dict[str, str]) -> None:
    """Add the columns `table` lacks (a KB whose version was set back runs a migration again safely)."""
    have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
    for name, kind in columns.items():
        if name not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


def _statements(script: str) -> list[str]:
    """The statements of a migration script; a trigger's body (with its own semicolons) stays whole."""
    out, buf = [], ""
    for part in script.split(";"):
        buf += part + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf.strip())
            buf = ""
    if buf.strip(" \n;"):
        out.append(buf.strip())
    return out


def rollback(conn: sqlite3.Connection) -> None:
    """End the open transaction, if SQLite has not ended it itself (a full disk or an I/O error rolls back
    at once, and a second ROLLBACK would replace the error that says so by "no transaction is active")."""
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _empty(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT count(*) FROM main.sqlite_master").fetchone()[0] == 0


def _apply(conn: sqlite3.Connection, step: Any) -> None:
    """One migration: its statements, or its function (a migration that needs Python; it must not commit)."""
    if callable(step):
        step(conn)
    else:
        for stmt in _statements(step):
            conn.execute(stmt)


def _create_current(conn: sqlite3.Connection) -> None:
    """Give an empty database today's schema (CURRENT_FILE) in one transaction; one that another process began to
    migrate meanwhile (checked again under the write lock) is left to the migrations."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] == 0 and _empty(conn):
            for stmt in current():
                conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        rollback(conn)
        raise


def migrate(conn: sqlite3.Connection, path: str, *, write: bool = True) -> None:
    """Apply the migrations the database lacks; refuse a database newer than this code. With write=False (a KB
    that cannot be written), one of READ_AS_IS_FROM or later is left as it is."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise KBError(f"{path}: knowledge base schema v{version} is newer than this ioadvisor "
                      f"(v{SCHEMA_VERSION}); upgrade ioadvisor")
    if not write and version >= READ_AS_IS_FROM:
        return
    if version == 0 and _empty(conn):
        _create_current(conn)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    for n in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # re-check under the write lock: another process may have migrated meanwhile
            if conn.execute("PRAGMA user_version").fetchone()[0] > n:
                conn.execute("ROLLBACK")
                continue
            _apply(conn, MIGRATIONS[n])
            conn.execute(f"PRAGMA user_version = {n + 1}")
            conn.execute("COMMIT")
        except BaseException:
            rollback(conn)
            raise


def write_current() -> None:
    """(Re)generate CURRENT_FILE from the migrations."""
    with open(CURRENT_FILE, "w", encoding="utf-8") as f:
        f.write(_SEPARATOR.join([_CURRENT_HEAD, *stepped_schema()]) + "\n")
