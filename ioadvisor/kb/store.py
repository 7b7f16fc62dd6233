"""The knowledge base: a user KB (sqlite, WAL) with the shipped reference KB attached underneath.

Every import is one transaction; a source already imported (same content hash) adds nothing.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import ImportFormatError, KBError, UsageError
from ..model.run import PROV_FIELDS, RUN_FIELDS, Provenance, Run, run_id
from .schema import COMPARISON_COLUMNS, RUN_COLUMNS, migrate

BUSY_TIMEOUT_MS = 60_000


def default_kb_path() -> Path:
    """`IOADVISE_KB`, else `$XDG_DATA_HOME/ioadvisor/kb.sqlite` (~/.local/share by default)."""
    env = os.environ.get("IOADVISE_KB")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ioadvisor" / "kb.sqlite"


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    conn.row_factory = sqlite3.Row
    return conn


def _run_row(run: Run, rid: str, source_hash: str, seq: int) -> tuple:
    p = run.provenance
    d: dict[str, Any] = {f: getattr(run, f) for f in RUN_COLUMNS if hasattr(run, f) and f != "id"}
    d.update({f: getattr(p, f) for f in PROV_FIELDS if f in RUN_COLUMNS})
    d["id"], d["source_hash"], d["seq"] = rid, source_hash, seq
    d["hints"] = json.dumps(dict(sorted(run.hints.items()))) if run.hints else None
    for b in ("collective", "direct"):
        d[b] = None if d[b] is None else int(d[b])
    return tuple(d.get(c) for c in RUN_COLUMNS)


_PROV_COLS = tuple(f for f in PROV_FIELDS if f in RUN_COLUMNS and f != "source_hash")
assert set(_PROV_COLS) | {"source_hash"} == set(PROV_FIELDS), "every Provenance field needs a runs column"
_RUN_ATTRS = tuple(c for c in RUN_COLUMNS if c not in PROV_FIELDS and c not in ("source_hash", "seq", "id"))
assert set(_RUN_ATTRS) == set(RUN_FIELDS), "every Run field needs a runs column"


def row_to_run(row: sqlite3.Row | dict) -> Run:
    """A `runs` row back to a Run."""
    kw = {c: row[c] for c in _RUN_ATTRS}
    hints = kw["hints"]
    kw["hints"] = json.loads(hints) if hints else {}
    for b in ("collective", "direct"):
        if kw[b] is not None:
            kw[b] = bool(kw[b])
    # Rows come from our own schema, so every field is present and typed: fill the frozen instances' dicts
    # directly instead of running the generated __init__ (about 5x faster on large result sets).
    prov = object.__new__(Provenance)
    prov.__dict__.update({f: row[f] for f in _PROV_COLS}, source_hash=row["source_hash"] or "")
    run = object.__new__(Run)
    run.__dict__.update(kw, provenance=prov, id=row["id"])
    return run


def _record(row: dict[str, Any]) -> dict[str, Any]:
    """A `runs` row as its documented JSON form, built directly (no dataclass round trip)."""
    out = {c: row[c] for c in _RUN_ATTRS}
    out["hints"] = json.loads(out["hints"]) if out["hints"] else {}
    for b in ("collective", "direct"):
        if out[b] is not None:
            out[b] = bool(out[b])
    out["provenance"] = {f: row[f] for f in PROV_FIELDS}
    out["id"], out["origin"] = row["id"], row["origin"]
    return out


@dataclass(frozen=True)
class ImportResult:
    path: str
    format: str
    runs: int
    skipped: bool          # already imported (same content)


@dataclass(frozen=True)
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

    def where(self) -> tuple[str, list[Any]]:
        clauses, args = [], []
        for col in ("system", "filesystem", "op", "layout", "kind", "origin"):
            v = getattr(self, col)
            if v is not None:
                # system names are matched case-insensitively (indexed so); the rest are stored canonical
                clauses.append(f"{col} = ? COLLATE NOCASE" if col in ("system", "filesystem") else f"{col} = ?")
                args.append(v if col in ("system", "filesystem", "origin") else v.lower())
        if self.api is not None:
            from ..model.run import norm_api
            clauses.append("api = ?")
            args.append(norm_api(self.api))
        if self.source:
            clauses.append("source LIKE ?")
            args.append(f"%{self.source}%")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", args


class KB:
    """A user knowledge base with the reference KB attached read-only as `ref`."""

    def __init__(self, conn: sqlite3.Connection, path: str, reference: str | None):
        self.conn, self.path, self.reference = conn, path, reference

    @classmethod
    def open(cls, path: str | Path | None = None, *, create: bool = True, reference: bool = True) -> "KB":
        """Open (and migrate) the KB at `path` (default: `default_kb_path()`).

        With create=False a missing KB is not created: an empty in-memory one stands in.
        """
        p = Path(path) if path is not None else default_kb_path()
        target = str(p)
        if not p.exists():
            if create:
                try:
                    p.parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise KBError(f"{p}: cannot create knowledge base directory: {e.strerror}") from None
            else:
                target = ":memory:"
        elif p.is_dir():
            raise KBError(f"{p}: is a directory, not a knowledge base")
        try:
            conn = _connect(target)
            migrate(conn, target)
        except sqlite3.DatabaseError as e:
            raise KBError(f"{p}: not a usable knowledge base ({e})") from None
        ref_path = None
        if reference:
            from .reference import reference_kb_path
            ref_path = str(reference_kb_path())
            conn.execute("ATTACH DATABASE ? AS ref", (ref_path,))
        union = "SELECT 'user' AS origin, * FROM main.{t}"
        if ref_path:
            union += " UNION ALL SELECT 'reference' AS origin, * FROM ref.{t}"
        conn.execute("CREATE TEMP VIEW all_runs AS " + union.format(t="runs"))
        conn.execute("CREATE TEMP VIEW all_comparisons AS " + union.format(t="comparisons"))
        return cls(conn, target, ref_path)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "KB":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writing -------------------------------------------------------------------------------------------
    def add_runs(self, runs: list[Run], *, source: str, source_hash: str, fmt: str, importer: str,
                 comparisons: Iterable[dict[str, Any]] = ()) -> ImportResult:
        """Insert the runs of one source in one transaction; nothing if the source is already there."""
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.conn.execute("SELECT 1 FROM main.sources WHERE hash = ?", (source_hash,)).fetchone():
                self.conn.execute("ROLLBACK")
                return ImportResult(source, fmt, 0, True)
            self.conn.execute("INSERT INTO main.sources VALUES (?,?,?,?,?,?)",
                              (source_hash, source, fmt, importer, now, len(runs)))
            placeholders = ",".join("?" * len(RUN_COLUMNS))
            self.conn.executemany(
                f"INSERT INTO main.runs ({','.join(RUN_COLUMNS)}) VALUES ({placeholders})",
                (_run_row(r, run_id(source_hash, i), source_hash, i) for i, r in enumerate(runs)))
            cols = ("source_hash",) + COMPARISON_COLUMNS
            self.conn.executemany(
                f"INSERT INTO main.comparisons ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                ((source_hash,) + tuple(c.get(k) or None for k in COMPARISON_COLUMNS) for c in comparisons))
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return ImportResult(source, fmt, len(runs), False)

    def import_file(self, path: str | Path, fmt: str = "auto", *, system: str | None = None,
                    filesystem: str | None = None, kind: str = "benchmark") -> ImportResult:
        """Parse one file with the named (or detected) importer and add its runs as one transaction."""
        from .. import importers
        p = Path(path)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            raise UsageError(f"{p}: no such file") from None
        except IsADirectoryError:
            raise UsageError(f"{p}: is a directory") from None
        except OSError as e:
            raise UsageError(f"{p}: cannot read: {e.strerror}") from None
        if not data:
            raise ImportFormatError("empty file", str(p))
        imp = importers.detect(data[: importers.SNIFF_BYTES], str(p)) if fmt == "auto" else importers.get(fmt)
        ctx = importers.ImportContext(source=str(p), system=system, filesystem=filesystem, kind=kind)
        try:
            runs = imp.parse(data, ctx)
        except ImportFormatError as e:
            raise e if e.path else e.at(str(p)) from None
        if not runs:
            raise ImportFormatError(f"no measured results found ({imp.name} format)", str(p))
        digest = hashlib.sha256(data).hexdigest()
        return self.add_runs(runs, source=str(p), source_hash=digest, fmt=imp.name, importer=f"{imp.name}/{imp.version}")

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
        where, args = flt.where()
        return self.conn.execute(f"SELECT count(*) FROM all_runs{where}", args).fetchone()[0]

    def get(self, rid: str) -> Run:
        row = self.conn.execute("SELECT * FROM all_runs WHERE id = ?", (rid,)).fetchone()
        if row is None:
            row = self.conn.execute("SELECT * FROM all_runs WHERE id LIKE ? LIMIT 2", (rid + "%",)).fetchall()
            if len(row) != 1:
                raise UsageError(f"no run with id {rid!r}" if not row else f"id {rid!r} is ambiguous")
            row = row[0]
        return row_to_run(row)

    def records(self, flt: RunFilter = RunFilter()) -> list[dict[str, Any]]:
        """Runs as their documented JSON form (docs/json.md), each with its `origin`."""
        return [_record(r) for r in self._dict_rows(flt)]

    def get_record(self, rid: str) -> dict[str, Any]:
        run = self.get(rid)
        row = self.conn.execute("SELECT * FROM all_runs WHERE id = ?", (run.id,)).fetchone()
        return _record(dict(row))

    def systems(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT system FROM all_runs ORDER BY system")]

    def comparisons(self, system: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM all_comparisons", []
        if system:
            sql, args = sql + " WHERE system = ? COLLATE NOCASE", [system]
        return [dict(r) for r in self.conn.execute(sql, args)]

    def stats(self) -> dict[str, Any]:
        """Counts per origin, system, op and kind, and the number of sources."""
        q = self.conn.execute
        by = lambda col: {str(k): n for k, n in q(  # noqa: E731
            f"SELECT {col}, count(*) FROM all_runs GROUP BY {col} ORDER BY {col}")}
        return {
            "path": self.path,
            "reference": self.reference,
            "runs": q("SELECT count(*) FROM all_runs").fetchone()[0],
            "sources": q("SELECT count(*) FROM main.sources").fetchone()[0],
            "by_origin": by("origin"),
            "by_system": by("system"),
            "by_op": by("op"),
            "by_kind": by("kind"),
            "comparisons": q("SELECT count(*) FROM all_comparisons").fetchone()[0],
        }
