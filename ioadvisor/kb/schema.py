"""KB schema and forward migrations, tracked with PRAGMA user_version. Each migration runs in a transaction."""
from __future__ import annotations

import sqlite3

from ..errors import KBError

RUN_COLUMNS = (
    "id", "source_hash", "seq", "system", "filesystem", "fs_type", "ost_count", "tier", "op", "api", "layout",
    "collective", "hints", "stripe_count", "stripe_size", "nodes", "ranks", "ranks_per_node", "transfer_size",
    "block_size", "segments", "file_size", "total_bytes", "files_per_dir", "items_per_rank", "access", "direct",
    "reps", "value", "unit", "value_given", "unit_given", "value_min", "value_max", "value_sd", "ci95_low",
    "ci95_high", "notes", "source", "citation", "command", "tool", "tool_version", "importer", "date", "job_id",
    "kind",
)

COMPARISON_COLUMNS = ("system", "filesystem", "op", "factor", "better", "worse", "condition", "source",
                      "citation", "notes", "nodes_min", "nodes_max")

MIGRATIONS: list[str] = [
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
]

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: sqlite3.Connection, path: str) -> None:
    """Apply the migrations the database lacks; refuse a database newer than this code."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise KBError(f"{path}: knowledge base schema v{version} is newer than this ioadvisor "
                      f"(v{SCHEMA_VERSION}); upgrade ioadvisor")
    for n in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # re-check under the write lock: another process may have migrated meanwhile
            if conn.execute("PRAGMA user_version").fetchone()[0] > n:
                conn.execute("ROLLBACK")
                continue
            for stmt in MIGRATIONS[n].split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {n + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
