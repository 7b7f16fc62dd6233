"""The reference KB: the seeds' published numbers (data/reference/*.csv) and comparisons, built into a cached
sqlite file keyed by the content of the data files, so it is rebuilt whenever the data change. A center that
publishes its own KB (`ioadvise kb publish`, kb/publish.py) names it in `IOADVISE_CENTER_KB`: that snapshot,
which holds the reference data too, is then the layer under every user's KB instead."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ..errors import ImportFormatError, KBError
from ..resources import data_dir
from ..util import cache_dir, private_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable


CENTER_KB_ENV = "IOADVISE_CENTER_KB"


def published_kb_path() -> Path | None:
    """The center's published KB named by `IOADVISE_CENTER_KB`, or None when the variable is unset or empty."""
    env = os.environ.get(CENTER_KB_ENV)
    return Path(env) if env else None


def snapshot_info(conn: sqlite3.Connection, db: str) -> dict[str, str] | None:
    """The snapshot attached as `db` (its id, the time it was published and the sha256 of its bytes, None in
    one published before snapshots held it), or None if it is not a published KB. (The staff KB it came from
    is not published.)"""
    try:
        cols = {r[1] for r in conn.execute(f"PRAGMA {db}.table_info(published)")}
        digest = "sha256" if "sha256" in cols else "NULL"
        row = conn.execute(f"SELECT snapshot, published_at, {digest} FROM {db}.published").fetchone()
    except sqlite3.Error:
        return None
    return dict(zip(("snapshot", "published_at", "sha256"), row)) if row else None


def snapshot_id(conn: sqlite3.Connection, db: str) -> str | None:
    info = snapshot_info(conn, db)
    return info["snapshot"] if info else None


def _reference_files() -> list[Path]:
    d = data_dir() / "reference"
    return sorted(p for p in d.glob("*.csv")) if d.is_dir() else []


def reference_kb_path(new_kb: Callable[[str], Any]) -> Path:
    """Path of the built reference KB, building it first if the data changed, into the empty KB (without a
    reference layer) that `new_kb(path)` opens."""
    import hashlib              # here, not at import: a published snapshot's users build no reference KB
    files = _reference_files()
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    from . import schema
    # the schema's text, not only its version: two builds with different migrations of the same number (a
    # development branch) must not share a cached reference KB whose columns differ; a migration written in
    # Python is covered by the module's own text
    h.update(f"schema{schema.SCHEMA_VERSION}".encode())
    h.update("\n".join(m for m in schema.MIGRATIONS if isinstance(m, str)).encode())
    h.update(Path(schema.__file__).read_bytes())
    name = f"reference-{h.hexdigest()[:16]}.sqlite"
    cache = cache_dir()
    if cache is not None:
        target = cache / name
        if target.is_file():
            return target
        try:
            _build(files, target, new_kb)
            return target
        except (OSError, sqlite3.OperationalError, KBError):
            pass                    # a cache that cannot be written (read-only, full): built privately instead
    return _private_build(files, name, new_kb)


#: reference KBs built outside the cache in this process, by name: built once, removed when the process ends
_PRIVATE: dict[str, Path] = {}


def _private_build(files: list[Path], name: str, new_kb: Callable[[str], Any]) -> Path:
    """The reference KB `name` built into a temporary directory of this process's own, removed at exit."""
    if name not in _PRIVATE:
        target = private_dir("ioadvise-reference-") / name
        _build(files, target, new_kb)
        _PRIVATE[name] = target
    return _PRIVATE[name]


def _build(files: list[Path], target: Path, new_kb: Callable[[str], Any]) -> None:
    import csv
    import hashlib
    import io
    import tempfile

    from .. import importers
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    os.close(fd)
    os.unlink(tmp)
    try:
        kb = new_kb(tmp)
        csv_imp = importers.get("csv")
        for f in files:
            data = f.read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            if f.name == "comparisons.csv":
                rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
                kb.add_runs([], source=f.name, source_hash=digest, fmt="comparisons", importer="comparisons/1",
                            comparisons=rows)
                continue
            ctx = importers.ImportContext(source=f.name, kind="reference")
            if len(data.strip().splitlines()) < 2:
                continue  # a system whose seed gives only figures and comparisons: no numbers to load
            try:
                runs = csv_imp.parse(data, ctx)
            except ImportFormatError as e:
                raise e.at(str(f)) from None
            kb.add_runs(runs, source=f"data/reference/{f.name}", source_hash=digest, fmt="csv", importer="csv/1")
        kb.conn.execute("PRAGMA journal_mode = DELETE")
        kb.close()
        os.replace(tmp, target)
    finally:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(tmp + suffix):
                os.unlink(tmp + suffix)
