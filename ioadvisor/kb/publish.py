"""A center's knowledge base published for its users: one sqlite file on a shared (often read-only) file system.

Staff import into their working KB as usual; `publish` writes a snapshot of it, merged with the shipped
reference data, as one self-contained file. The snapshot is built beside the target under a temporary name, in
rollback-journal mode (never WAL, which needs shared memory on one host and does not work over a network file
system), made readable by everyone, flushed to disk and renamed over the target in one step. A process that
has the old file open keeps reading the old snapshot; one that opens the path after the rename reads the new
one; none ever sees a half-written file. Users' processes attach it read-only and immutable (store.KB.open),
so they create no file beside it and take no lock on it, and their own KB stays the layer on top.

What is published: the reference runs and comparisons and the staff KB's runs, sources and comparisons, a
production run (a user's job) without the job's id, path, host or command line. Not published: the staff KB's
Darshan archive tables (users' job names and ids), its quarantine and stored fits, and its own path. The file
holds the sha256 of its bytes (kb.integrity). The target is never a symbolic link (one planted in the shared
directory would have the snapshot written wherever it points).
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from ..errors import KBError, UsageError
from .integrity import seal
from .reference import snapshot_id

DEFAULT_NAME = "kb.sqlite"
# the tables a snapshot carries, in the order they are filled (sources before the runs that name them)
TABLES = ("sources", "runs", "comparisons")


def _is_snapshot(path: Path) -> bool:
    """Whether `path` is a published KB (read without changing it: no journal mode switch, no migration)."""
    try:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        return snapshot_id(conn, "main") is not None
    finally:
        conn.close()


def _no_link(path: Path) -> None:
    """UsageError if `path` is a symbolic link: a link planted in the shared directory (to a directory or file
    elsewhere) must not make a publication write there."""
    if path.is_symlink():
        raise UsageError(f"{path}: is a symbolic link (to {os.readlink(path)}); kb publish never writes through "
                         "one: name the file or directory it points to, or remove the link")


def target_path(target: Path) -> Path:
    """The file to write: `target`, or `kb.sqlite` in it when it is a directory; neither may be a symbolic link
    (the directories above them may)."""
    _no_link(target)
    out = target / DEFAULT_NAME if target.is_dir() else target
    _no_link(out)
    return out


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    # a comparison's integer id is its rowid, numbered per KB: the snapshot numbers them afresh
    return [r[1] for r in conn.execute(f"PRAGMA main.table_info({table})") if not (table == "comparisons"
                                                                                    and r[1] == "id")]


# What a production run (a user's job: a Darshan log of `archive scan` or `diagnose --import`, a record of `jobs
# collect`) publishes: its measurement and settings, never the job's id, log or record path, host or command line.
# Each identifying column is replaced in the SELECT that copies the run, so the original text is never written into
# the snapshot file (an UPDATE afterwards would leave it in the file's free pages).
_PRODUCTION = "kind = 'production'"
_PRODUCTION_NOTES = {
    "darshan/1": "a production job's Darshan log: bytes moved / run time, a lower bound of the I/O bandwidth",
    "jobrecord/1": "a production job's record: bytes staged out / wall time, a lower bound of the bandwidth the "
                   "job wrote with",
}
_STRIPPED = {
    "notes": "CASE importer " + " ".join(f"WHEN '{k}' THEN '{v.replace(chr(39), chr(39) * 2)}'"
                                          for k, v in _PRODUCTION_NOTES.items())
             + " ELSE 'a production job''s measurement' END",
    "source": "'production job'", "command": "NULL", "job_id": "NULL",
}
# a source some production run came from: its path is a user's log or record
_PRODUCTION_SOURCE = "hash IN (SELECT source_hash FROM {db}.runs WHERE " + _PRODUCTION + ")"


def _select(table: str, col: str, db: str, strip: bool) -> str:
    """The expression that copies column `col` of `table`: as it is, or (strip) with a production job's
    identifying text left out."""
    if strip and table == "runs" and col in _STRIPPED:
        return f'CASE WHEN {_PRODUCTION} THEN {_STRIPPED[col]} ELSE "{col}" END'
    if strip and table == "sources" and col == "path":
        return f"CASE WHEN {_PRODUCTION_SOURCE.format(db=db)} THEN 'production job (' || format || ')' ELSE path END"
    return f'"{col}"'


def _copy(conn: sqlite3.Connection, db: str, table: str, strip: bool = False) -> int:
    """Copy `table` of the attached database `db` into the snapshot (strip: a production job's identifying
    columns left out)."""
    names = _columns(conn, table)
    cols = ", ".join(f'"{c}"' for c in names)
    exprs = ", ".join(_select(table, c, db, strip) for c in names)
    cur = conn.execute(f"INSERT OR IGNORE INTO main.{table} ({cols}) SELECT {exprs} FROM {db}.{table}")
    return cur.rowcount


def _summarise(conn: sqlite3.Connection) -> None:
    """The per-system summary of the merged runs, computed once here: readers cannot store it."""
    from .store import KB
    kb = KB(conn, ":memory:", None)
    systems = [r[0] for r in conn.execute("SELECT DISTINCT system FROM main.runs")]
    conn.execute("DELETE FROM main.system_fs")
    conn.executemany("INSERT INTO main.system_fs (system, fsname, fs_type, ost_count, n_runs, first_rowid, stale) "
                     "VALUES (?,?,?,?,?,?,0)", [r for s in systems for r in kb._system_fs_rows("main", s)])


def _check_publishable(kb_path: Path, out: Path) -> None:
    """UsageError unless `kb_path` is a working KB and `out` another file in an existing directory."""
    if not kb_path.exists():
        raise UsageError(f"{kb_path}: no knowledge base to publish (import runs into it first)")
    from ..inputs import check_input
    from .store import KB_FILE
    check_input(kb_path, KB_FILE, UsageError)
    if not out.parent.is_dir():
        raise UsageError(f"{out.parent}: no such directory to publish into")
    if out.exists() and out.resolve() == kb_path.resolve():
        raise UsageError(f"{out}: is the KB being published; publish into another file")
    if _is_snapshot(kb_path):
        raise UsageError(f"{kb_path}: is a published snapshot, which is never changed; publish from the working KB")


def _attach_staff(conn: sqlite3.Connection, kb_path: Path) -> None:
    """Attach the staff KB as `staff`, read-only; immutable where it cannot even be read so (a KB in WAL mode
    on read-only media, where SQLite cannot make the shared-memory file: there nothing changes it either)."""
    from .store import _cannot_write
    try:
        conn.execute("ATTACH DATABASE ? AS staff", (f"file:{quote(str(kb_path))}?mode=ro",))
        conn.execute("SELECT count(*) FROM staff.sqlite_master").fetchone()
    except sqlite3.OperationalError as e:
        if not _cannot_write(e):
            raise
        if any(r[1] == "staff" for r in conn.execute("PRAGMA database_list")):
            conn.execute("DETACH DATABASE staff")
        conn.execute("ATTACH DATABASE ? AS staff", (f"file:{quote(str(kb_path))}?mode=ro&immutable=1",))


def _fill(tmp: str, ref: Path, kb_path: Path, snap: str,
          blank: str) -> tuple[dict[str, int], dict[str, int], str]:
    """Write the snapshot into the new file `tmp` (its digest the placeholder `blank`): the rows copied per table
    from the shipped data and from the staff KB, and the time it was published."""
    import datetime as _dt
    from .schema import migrate
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        # the journal in memory: nothing but the snapshot itself is written in the shared directory
        conn.execute("PRAGMA journal_mode = MEMORY")
        migrate(conn, tmp)
        conn.execute("ATTACH DATABASE ? AS shipped", (f"file:{quote(str(ref))}?mode=ro&immutable=1",))
        _attach_staff(conn, kb_path)
        conn.execute("BEGIN")               # one read transaction: the staff KB as of one moment
        shipped = {t: _copy(conn, "shipped", t) for t in TABLES}
        staff = {t: _copy(conn, "staff", t, strip=True) for t in TABLES}
        _summarise(conn)
        at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        # the staff KB's own path is not published: the source column stays empty
        conn.execute("INSERT INTO published (snapshot, published_at, source, sha256) VALUES (?, ?, '', ?)",
                     (snap, at, blank))
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE shipped")
        conn.execute("DETACH DATABASE staff")
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()
    return shipped, staff, at


def _derive(tmp: str, derive: Callable[[Any], list[str]]) -> list[str]:
    """Run `derive` (the fits advice stores, computed above this package) on a KB whose layer below is the new
    snapshot `tmp`, writable, under an empty in-memory KB: what it stores in `ref` lands in the snapshot, in
    one transaction. What `derive` returns."""
    from .schema import migrate
    from .store import KB, _connect
    conn = _connect(":memory:")
    try:
        migrate(conn, ":memory:")
        conn.execute("ATTACH DATABASE ? AS ref", (tmp,))
        conn.execute("PRAGMA ref.journal_mode = MEMORY")      # no journal file beside it in the shared directory
        for t in ("runs", "comparisons"):
            conn.execute(f"CREATE TEMP VIEW all_{t} AS SELECT 'user' AS origin, * FROM main.{t} "
                         f"UNION ALL SELECT 'reference' AS origin, * FROM ref.{t}")
        conn.execute("BEGIN")
        done = derive(KB(conn, ":memory:", tmp))
        conn.execute("COMMIT")
        conn.execute("PRAGMA ref.journal_mode = DELETE")
        return done
    finally:
        conn.close()


def _replace(tmp: str, out: Path) -> None:
    """Make `tmp` readable by all, flush it and rename it over `out`, the rename itself flushed too."""
    os.chmod(tmp, 0o644)                    # mkstemp's file is the owner's only: every user reads this one
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, out)
    dirfd = os.open(out.parent, os.O_RDONLY)
    try:
        os.fsync(dirfd)                     # the rename itself on disk
    finally:
        os.close(dirfd)


def publish(kb_path: Path, target: Path, derive: Callable[[Any], list[str]] | None = None) -> dict[str, Any]:
    """Write the snapshot of the KB at `kb_path` (with the shipped reference data) to `target` atomically;
    `derive(kb)` stores in it what advice derives from its runs (the systems it fitted), before it is sealed."""
    import tempfile
    import uuid
    from .store import KB
    kb_path, out = Path(kb_path), target_path(Path(target))
    _check_publishable(kb_path, out)
    # migrated to this version's schema first, where it can be written (on read-only media it is read as it is)
    KB.open(kb_path, create=False, reference=False).close()
    ref = KB.built_reference()                          # the shipped data, never a published layer
    snap, tmp = uuid.uuid4().hex[:16], ""
    try:
        # made inside the try: a signal at any point after it is made unwinds through the removal below
        try:
            fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
        except OSError as e:
            raise KBError(f"{out.parent}: cannot write there ({e.strerror})") from None
        os.close(fd)
        blank = uuid.uuid4().hex + uuid.uuid4().hex
        shipped, staff, at = _fill(tmp, ref, kb_path, snap, blank)
        fitted = _derive(tmp, derive) if derive is not None else []
        seal(tmp, blank)
        _replace(tmp, out)
    except sqlite3.Error as e:
        raise KBError(f"{out}: cannot publish ({e})") from None
    except OSError as e:
        raise KBError(f"{out}: cannot publish ({e.strerror or e})") from None
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
    return {"path": str(out), "snapshot": snap, "published_at": at, "source": str(kb_path),
            "runs": shipped["runs"] + staff["runs"], "center_runs": staff["runs"], "reference_runs": shipped["runs"],
            "fitted_systems": len(fitted)}
