"""The knowledge base: a user KB (sqlite, WAL) with the shipped reference KB attached underneath.

Every import is one transaction. A file imported before (same bytes) adds nothing, and neither does a run
already in the KB: run ids derive from the run's content (`content_key`), so a copy, a CRLF twin, reordered
rows or an export of the KB add no runs. Files are read, and their runs flagged, above the KB (`ingest`): it
stores the batches of runs it is given and knows neither importers nor centers.
"""
from __future__ import annotations

import datetime as _dt
import itertools
from collections import Counter
from operator import itemgetter, not_
import os
import sqlite3
import time
from pathlib import Path

from ..errors import ImportFormatError, IOAdvisorError, KBError, UsageError
from ..frozen import frozen
from ..inputs import Kind, check_input
from ..model.run import APIS, KINDS, OPS, Run, first_ids, norm_api, norm_layout, run_id
from ..util import data_home
from .rows import (RUN_COLUMNS, VALUES, content_ids, keyed_row, record, row_to_run)
from .schema import COMPARISON_COLUMNS, FSNAME, UNKNOWN_FS, migrate, rollback

TYPE_CHECKING = False
if TYPE_CHECKING:
    import mmap
    from typing import Any, Callable, Iterable, Iterator

BUSY_TIMEOUT_MS = 60_000
BATCH = 5000          # runs per executemany inside an import's transaction
IMPORT_CACHE_KIB = 64 << 10  # page cache of an import's connection: the id index of a million runs stays in it
REBUILD_CACHE_KIB = 4 << 10   # page cache while an import builds the indexes it deferred
# page size of a KB file made from now on (SQLite's default is 4 KiB; an existing KB keeps its own): an import of
# a million runs spent 0.7 s less CPU storing them and building the indexes (fewer pages to split, balance and
# write), with the same cold advice, listing, guide and validation (benchmarks/bench_scale.py)
PAGE_SIZE = 16 << 10
# the index an import keeps current while another process makes its batches (KB.add_batches): of a million
# runs, the storing process kept it in time it otherwise waited, and the builds after the last row took 0.75 s
# instead of 2.1 (the import 9.6 s instead of 10.8-11.4)
OVERLAPPED_KEPT = ("runs_system_op_fs",)

# The sqlite3 module binds None through its adapter lookup, which fails twice (raising and clearing an
# exception) before it binds NULL: half the cost of inserting a run with many empty columns. A registered
# adapter is found at once; it returns None, which binds NULL as before.
sqlite3.register_adapter(type(None), {}.get)


def default_kb_path() -> Path:
    """`IOADVISE_KB`, else `$XDG_DATA_HOME/ioadvisor/kb.sqlite` (~/.local/share by default)."""
    env = os.environ.get("IOADVISE_KB")
    if env:
        return Path(env)
    return data_home() / "kb.sqlite"


def _to_wal(conn: sqlite3.Connection) -> None:
    """Put the KB in WAL mode (it stays so). SQLite does not wait for a lock to switch the journal mode: where
    other processes open the same new KB at once, the switch fails with "database is locked" at once, busy
    timeout or not; it is retried for as long as the busy timeout, and not tried where the KB is WAL already."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while conn.execute("PRAGMA main.journal_mode").fetchone()[0].lower() != "wal":
        try:
            conn.execute("PRAGMA main.journal_mode = WAL")       # (the KB's only: not an attached reference)
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _connect(path: str, mode: str = "rw") -> sqlite3.Connection:
    """A connection to the KB at `path`: to write ("rw"), or only to read ("ro"; "immutable" where not even
    the read lock can be taken, as on a read-only mount, where nothing can change the file either)."""
    if mode == "rw":
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    else:
        from urllib.parse import quote
        conn = sqlite3.connect(f"file:{quote(path)}?{'mode=ro' if mode == 'ro' else 'immutable=1'}",
                               timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, uri=True)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if path != ":memory:" and mode == "rw":
            if conn.execute("PRAGMA main.page_count").fetchone()[0] == 0:      # a new file: nothing written yet
                conn.execute(f"PRAGMA main.page_size = {PAGE_SIZE}")
            _to_wal(conn)
            conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()            # not left open until collected (it keeps the file, and its mount, busy)
        raise
    conn.row_factory = sqlite3.Row
    return conn


#: a KB file as `inputs` checks it before it is opened: a regular file (sqlite reads it in place, so no cap)
KB_FILE = Kind("knowledge base", None)


def check_kb_file(path: Path) -> None:
    """KBError naming `path` unless it is a regular file (after symbolic links): a named pipe, a device or a
    socket is refused by its type before sqlite opens it, which would wait forever on a pipe without a writer."""
    check_input(path, KB_FILE, KBError)


def _check_published(path: Path) -> None:
    """A clear error for a center KB named by IOADVISE_CENTER_KB that is not a readable file."""
    from .reference import CENTER_KB_ENV
    hint = f"{CENTER_KB_ENV} names the center's published knowledge base (a file written by `ioadvise kb publish`)"
    if not path.exists():
        raise KBError(f"{path}: does not exist; {hint}")
    try:
        check_kb_file(path)
    except KBError as e:
        raise KBError(f"{e}; {hint}") from None


def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
    """The published KB is read as it is (never migrated): its schema must be one this ioadvisor reads so."""
    from .schema import READ_AS_IS_FROM, SCHEMA_VERSION
    version = conn.execute("PRAGMA ref.user_version").fetchone()[0]
    if not READ_AS_IS_FROM <= version <= SCHEMA_VERSION:
        reads = (f"v{SCHEMA_VERSION}" if READ_AS_IS_FROM == SCHEMA_VERSION
                 else f"v{READ_AS_IS_FROM} to v{SCHEMA_VERSION}")
        raise KBError(f"{path}: published with knowledge base schema v{version}, this ioadvisor reads "
                      f"{reads}; publish it again with this version (`ioadvise kb publish`)")


def _cannot_write(e: sqlite3.Error) -> bool:
    """Whether SQLite refused to open or write a file it may still read."""
    text = str(e)
    return any(t in text for t in ("readonly", "read-only", "unable to open", "disk I/O error"))


def keyed_runs(runs: Iterable[Run], source: str) -> Iterator[tuple[str, tuple]]:
    """Runs as keyed rows, each run checked first (whatever read it): one bad value stops the source."""
    from ..model.validate import checked
    for i, r in enumerate(runs, 1):
        try:
            checked(r)
        except UsageError as e:
            raise ImportFormatError(f"run {i}: {e}", source) from None
        yield keyed_row(r)


#: runs on their way into the KB, a few thousand at a time: (the VALUES columns the rows hold, the others being
#: NULL in every row and NULL by default; each row's first id, run_id(key); each row's content key, or None
#: where no earlier row of the source has its first id; the rows)
Batch = tuple[tuple[str, ...], list[str], list[str | None], list[tuple]]


MARKS = 1 << 24      # one byte per value of an id's last 24 bits: the marks of ids given during an import


def id_marks() -> mmap.mmap:
    """MARKS bytes, all 0, as an anonymous mapping: its pages are given memory when first written, so a source of
    a few runs touches a few pages (a bytearray zeroed all 16 MiB: 4 ms a source, most of what building the
    reference data's KB cost)."""
    import mmap                     # (not at start-up: advice never imports)
    return mmap.mmap(-1, MARKS)


def id_mark(rid: str) -> int:
    """The byte of an id among MARKS: the value of its last 6 hex digits (24 bits)."""
    return int(rid[-6:], 16)


_LAST6 = itemgetter(slice(-6, None))


def id_slots(ids: list[str]) -> list[int]:
    """`id_mark` of each id, in C (a batch of an import: thousands)."""
    return list(map(int, map(_LAST6, ids), itertools.repeat(16)))


def marks_at(given: mmap.mmap, slots: list[int]) -> tuple[int, ...]:
    """The bytes of `given` at `slots`, read in C."""
    return itemgetter(*slots)(given) if len(slots) > 1 else tuple(given[m] for m in slots)


def batched(items: Iterable[tuple[str, tuple]], nullable: frozenset[str],
            size: int | None = None) -> Iterator[Batch]:
    """Keyed rows in batches of `size` (BATCH). A batch names only the columns some row of it fills: binding a
    parameter costs about as much as storing it, and most runs leave half the columns empty. Columns in
    `nullable` (NULL by default) are left out when every row has NULL there; the rows are stored as they would
    be with every column named (`KB.null_default_columns`, read before: the batches may be made in another
    process).

    A run's content key is needed only to make the id of a second occurrence of its content (`run_id(key, n)`,
    n >= 1), which only a run whose first id an earlier run of the same source has can be: the others' keys
    (about 520 characters each, nearly every run of a large file) are left out, None. A byte per value of a
    first id's last 24 bits (16 MiB) marks the first ids given so far; a key is kept where its byte is set
    (an earlier run's first id, or another id sharing those bits: a key too many, never one too few)."""
    it = iter(items)
    size = size or BATCH
    given = id_marks()
    while True:
        batch = list(itertools.islice(it, size))
        if not batch:
            return
        keys, rows = [k for k, _ in batch], [v for _, v in batch]
        firsts = first_ids(keys)
        for i, slot in enumerate(id_slots(firsts)):
            if given[slot]:
                continue
            given[slot] = 1
            keys[i] = None
        keep = _filled(rows, nullable)
        if len(keep) < len(VALUES):
            rows = list(map(itemgetter(*keep), rows)) if len(keep) > 1 else [(r[keep[0]],) for r in rows]
        yield tuple(VALUES[i] for i in keep), firsts, keys, rows


def _filled(rows: list[tuple], nullable: frozenset[str]) -> list[int]:
    """The positions in VALUES of the columns some row fills, or that are not NULL by default. Only the columns
    the first row leaves empty are looked at, all at once: the distinct tuples of their cells, gathered in C
    (one, of NULLs only, in most batches), tell which of them some row fills."""
    first = rows[0]
    empty = [i for i, name in enumerate(VALUES) if name in nullable and first[i] is None]
    if not empty:
        return list(range(len(VALUES)))
    seen = set(map(itemgetter(*empty), rows)) if len(empty) > 1 else {(r[empty[0]],) for r in rows}
    filled = {i for t in seen for i, v in zip(empty, t) if v is not None}
    return [i for i in range(len(VALUES)) if i in filled or i not in empty]


class _Summary:
    """The `system_fs` rows of runs being added (see schema migration 3): per system and file system the
    last stated type, the largest OST count, the count and the position of the first run."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], list] = {}

    def add(self, rows: list[tuple], offset: int, columns: tuple[str, ...] = RUN_COLUMNS) -> None:
        """Count `rows` (holding `columns`, the others NULL), the first of them at position `offset`."""
        at = [columns.index(c) if c in columns else -1 for c in ("system", "filesystem", "fs_type", "ost_count")]
        get = (itemgetter(*at) if -1 not in at
               else lambda r: tuple(None if i < 0 else r[i] for i in at))
        # the few distinct (system, file system, type, OSTs) of a batch counted in C, then folded per distinct
        # one in order of first appearance; the stated type is the last one, so a batch that states two types
        # for one file system is read run by run
        facts = list(map(get, rows))
        counts = Counter(facts)
        types: dict[tuple, str] = {}
        for system, fs, fs_type, _ in counts:
            if fs_type and types.setdefault((system, fs or fs_type), fs_type.lower()) != fs_type.lower():
                self._add_each(facts, offset)
                return
        groups = self.groups
        for fact, n in counts.items():
            system, fs, fs_type, osts = fact
            key = (system, fs or fs_type or UNKNOWN_FS)
            g = groups.get(key)
            if g is None:
                g = groups[key] = [None, None, 0, offset + facts.index(fact)]
            if fs_type:
                g[0] = fs_type.lower()
            if osts and (g[1] is None or osts > g[1]):
                g[1] = osts
            g[2] += n

    def _add_each(self, facts: list[tuple], offset: int) -> None:
        """`add` of runs given as (system, file system, type, OSTs), one after another."""
        groups = self.groups
        for i, (system, fs, fs_type, osts) in enumerate(facts, offset):
            key = (system, fs or fs_type or UNKNOWN_FS)
            g = groups.get(key)
            if g is None:
                g = groups[key] = [None, None, 0, i]
            if fs_type:
                g[0] = fs_type.lower()
            if osts and (g[1] is None or osts > g[1]):
                g[1] = osts
            g[2] += 1

    def store(self, conn: sqlite3.Connection) -> None:
        """Merge into the summary; run inside the transaction that inserted the runs, after the inserts."""
        if not self.groups:
            return
        # rowids of new rows follow the largest one, so this is where the source's first runs landed
        last = conn.execute("SELECT max(rowid) FROM main.runs").fetchone()[0] or 0
        n = sum(g[2] for g in self.groups.values())
        conn.executemany(
            """INSERT INTO main.system_fs (system, fsname, fs_type, ost_count, n_runs, first_rowid)
               VALUES (?,?,?,?,?,?)
               ON CONFLICT (system, fsname) DO UPDATE SET
                   fs_type = coalesce(excluded.fs_type, fs_type),
                   ost_count = CASE WHEN ost_count IS NULL OR excluded.ost_count > ost_count
                                    THEN excluded.ost_count ELSE ost_count END,
                   n_runs = n_runs + excluded.n_runs""",
            [(s, f, t, o, c, last - n + 1 + first) for (s, f), (t, o, c, first) in self.groups.items()])


class _DeferredIndexes:
    """Secondary indexes of `runs` (not the id index, which finds the runs already in the KB) left out while a
    large source goes into a KB without runs, and built once over all its runs at the end of the same
    transaction: sorting a million rows once costs less than keeping an index current through a million
    inserts. All but those named `kept`: an import whose batches another process makes keeps the system index
    current, in the time it waits for them (`KB.add_batches`). Every step is part of the import's transaction,
    so a source rolled back (bad input, Ctrl-C) leaves the indexes as they were; the rebuilt ones hold the same
    entries and are created by the statements that made them."""

    def __init__(self, conn: sqlite3.Connection, kept: Iterable[str] = ()):
        self.conn = conn
        self.kept = frozenset(kept)
        self.dropped: list[str] = []

    def drop(self) -> None:
        found = [tuple(r) for r in self.conn.execute(
            "SELECT name, sql FROM main.sqlite_master WHERE type = 'index' AND tbl_name = 'runs' "
            "AND sql IS NOT NULL ORDER BY rowid")]
        found = [(name, sql) for name, sql in found if name not in self.kept]
        for name, _ in found:
            self.conn.execute(f'DROP INDEX main."{name.replace(chr(34), chr(34) * 2)}"')
        self.dropped = [sql for _, sql in found]

    def rebuild(self) -> None:
        if not self.dropped:
            return
        # a small page cache while the indexes are built (the import's is put back after): each build reads the
        # table once in order and sorts its keys, and sqlite's sorter takes memory in proportion to the cache
        # (with the import's 64 MiB, an import of a million runs peaked at 168 MB instead of 108)
        size = self.conn.execute("PRAGMA main.cache_size").fetchone()[0]
        self.conn.execute(f"PRAGMA main.cache_size = -{REBUILD_CACHE_KIB}")
        try:
            for sql in self.dropped:
                self.conn.execute(sql)
        finally:
            self.conn.execute(f"PRAGMA main.cache_size = {int(size)}")
        self.dropped = []


class _Occurrences:
    """Content ids for the runs of one source, read in batches, and which of them the KB has already. The n-th
    run with the same content gets occurrence n over the whole source, counted per first id (`run_id(key)`)
    with memory bounded by a batch.

    Most runs of a large file are the first of their content, and the KB's id index says so at once: a first id
    the KB does not have cannot have come earlier in this source (that run would be in the KB, stored by this
    source or known before it). Only first ids the KB has need a count: a temporary table (keyed by the id's 48
    bits as an integer, a rowid table) holds the count of every first id of this source seen more than once or
    found in the KB; a first id seen once, and so stored by this source, counts 1 without a row there.

    In a KB that had no runs when the source began (`fresh`), every run there was stored by this source: a byte
    per value of an id's last 24 bits marks the ids given so far and those of the reference layer (16 MiB, the
    reference's ids read once), and only first ids whose byte is set are looked up in the KB and the reference
    (about one in 16 at a million runs, instead of every one)."""

    def __init__(self, conn: sqlite3.Connection, dbs: tuple[str, ...], source_hash: str,
                 known: Callable[[list[str]], set[str]], fresh: bool = False):
        self.conn, self.dbs, self.source_hash, self.known = conn, dbs, source_hash, known
        self.given = id_marks() if fresh else None
        if self.given is not None and "ref" in dbs:
            self.given = _marked(self.given, conn.execute("SELECT id FROM ref.runs"))
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS import_occ (k INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
        conn.execute("DELETE FROM temp.import_occ")

    def _lookup(self, sql: str, args: list) -> Iterator[tuple]:
        for k in range(0, len(args), 500):
            chunk = args[k:k + 500]
            yield from self.conn.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)

    def ids(self, firsts: list[str], keys: list[str | None]) -> tuple[list[str], set[str]]:
        """The ids of a batch of content keys (with their first ids), in order, and those of them the KB has
        (not to store again). A key is needed only where an earlier run of the source has its first id
        (`batched` leaves the others out)."""
        uniq = list(set(firsts))    # (in any order: the look-ups' answers are gathered in a dict)
        given = self.given
        slots = None if given is None else id_slots(uniq)       # each first id's byte in `given`
        # the first ids the KB has, with the source that stored them (the reference's: "")
        ask = uniq if slots is None else list(itertools.compress(uniq, marks_at(given, slots)))
        here = dict(self._lookup("SELECT id, source_hash FROM main.runs WHERE id IN ({marks})", ask))
        if "ref" in self.dbs:
            for (rid,) in self._lookup("SELECT id FROM ref.runs WHERE id IN ({marks})", ask):
                here.setdefault(rid, "")
        out, again = list(firsts), []
        # only runs whose first id the KB has or the batch repeats are counted; every other run is the first of
        # its content (occurrence 0: its first id) and counts 1, which needs no row in import_occ
        seen = dict.fromkeys(() if len(uniq) == len(firsts) else
                             (f for f, c in Counter(firsts).items() if c > 1), 0)
        if here:
            found = sorted(here)
            counted = dict(self._lookup("SELECT k, n FROM temp.import_occ WHERE k IN ({marks})",
                                        [int(f, 16) for f in found]))
            for f in found:
                seen[f] = counted.get(int(f, 16), 1 if here[f] == self.source_hash else 0)
        if seen:
            for i in itertools.compress(range(len(firsts)), map(seen.__contains__, firsts)):
                n = seen[firsts[i]]
                seen[firsts[i]] = n + 1
                if n:
                    key = keys[i]
                    if key is None:
                        raise IOAdvisorError(f"run {firsts[i]} repeats an earlier run's content, whose key "
                                             "was left out of its batch")
                    out[i] = rid = run_id(key, n)
                    again.append(rid)
            counts = [(int(f, 16), n) for f, n in seen.items() if n != 1 or f in here]
            if counts:
                self.conn.executemany("INSERT OR REPLACE INTO temp.import_occ VALUES (?, ?)", counts)
        if slots is not None:
            # every id given, stored or not (a mark too many costs one look-up): the batch's first ids, and the
            # ids of later occurrences
            for m in slots:
                given[m] = 1
            for rid in again:
                given[id_mark(rid)] = 1
        return out, set(here) | (self.known(again) if again else set())


def _marked(given: mmap.mmap, ids: Iterable[tuple[str]]) -> mmap.mmap:
    """`given` with the byte of each id's last 24 bits set. An id that does not end in 6 hex digits is equal to
    no first id (`run_id`'s 12): it marks nothing."""
    for (rid,) in ids:
        try:
            given[id_mark(rid)] = 1
        except (ValueError, TypeError, IndexError):
            pass
    return given


def _other_system_note(old: list[str], batches: Iterable[Batch]) -> str | None:
    """What to say when a file already imported comes again naming other systems (from its first runs)."""
    try:
        names, _, _, rows = next(iter(batches), ((), [], [], []))
        new = sorted({r[names.index("system")] for r in rows[:1000]})
    except IOAdvisorError:
        return None
    if old and new and old != new:
        return (f"this file is already in the KB as system {', '.join(old)}; nothing was added as "
                f"{', '.join(new)} (`ioadvise kb relabel` renames a system)")
    return None


def like_escape(text: str) -> str:
    """`text` for a LIKE pattern with ESCAPE '\\': its %, _ and \\ match only themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@frozen
class ImportResult:
    path: str
    format: str
    runs: int              # runs added
    skipped: bool          # nothing added: the same file, or every run in it, is in the KB already
    duplicates: int = 0    # runs of this source already in the KB (same content, see content_key)
    note: str | None = None  # what happened, when it is not plain "added N runs"
    warnings: tuple[str, ...] = ()  # what the user should know of the runs added (their file system unknown, ...)


@frozen
class RunFilter:
    system: str | None = None
    filesystem: str | None = None
    op: str | None = None
    api: str | None = None
    layout: str | None = None
    kind: str | None = None
    origin: str | None = None      # user | reference
    source: str | None = None      # substring of the source path
    limit: int | None = None
    flagged: bool | None = None    # False: leave out runs with evidence flags; True: only those; None: all

    def __post_init__(self) -> None:
        # a value no run can have (a misspelt op) is an error, not an empty answer; others read canonical
        for name, known in (("op", OPS), ("kind", KINDS), ("origin", ("user", "reference"))):
            v = getattr(self, name)
            if v is not None:
                if v.lower() not in known:
                    raise UsageError(f"unknown {name} {v!r} (use {', '.join(known)})")
                object.__setattr__(self, name, v.lower())
        if self.api is not None and norm_api(self.api) not in APIS:
            raise UsageError(f"unknown api {self.api!r} (use {', '.join(APIS)})")
        object.__setattr__(self, "layout", norm_layout(self.layout))

    def where(self, origin: bool = True) -> tuple[str, list[Any]]:
        """The WHERE clause for `all_runs` (origin=False: for one database's `runs`, without `origin`)."""
        clauses, args = [], []
        for col in ("system", "filesystem", "op", "layout", "kind") + (("origin",) if origin else ()):
            v = getattr(self, col)
            if v is not None:
                # system names are matched case-insensitively (indexed so); the rest are stored canonical
                clauses.append(f"{col} = ? COLLATE NOCASE" if col in ("system", "filesystem") else f"{col} = ?")
                args.append(v if col in ("system", "filesystem", "origin") else v.lower())
        if self.api is not None:
            clauses.append("api = ?")
            args.append(norm_api(self.api))
        if self.source:
            clauses.append("source LIKE ? ESCAPE '\\'")
            args.append(f"%{like_escape(self.source)}%")
        if self.flagged is not None:
            clauses.append("flags IS NOT NULL" if self.flagged else "flags IS NULL")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


def _target(p: Path, create: bool) -> str:
    """What sqlite opens for the KB at `p`: the path (its directory made when `create`), or `:memory:` for a
    missing KB opened only to read."""
    if not p.exists():
        if not create:
            return ":memory:"
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise KBError(f"{p}: cannot create knowledge base directory: {e.strerror}") from None
    elif p.is_dir():
        raise KBError(f"{p}: is a directory, not a knowledge base")
    else:
        check_kb_file(p)
    return str(p)


def _connect_migrated(p: Path, target: str, create: bool) -> sqlite3.Connection:
    """A connection to `target`, migrated to this version's schema when it can be written."""
    # a KB opened only to read (create=False) that cannot be written (a read-only file or mount, an
    # immutable file) is read as it is
    modes = ("rw",) if create or target == ":memory:" else ("rw", "ro", "immutable")
    for mode in modes:
        conn = None
        try:
            conn = _connect(target, mode)
            migrate(conn, target, write=mode == "rw")
            conn.execute("SELECT count(*) FROM main.sqlite_master").fetchone()
            break
        except sqlite3.OperationalError as e:
            if conn is not None:
                conn.close()
            if mode == modes[-1] or not _cannot_write(e):
                raise KBError(f"{p}: not a usable knowledge base ({e})") from None
        except sqlite3.DatabaseError as e:
            if conn is not None:
                conn.close()
            raise KBError(f"{p}: not a usable knowledge base ({e})") from None
    return conn


def _reflagged(rows: list[dict[str, Any]], flags_of: Callable[[Run], tuple[str, ...]]) -> int:
    """Set each row's flags to what `flags_of` judges of its run (in place); how many rows changed."""
    n = 0
    for r in rows:
        flags = ",".join(flags_of(row_to_run(r))) or None
        if flags != r["flags"]:
            r["flags"], n = flags, n + 1
    return n


class KB:
    """A user knowledge base with the reference KB attached read-only as `ref`."""

    def __init__(self, conn: sqlite3.Connection, path: str, reference: str | None, file: str | None = None):
        # path: what sqlite opened (":memory:" for a KB not made yet); file: the KB file asked for
        self.conn, self.path, self.reference, self.file = conn, path, reference, file or path

    @property
    def reference_id(self) -> str | None:
        """What identifies the reference layer's content: a published snapshot's id (its file name stays the
        same from one publication to the next), else the cached build's file name (a hash of its data)."""
        if not self.reference:
            return None
        from .reference import snapshot_id
        return snapshot_id(self.conn, "ref") or os.path.basename(self.reference)

    @classmethod
    def open(cls, path: str | Path | None = None, *, create: bool = True, reference: bool = True) -> "KB":
        """Open (and migrate) the KB at `path` (default: `default_kb_path()`).

        With create=False a missing KB is not created: an empty in-memory one stands in.
        """
        p = Path(path) if path is not None else default_kb_path()
        target = _target(p, create)
        conn = _connect_migrated(p, target, create)
        ref_path = cls._attach_reference(conn) if reference else None
        union = "SELECT 'user' AS origin, * FROM main.{t}"
        if ref_path:
            union += " UNION ALL SELECT 'reference' AS origin, * FROM ref.{t}"
        conn.execute("CREATE TEMP VIEW all_runs AS " + union.format(t="runs"))
        conn.execute("CREATE TEMP VIEW all_comparisons AS " + union.format(t="comparisons"))
        return cls(conn, target, ref_path, str(p))

    @classmethod
    def _attach_reference(cls, conn: sqlite3.Connection) -> str:
        """Attach the reference layer as `ref` (closing `conn` on failure); its path."""
        from .reference import published_kb_path
        published = published_kb_path()
        ref_path = str(published or cls.built_reference())
        # read-only and immutable: the reference layer (the cached build, or the center's published snapshot
        # on a shared, possibly read-only file system) is only ever replaced whole by a rename, never changed
        # in place, so no process locks it or creates a journal, -wal or -shm file beside it, and a write
        # transaction on the user's KB does not lock it for the other processes
        from urllib.parse import quote
        try:
            if published is not None:
                from .integrity import check_snapshot
                _check_published(published)
                check_snapshot(published)           # cut short or extended since it was published
            conn.execute("ATTACH DATABASE ? AS ref", (f"file:{quote(ref_path)}?mode=ro&immutable=1",))
            if not conn.execute("SELECT count(*) FROM ref.sqlite_master").fetchone()[0]:
                # this SQLite does not read URI names: the plain path (and a file named like the URI) instead
                conn.execute("DETACH DATABASE ref")
                conn.execute("ATTACH DATABASE ? AS ref", (ref_path,))
            if published is not None:
                _check_schema(conn, published)
        except (sqlite3.DatabaseError, KBError) as e:
            conn.close()
            if isinstance(e, KBError):
                raise
            raise KBError(f"{ref_path}: not a usable knowledge base ({e})") from None
        return ref_path

    @classmethod
    def built_reference(cls) -> Path:
        """The reference KB built from the shipped data (rebuilt when they change)."""
        from .reference import reference_kb_path
        return reference_kb_path(lambda path: cls.open(path, reference=False))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "KB":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writing -------------------------------------------------------------------------------------------
    def add_runs(self, runs: Iterable[Run], *, source: str, source_hash: str, fmt: str, importer: str,
                 comparisons: Iterable[dict[str, Any]] = (), require_runs: bool = False) -> ImportResult:
        """Insert the runs of one source in one transaction; nothing if the source is already there.

        `runs` may be any iterable (a parser reading a file as it goes): it is consumed in batches inside the
        transaction, so memory does not grow with the source, and an error raised while iterating rolls the
        whole source back. With require_runs, a source that yields no run is an error (and adds nothing).
        Every run passes `check_run` first (whatever read it): one bad value rejects the whole source. A run
        already in the KB (the same content, see `content_key`) is not added again."""
        return self.add_batches(batched(keyed_runs(runs, source), self.null_default_columns()), source=source,
                                source_hash=source_hash, fmt=fmt, importer=importer, comparisons=comparisons,
                                require_runs=require_runs)

    def add_batches(self, batches: Iterable[Batch], *, source: str, source_hash: str, fmt: str, importer: str,
                    comparisons: Iterable[dict[str, Any]] = (), require_runs: bool = False,
                    overlapped: bool = False) -> ImportResult:
        """`add_runs` of batches of checked runs (`batched`), as `ingest.import_file` prepares them; the batches
        are consumed inside the one transaction, so an error raised while making them rolls the source back.
        `overlapped`: another process makes the batches while these are stored. Into a KB without runs, the
        storing process then waits for most of them, and keeps the system index current in that time (the
        slowest of the indexes to build after the last row, when nothing else runs); the others are built
        after the last row, as they all are otherwise (`_DeferredIndexes`)."""
        journal = self._rollback_journal()
        try:
            return self._add_batches(batches, source=source, source_hash=source_hash, fmt=fmt, importer=importer,
                                     comparisons=comparisons, require_runs=require_runs,
                                     kept=OVERLAPPED_KEPT if overlapped else ())
        finally:
            if journal:
                self._back_to_wal()

    def _rollback_journal(self) -> bool:
        """For an import into a KB without runs (a new one), a rollback journal instead of the write-ahead log:
        whether the KB was switched. The runs' pages then go into the file once, beyond its old end, where the
        journal need not copy them and a rollback (or the next opening after a crash) cuts them off; in the log
        they were written twice, the commit's checkpoint copying them into the file (2 s of an import of a
        million runs). Synced as fully as the log (synchronous FULL) until `_back_to_wal`. Not switched where
        another connection has the KB open (the switch needs the KB alone): that import keeps the log."""
        if self.conn.execute("SELECT 1 FROM main.runs LIMIT 1").fetchone() is not None:
            return False
        try:
            mode = self.conn.execute("PRAGMA main.journal_mode = DELETE").fetchone()[0]
        except sqlite3.OperationalError:        # another connection has it open
            return False
        if mode.lower() != "delete":            # (":memory:", or not switched)
            return False
        self.conn.execute("PRAGMA main.synchronous = FULL")
        return True

    def _back_to_wal(self) -> None:
        """The KB in WAL mode again after `_rollback_journal`'s import (committed or rolled back). Where another
        process holds it a moment too long, the next connection to it switches it (`_connect`)."""
        try:
            self.conn.execute("PRAGMA main.synchronous = NORMAL")
            _to_wal(self.conn)
            # read once through the log: until then this connection's first checkpoint failed ("database table
            # is locked")
            self.conn.execute("SELECT count(*) FROM main.sqlite_master").fetchone()
        except sqlite3.OperationalError:
            pass

    def _add_batches(self, batches: Iterable[Batch], *, source: str, source_hash: str, fmt: str, importer: str,
                     comparisons: Iterable[dict[str, Any]], require_runs: bool, kept: tuple[str, ...]
                     ) -> ImportResult:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            added = self._store_source(batches, source=source, source_hash=source_hash, fmt=fmt,
                                       importer=importer, keep_empty=True, bulk=True, kept=kept)
            if added is None:
                old = sorted({r[0] for r in self.conn.execute(
                    "SELECT DISTINCT system FROM main.runs WHERE source_hash = ?", (source_hash,))})
                self.conn.execute("ROLLBACK")
                return ImportResult(source, fmt, 0, True, 0, _other_system_note(old, batches))
            n, seq = added
            if require_runs and not seq:
                raise ImportFormatError(f"no measured results found ({fmt} format)", source)
            dups = seq - n
            if seq and not n:
                self.conn.execute("ROLLBACK")
                return ImportResult(source, fmt, 0, True, dups, f"all {dups} run(s) are in the KB already")
            cols = ("source_hash",) + COMPARISON_COLUMNS
            self.conn.executemany(
                f"INSERT INTO main.comparisons ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                ((source_hash,) + tuple(c.get(k) or None for k in COMPARISON_COLUMNS) for c in comparisons))
            self.conn.execute("COMMIT")
        except BaseException:
            rollback(self.conn)
            raise
        note = f"{dups} run(s) are in the KB already" if dups else None
        return ImportResult(source, fmt, n, False, dups, note)

    def add_source(self, runs: Iterable[Run], *, source: str, source_hash: str, fmt: str, importer: str,
                   flag: Callable[[Iterator[tuple[str, tuple]]], Iterator[tuple[str, tuple]]] | None = None
                   ) -> tuple[int, int] | None:
        """Inside the caller's open transaction, the runs of one source and its `sources` row: returns (runs
        added, runs read), or None when the source is in the KB already (nothing is added). Runs already in the
        KB are not added again, and a source none of whose runs is new is not recorded. `flag` gives the keyed
        rows their evidence flags (`ingest.flagger(center)`, as `import_file` does)."""
        items = keyed_runs(runs, source)
        if flag is not None:
            items = flag(items)
        return self._store_source(batched(items, self.null_default_columns()), source=source,
                                  source_hash=source_hash, fmt=fmt, importer=importer, keep_empty=False)

    def _store_source(self, batches: Iterable[Batch], *, source: str, source_hash: str, fmt: str, importer: str,
                      keep_empty: bool, bulk: bool = False, kept: tuple[str, ...] = ()) -> tuple[int, int] | None:
        """`add_source` of batches of checked runs, the one writer of `sources` rows. With keep_empty, a source
        that yields no run at all is recorded (its comparisons name it). With bulk (a transaction rolled back
        whole on any error), a large source into a KB without runs defers the secondary indexes
        (`_DeferredIndexes`), but those named in `kept`."""
        if self.conn.execute("SELECT 1 FROM main.sources WHERE hash = ?", (source_hash,)).fetchone():
            return None
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self.conn.execute("INSERT INTO main.sources VALUES (?,?,?,?,?,?)",
                          (source_hash, source, fmt, importer, now, 0))
        n, seq = self._insert_batches(batches, source_hash, bulk, kept)
        if n:
            self.conn.execute("UPDATE main.sources SET n_runs = ? WHERE hash = ?", (n, source_hash))
        elif seq or not keep_empty:
            self.conn.execute("DELETE FROM main.sources WHERE hash = ?", (source_hash,))
        return n, seq

    def _insert_batches(self, batches: Iterable[Batch], source_hash: str, bulk: bool = False,
                        kept: tuple[str, ...] = ()) -> tuple[int, int]:
        """`insert_runs` of batches of checked runs."""
        # a larger page cache while the runs go in (restored after): with the default 2 MiB, every insert into
        # the id index of a large KB missed the cache
        sizes = {db: self.conn.execute(f"PRAGMA {db}.cache_size").fetchone()[0] for db in ("main", "temp")}
        for db in sizes:
            self.conn.execute(f"PRAGMA {db}.cache_size = -{IMPORT_CACHE_KIB}")
        try:
            return self._store_batches(batches, source_hash, bulk, kept)
        finally:
            for db, size in sizes.items():
                self.conn.execute(f"PRAGMA {db}.cache_size = {int(size)}")

    def _store_batches(self, batches: Iterable[Batch], source_hash: str, bulk: bool = False,
                       kept: tuple[str, ...] = ()) -> tuple[int, int]:
        fresh = self.conn.execute("SELECT 1 FROM main.runs LIMIT 1").fetchone() is None
        occ = _Occurrences(self.conn, self._dbs(), source_hash, self._known_ids, fresh)
        n = seq = 0
        summary = _Summary()
        # a source of more than one batch into a KB without runs: its indexes are built at the end
        deferred = _DeferredIndexes(self.conn, kept) if bulk and fresh else None
        for k, (names, firsts, keys, values) in enumerate(batches):
            if k == 1 and deferred is not None:
                deferred.drop()
            ids, known = occ.ids(firsts, keys)
            rows = list(map(tuple.__add__, zip(ids, itertools.repeat(source_hash), range(seq, seq + len(values))),
                            values))
            if known:       # (most batches of a file that repeats some runs: the few known are left out in C)
                rows = list(itertools.compress(rows, map(not_, map(known.__contains__, ids))))
            if rows:
                columns = ("id", "source_hash", "seq") + names
                self.conn.executemany(f"INSERT INTO main.runs ({','.join(columns)}) "
                                      f"VALUES ({','.join('?' * len(columns))})", rows)
                summary.add(rows, n, columns)
            n += len(rows)
            seq += len(values)
        if deferred is not None:
            deferred.rebuild()
        summary.store(self.conn)
        return n, seq

    def null_default_columns(self) -> frozenset[str]:
        """The `runs` columns whose default is NULL (leaving them out stores NULL)."""
        return frozenset(r[1] for r in self.conn.execute("PRAGMA main.table_info(runs)")
                         if r[1] in RUN_COLUMNS and r[4] is None)

    def _known_ids(self, ids: list[str]) -> set[str]:
        """Those of `ids` that a run in the KB (user or reference) has already."""
        known: set[str] = set()
        uniq = sorted(set(ids))
        for k in range(0, len(uniq), 500):
            chunk = uniq[k:k + 500]
            marks = ",".join("?" * len(chunk))
            for db in self._dbs():
                known.update(r[0] for r in self.conn.execute(f"SELECT id FROM {db}.runs WHERE id IN ({marks})", chunk))
        return known

    # ---- reading -------------------------------------------------------------------------------------------
    def rows(self, flt: RunFilter = RunFilter()) -> Iterator[sqlite3.Row]:
        where, args = flt.where()
        # natural order: the user's runs first, then the reference runs, each in import order
        sql = f"SELECT * FROM all_runs{where}"
        if flt.limit is not None:
            sql += f" LIMIT {int(flt.limit)}"
        return self.conn.execute(sql, args)

    def runs(self, flt: RunFilter = RunFilter()) -> list[Run]:
        return [row_to_run(r) for r in self._dict_rows(flt)]

    def _dict_rows(self, flt: RunFilter) -> Iterator[dict[str, Any]]:
        cur = self.rows(flt)
        cur.row_factory = None
        names = [d[0] for d in cur.description]
        return (dict(zip(names, t)) for t in cur)

    def count(self, flt: RunFilter = RunFilter()) -> int:
        """Runs matching `flt`, counted per database (through the view every row would be read; per table
        the system index answers alone)."""
        where, args = flt.where(origin=False)
        dbs = [db for db, origin in (("main", "user"), ("ref", "reference"))
               if db in self._dbs() and flt.origin in (None, origin)]
        # The index runs_system_op_fs is (system, op, api, layout, filesystem, kind). With a system, an
        # operation and a layout but no API, the layout cannot be sought past the API column, and every run
        # of the system's operation is read (twice the matching runs of a big system for --layout fpp).
        # Counted per API instead (the system's APIs found by skipping through the index, NULL counted
        # apart), each count seeks to its own matching runs: less than half the time on 1,000,000 runs.
        per_api = flt.system is not None and flt.op is not None and flt.api is None and flt.layout is not None
        total = 0
        for db in dbs:
            if not per_api:
                total += self.conn.execute(f"SELECT count(*) FROM {db}.runs{where}", args).fetchone()[0]
                continue
            for api in [None, *self._apis(db, flt.system, flt.op.lower())]:
                total += self.conn.execute(f"SELECT count(*) FROM {db}.runs{where} AND api IS ?",
                                           [*args, api]).fetchone()[0]
        return total

    def _apis(self, db: str, system: str, op: str) -> list[str]:
        """The APIs (not NULL) of a system's runs of one operation, each found by one seek in the index."""
        first = (f"SELECT api FROM {db}.runs WHERE system = ?1 COLLATE NOCASE AND op = ?2 AND {{}} "
                 "ORDER BY api LIMIT 1")
        sql = (f"WITH RECURSIVE apis(a) AS (SELECT ({first.format('api IS NOT NULL')}) UNION ALL "
               f"SELECT ({first.format('api > apis.a')}) FROM apis WHERE apis.a IS NOT NULL) "
               "SELECT a FROM apis WHERE a IS NOT NULL")
        return [r[0] for r in self.conn.execute(sql, (system, op))]

    def get(self, rid: str) -> Run:
        row = self.conn.execute("SELECT * FROM all_runs WHERE id = ?", (rid,)).fetchone()
        if row is None:
            row = self.conn.execute("SELECT * FROM all_runs WHERE id LIKE ? ESCAPE '\\' LIMIT 2",
                                    (like_escape(rid) + "%",)).fetchall()
            if len(row) != 1:
                raise UsageError(f"no run with id {rid!r}" if not row else f"id {rid!r} is ambiguous")
            row = row[0]
        return row_to_run(row)

    def records(self, flt: RunFilter = RunFilter()) -> list[dict[str, Any]]:
        """Runs as their documented JSON form (docs/json.md), each with its `origin`."""
        return [record(r) for r in self._dict_rows(flt)]

    def get_record(self, rid: str) -> dict[str, Any]:
        run = self.get(rid)
        row = self.conn.execute("SELECT * FROM all_runs WHERE id = ?", (run.id,)).fetchone()
        return record(dict(row))

    def _dbs(self) -> tuple[str, ...]:
        return ("main", "ref") if self.reference else ("main",)

    def systems(self) -> list[str]:
        """Every system with runs (from the per-system summary, not the runs)."""
        sql = " UNION ".join(f"SELECT system FROM {db}.system_fs WHERE n_runs > 0" for db in self._dbs())
        return [r[0] for r in self.conn.execute(sql + " ORDER BY system")]

    def system_filesystems(self, system: str) -> list[dict[str, Any]]:
        """The file systems a system's runs name (`fsname`, `fs_type`, `ost_count`: the largest stated,
        `n_runs`), in order of first appearance, the user's runs before the reference runs; read from the
        summary the KB keeps as runs change, so the cost does not grow with the number of runs."""
        out: dict[str, dict[str, Any]] = {}
        for db in self._dbs():
            rows = self.conn.execute(
                f"SELECT system, fsname, fs_type, ost_count, n_runs, stale, first_rowid FROM {db}.system_fs "
                "WHERE system = ? COLLATE NOCASE", (system,)).fetchall()
            stale = sorted({r[0] for r in rows if r[5]})
            if stale:
                fresh = [r + (0,) for s in stale for r in self._system_fs_rows(db, s)]
                self._store_system_fs(db, stale, fresh)
                rows = [r for r in rows if r[0] not in stale] + [
                    (s, f, t, o, n, 0, first) for s, f, t, o, n, first, _ in fresh]
            for _sys, fsname, fs_type, osts, n, _stale, _first in sorted(rows, key=lambda r: r[6]):
                if n <= 0:
                    continue
                prev = out.get(fsname)
                known = [x for x in (osts, prev and prev["ost_count"]) if x]
                out[fsname] = {"fsname": fsname, "fs_type": fs_type or (prev["fs_type"] if prev else None),
                               "ost_count": max(known) if known else None,
                               "n_runs": n + (prev["n_runs"] if prev else 0)}
        return list(out.values())

    def _system_fs_rows(self, db: str, system: str) -> list[tuple]:
        """The summary rows of one system computed from its runs (after deletions or a migration)."""
        fsname = FSNAME.format(r="runs")
        agg = self.conn.execute(
            f"SELECT {fsname} AS f, max(nullif(ost_count, 0)), count(*), min(rowid) FROM {db}.runs "
            "WHERE system = ? GROUP BY f", (system,)).fetchall()
        # the type is the last one stated, as when the runs are read in order (one max() picks the row)
        types = {r[0]: r[1] for r in self.conn.execute(
            f"SELECT {fsname} AS f, lower(fs_type), max(rowid) FROM {db}.runs "
            "WHERE system = ? AND nullif(fs_type, '') IS NOT NULL GROUP BY f", (system,))}
        return [(system, f, types.get(f), osts, n, first) for f, osts, n, first in agg]

    def _store_system_fs(self, db: str, systems: list[str], rows: list[tuple]) -> None:
        """Replace the summary rows of `systems`; a KB that cannot be written keeps them stale (recomputed
        per call, still correct)."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error:
            return
        try:
            for s in systems:
                self.conn.execute(f"DELETE FROM {db}.system_fs WHERE system = ?", (s,))
            self.conn.executemany(f"INSERT INTO {db}.system_fs (system, fsname, fs_type, ost_count, n_runs, "
                                  "first_rowid, stale) VALUES (?,?,?,?,?,?,?)", rows)
            self.conn.execute("COMMIT")
        except sqlite3.Error:
            rollback(self.conn)

    def comparisons(self, system: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM all_comparisons", []
        if system:
            sql, args = sql + " WHERE system = ? COLLATE NOCASE", [system]
        return [dict(r) for r in self.conn.execute(sql, args)]

    def stats(self) -> dict[str, Any]:
        """Counts per origin, system, op and kind, and the number of sources."""
        from .reference import snapshot_info
        q = self.conn.execute
        published = snapshot_info(self.conn, "ref") if self.reference else None
        if published is not None and published.get("sha256"):
            # the whole file read once: any byte altered since it was published (a snapshot published before
            # snapshots held their digest has none to check)
            from .integrity import verify_snapshot
            verify_snapshot(Path(self.reference), published["sha256"])
        by = lambda col: {str(k): n for k, n in q(  # noqa: E731
            f"SELECT {col}, count(*) FROM all_runs GROUP BY {col} ORDER BY {col}")}
        return {
            "path": self.file,
            "exists": self.path != ":memory:",
            "reference": self.reference,
            "published": published,
            "runs": q("SELECT count(*) FROM all_runs").fetchone()[0],
            "sources": q("SELECT count(*) FROM main.sources").fetchone()[0],
            "by_origin": by("origin"),
            "by_system": by("system"),
            "by_op": by("op"),
            "by_kind": by("kind"),
            "comparisons": q("SELECT count(*) FROM all_comparisons").fetchone()[0],
            "quarantined": q("SELECT count(*) FROM main.quarantine").fetchone()[0],
        }

    # ---- repair --------------------------------------------------------------------------------------------
    def select(self, ids: Iterable[str] = (), flt: RunFilter | None = None) -> list[dict[str, Any]]:
        """The user's runs matching every id prefix given (any of them) and the filter; UsageError if neither
        narrows the choice (a repair never means "everything" by accident) or a prefix matches nothing."""
        ids = [i.strip() for i in ids if i.strip()]
        flt = flt or RunFilter()
        narrowing = {k: v for k, v in flt.__dict__.items() if v is not None and k not in ("limit", "origin")}
        if not ids and not narrowing:
            raise UsageError("say which runs: give run ids (or unique prefixes), or a filter such as --source or --system")
        if flt.origin not in (None, "user"):
            raise UsageError("only the runs you imported can be changed (the reference data ships with ioadvisor)")
        where, args = RunFilter(**{**flt.__dict__, "origin": None, "limit": None}).where()
        sql = f"SELECT * FROM main.runs{where}"
        if ids:
            sql += (" AND " if where else " WHERE ") + "(" + " OR ".join(["id LIKE ? ESCAPE '\\'"] * len(ids)) + ")"
            args += [like_escape(i) + "%" for i in ids]
            for i in ids:
                if not self.conn.execute("SELECT 1 FROM main.runs WHERE id LIKE ? ESCAPE '\\'",
                                         (like_escape(i) + "%",)).fetchone():
                    ref = self.conn.execute("SELECT 1 FROM all_runs WHERE id LIKE ? ESCAPE '\\'",
                                            (like_escape(i) + "%",)).fetchone()
                    raise UsageError(f"run {i!r} is reference data, which cannot be changed" if ref
                                     else f"no run of yours with id {i!r}")
        return [dict(r) for r in self.conn.execute(sql + " ORDER BY rowid", args)]

    def delete(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """Remove these runs (from `select`) in one transaction; sources left without runs or comparisons go
        too, so their files can be imported again."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("DELETE FROM main.runs WHERE id = ?", [(r["id"],) for r in rows])
            gone = self._drop_empty_sources({r["source_hash"] for r in rows})
            self.conn.execute("COMMIT")
        except BaseException:
            rollback(self.conn)
            raise
        return {"deleted": len(rows), "sources_removed": gone}

    def relabel(self, rows: list[dict[str, Any]], *, system: str | None = None, filesystem: str | None = None,
                flags_of: Callable[[Run], tuple[str, ...]] | None = None) -> dict[str, Any]:
        """Rename the system and/or file system of these runs (from `select`) in one transaction. Ids follow
        the content; a relabelled run identical to one already there under the new name is merged into it.
        `flags_of` judges a renamed run's evidence flags again (the center of its new name may rate its file
        system, or its memory, otherwise than the old one)."""
        from ..model.validate import _name
        if system is None and filesystem is None:
            raise UsageError("say what to change: --to-system and/or --to-filesystem")
        if system is not None:
            _name(system, "system", required=True)
        if filesystem is not None:
            _name(filesystem, "filesystem", required=True)
        changes = {k: v for k, v in (("system", system), ("filesystem", filesystem)) if v is not None}
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("DELETE FROM main.runs WHERE id = ?", [(r["id"],) for r in rows])
            moved = [{**r, **changes} for r in rows]
            reflagged = _reflagged(moved, flags_of) if flags_of is not None else 0
            new_ids = content_ids(row_to_run(r) for r in moved)
            known = self._known_ids(new_ids)
            keep = [(r, rid) for r, rid in zip(moved, new_ids) if rid not in known]
            cols = RUN_COLUMNS
            new_rows = [tuple(rid if c == "id" else r[c] for c in cols) for r, rid in keep]
            self.conn.executemany(
                f"INSERT INTO main.runs ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})", new_rows)
            summary = _Summary()   # inserts update the per-system summary here, not by trigger
            summary.add(new_rows, 0)
            summary.store(self.conn)
            gone = self._drop_empty_sources({r["source_hash"] for r in rows})
            self.conn.execute("COMMIT")
        except BaseException:
            rollback(self.conn)
            raise
        return {"relabelled": len(keep), "merged": len(rows) - len(keep), "sources_removed": gone,
                "flags_changed": reflagged, "ids": {r["id"]: rid for r, rid in zip(rows, new_ids)}}

    def check_flags(self, flags_of: Callable[[Run], tuple[str, ...]], *, system: str,
                    apply: bool = False) -> list[dict[str, Any]]:
        """Judge the evidence flags of the user's runs of `system` again by `flags_of` (the center's evidence
        rules, `center.evidence.flags_of` with its center): one entry per run whose flags change, with the flags
        added and removed. With `apply`, the changes are stored in one transaction; otherwise nothing is
        written."""
        changes = []
        for row in self._dict_rows_main(RunFilter(system=system)):
            run = row_to_run(row)
            new = flags_of(run)
            if new != run.flags:
                changes.append({"id": run.id, "system": run.system, "filesystem": run.filesystem, "op": run.op,
                                "value": run.value, "unit": run.unit, "source": run.provenance.source,
                                "flags": list(new), "added": [f for f in new if f not in run.flags],
                                "removed": [f for f in run.flags if f not in new]})
        if apply and changes:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.executemany("UPDATE main.runs SET flags = ? WHERE id = ?",
                                      [(",".join(c["flags"]) or None, c["id"]) for c in changes])
                self.conn.execute("COMMIT")
            except BaseException:
                rollback(self.conn)
                raise
        return changes

    def _dict_rows_main(self, flt: RunFilter) -> Iterator[dict[str, Any]]:
        """The user's runs (not the reference data) matching `flt`, as dicts."""
        where, args = RunFilter(**{**flt.__dict__, "origin": None, "limit": None}).where()
        cur = self.conn.execute(f"SELECT *, 'user' AS origin FROM main.runs{where} ORDER BY rowid", args)
        names = [d[0] for d in cur.description]
        return (dict(zip(names, t)) for t in cur)

    def quarantined(self) -> list[dict[str, Any]]:
        """Runs an earlier version let in that fail today's validation, set aside when the KB was upgraded,
        each with its `reason`. They take no part in advice, docs or export."""
        return [dict(r) for r in self.conn.execute("SELECT * FROM main.quarantine ORDER BY rowid")]

    def delete_quarantined(self) -> int:
        """Remove the quarantined runs for good; their sources go too when nothing else is left of them."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            hashes = {r[0] for r in self.conn.execute("SELECT source_hash FROM main.quarantine")}
            n = self.conn.execute("DELETE FROM main.quarantine").rowcount
            self._drop_empty_sources(hashes)
            self.conn.execute("COMMIT")
        except BaseException:
            rollback(self.conn)
            raise
        return n

    def _drop_empty_sources(self, hashes: set[str]) -> int:
        n = 0
        for h in hashes:
            used = self.conn.execute("SELECT 1 FROM main.runs WHERE source_hash = ? UNION ALL "
                                     "SELECT 1 FROM main.comparisons WHERE source_hash = ? UNION ALL "
                                     "SELECT 1 FROM main.quarantine WHERE source_hash = ? LIMIT 1",
                                     (h, h, h)).fetchone()
            if not used:
                n += self.conn.execute("DELETE FROM main.sources WHERE hash = ?", (h,)).rowcount
        return n
