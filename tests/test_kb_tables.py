"""The KB's tables are made by its migrations (kb/schema.py) and nowhere else: a table created where it is first
written exists in some KBs and not in others, and is invisible to the schema version, to `kb publish` and to
the reference KB's cache key."""
from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ioadvisor.advise import fits
from ioadvisor.errors import KBError
from ioadvisor.kb import KB
from ioadvisor.kb.schema import READ_AS_IS_FROM, SCHEMA_VERSION
from ioadvisor.model.validate import make_run

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "ioadvisor" / "kb" / "schema.py"
# a table of the KB (not a TEMP one, which lives and dies with one connection)
CREATE = re.compile(r"\bCREATE\s+(?:VIRTUAL\s+)?TABLE\b", re.IGNORECASE)
NEW_TABLES = ("advise_fits", "advise_evidence", "published")


def _run(value: float, nodes: int = 1) -> object:
    return make_run(value=value, unit="MiB/s", system="Mine", filesystem="lus", op="write", api="POSIX",
                    layout="fpp", nodes=nodes, ranks=4 * nodes, stripe_count=1)


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as c:
        return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_no_table_is_created_outside_the_migrations():
    sources = [p for d in ("ioadvisor", "benchmarks") for p in sorted((ROOT / d).rglob("*.py")) if p != SCHEMA]
    assert len(sources) > 80
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in sources
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if CREATE.search(line)]
    assert not found, "tables created outside kb/schema.py's migrations:\n" + "\n".join(found)
    # the pattern finds what it is for (or the test above passes on nothing)
    assert CREATE.search('conn.execute("create table t (x)")') and not CREATE.search("CREATE TEMP TABLE t (x)")


def test_a_new_kb_has_every_table_before_anything_is_written(kb_path):
    KB.open(kb_path).close()
    assert set(NEW_TABLES) <= _tables(kb_path)


def _v8(kb_path: Path, drop: bool) -> None:
    """Set the KB back to schema v8, as the version before these tables became a migration left it: with the
    fits tables that its advice made (drop=False), or without them (drop=True: no advice ran)."""
    with sqlite3.connect(kb_path) as c:
        c.execute("DROP TABLE published")
        if drop:
            c.execute("DROP TABLE advise_fits")
            c.execute("DROP TABLE advise_evidence")
        c.execute("PRAGMA user_version = 8")
    c.close()


def test_an_older_kb_keeps_the_fits_its_advice_stored(kb_path, monkeypatch):
    """A KB whose advice created the tables on the fly is upgraded around them: its stored fits still serve (no
    refit) and its runs are untouched."""
    fits._CACHE.clear()
    with KB.open(kb_path) as kb:
        kb.add_runs([_run(100.0), _run(180.0, 2)], source="a", source_hash="a", fmt="csv", importer="test/1")
        stored = fits.system_fits(kb, "Mine")
        fits.system_evidence(kb, "Mine")
    assert stored
    _v8(kb_path, drop=False)
    with sqlite3.connect(kb_path) as c:
        kept = c.execute("SELECT system, signature, fits FROM advise_fits").fetchall()
        runs = c.execute("SELECT * FROM runs ORDER BY id").fetchall()
    c.close()
    fits._CACHE.clear()                                   # another process, of this version
    fitted: list[str] = []
    real = fits.fit_all
    monkeypatch.setattr(fits, "fit_all", lambda r, *a: fitted.append("fit") or real(r, *a))
    with KB.open(kb_path) as kb:
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        again = fits.system_fits(kb, "Mine")
        assert [tuple(r) for r in kb.conn.execute("SELECT system, signature, fits FROM advise_fits")] == kept
        assert [tuple(r) for r in kb.conn.execute("SELECT * FROM runs ORDER BY id")] == runs
    assert fitted == [] and again.keys() == stored.keys()


def _immutable(path: Path) -> None:
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("cannot make a file immutable here")


def test_an_older_kb_that_cannot_be_written_is_read_as_it_is(kb_path):
    """A v8 KB without the fits tables on a file nobody may write: read as it is (`kb stats`, `advise`), never
    refused for the tables it lacks, its bytes unchanged; an older one (v7) is refused as before."""
    with KB.open(kb_path) as kb:
        kb.add_runs([_run(100.0), _run(180.0, 2)], source="a", source_hash="a", fmt="csv", importer="test/1")
        kb.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _v8(kb_path, drop=True)
    old = kb_path.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = [str(Path(sys.executable).parent / "ioadvise")]
    _immutable(kb_path)
    try:
        p = subprocess.run(cli + ["kb", "stats", "--json", "--kb", str(kb_path)], capture_output=True, text=True,
                           env=env, timeout=120)
        assert p.returncode == 0 and '"user"' in p.stdout, p.stderr
        p = subprocess.run(cli + ["advise", "--kb", str(kb_path), "--system", "Mine", "--nodes", "2",
                                  "--ranks-per-node", "4", "--bytes-per-rank", "1GiB", "--json"],
                           capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert kb_path.read_bytes() == old
    finally:
        subprocess.run(["chattr", "-i", str(kb_path)], capture_output=True)
    assert READ_AS_IS_FROM == 8 < SCHEMA_VERSION
    with sqlite3.connect(kb_path) as c:
        c.execute("PRAGMA user_version = 7")
    c.close()
    _immutable(kb_path)
    try:
        with pytest.raises(KBError, match="not a usable knowledge base"):
            KB.open(kb_path, create=False)
    finally:
        subprocess.run(["chattr", "-i", str(kb_path)], capture_output=True)


def test_a_snapshot_published_before_is_read_and_one_older_refused(tmp_path, monkeypatch):
    """A center's snapshot published with schema v8 (no fits tables: users never store fits in it) stays the
    layer under users' KBs; one of v7 is refused with the fix."""
    from ioadvisor.kb.publish import publish
    staff, out = tmp_path / "staff.sqlite", tmp_path / "kb.sqlite"
    with KB.open(staff) as kb:
        kb.add_runs([_run(100.0)], source="a", source_hash="a", fmt="csv", importer="test/1")
    publish(staff, out)
    assert set(NEW_TABLES) <= _tables(out)
    with sqlite3.connect(out) as c:
        c.execute("DROP TABLE advise_fits")
        c.execute("DROP TABLE advise_evidence")
        c.execute("ALTER TABLE published DROP COLUMN sha256")      # snapshots hold their digest since v10
        c.execute("PRAGMA user_version = 8")
    c.close()
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(out))
    with KB.open(tmp_path / "user.sqlite") as kb:
        assert kb.stats()["published"]["snapshot"]
        assert [r.value for r in kb.runs() if r.system == "Mine"] == [100.0]
    with sqlite3.connect(out) as c:
        c.execute("PRAGMA user_version = 7")
    c.close()
    with pytest.raises(KBError, match=r"schema v7, this ioadvisor reads v8 to v10; publish it again"):
        KB.open(tmp_path / "user.sqlite")


def test_a_working_kb_is_not_taken_for_a_snapshot(tmp_path):
    """Every KB has the (empty) `published` table now: only a row in it makes a snapshot."""
    from ioadvisor.kb.publish import publish
    staff, out = tmp_path / "staff.sqlite", tmp_path / "kb.sqlite"
    KB.open(staff).close()
    res = publish(staff, out)
    with KB.open(tmp_path / "user.sqlite") as kb:
        assert kb.stats()["published"] is None
    with sqlite3.connect(out) as c:
        assert c.execute("SELECT snapshot FROM published").fetchall() == [(res["snapshot"],)]
    c.close()
    shutil.copy(staff, tmp_path / "again.sqlite")
    assert publish(tmp_path / "again.sqlite", tmp_path / "kb2.sqlite")["snapshot"] != res["snapshot"]


# a statement that writes the `sources` table (which names every run's source)
WRITES_SOURCES = re.compile(r"\b(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM)\s+(?:main\.)?sources\b",
                            re.IGNORECASE)


def test_only_the_kb_store_writes_the_sources_table():
    """`kb import`, the reference build and `archive scan` record a source through the KB's one method
    (KB.add_source): a second writer would keep its own rules for when a source is recorded."""
    store = ROOT / "ioadvisor" / "kb" / "store.py"
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "ioadvisor").rglob("*.py")) if p != store
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if WRITES_SOURCES.search(line)]
    assert not found, "the sources table written outside kb/store.py: " + ", ".join(found)
    assert WRITES_SOURCES.search('"INSERT INTO main.sources VALUES (?,?)"')
    assert WRITES_SOURCES.search("DELETE FROM sources WHERE hash = ?")
    assert not WRITES_SOURCES.search("SELECT 1 FROM main.sources WHERE hash = ?")


def _master(conn: sqlite3.Connection) -> list[tuple]:
    return [tuple(r) for r in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid")]


def test_an_empty_kb_made_at_once_is_the_kb_the_migrations_make(tmp_path):
    """An empty database is given schema.CURRENT_FILE's statements in one step instead of each migration in turn: the two must
    not differ in any table, column, index or trigger (sqlite_master's statements and their order), in the
    version, nor in a row (every table empty both ways)."""
    from ioadvisor.kb import schema
    assert schema.current() == schema.stepped_schema(), \
        "kb/schema.sql is not what the migrations make: regenerate it with schema.write_current()"
    stepped = sqlite3.connect(tmp_path / "stepped.sqlite")
    for step in schema.MIGRATIONS:                 # what migrate() did for an empty KB before CURRENT_FILE
        if callable(step):
            step(stepped)
        else:
            for stmt in schema._statements(step):
                stepped.execute(stmt)
    stepped.commit()
    with KB.open(tmp_path / "new.sqlite") as kb:
        made = kb.conn
        assert made.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(schema.MIGRATIONS)
        assert _master(made) == _master(stepped) and len(_master(made)) > len(schema.current()) >= 20
        for (table,) in stepped.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            assert [tuple(r) for r in made.execute(f"PRAGMA table_info({table})")] == \
                   [tuple(r) for r in stepped.execute(f"PRAGMA table_info({table})")]
            assert made.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
            assert stepped.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    stepped.close()


def test_a_kb_begun_by_the_migrations_is_finished_by_them(tmp_path):
    """A KB at version 1 (another process's first migration, or an old KB) is not taken for an empty one: it is
    migrated step by step, and ends as a new KB does."""
    from ioadvisor.kb import schema
    old = tmp_path / "v1.sqlite"
    with sqlite3.connect(old) as c:
        for stmt in schema._statements(schema.MIGRATIONS[0]):
            c.execute(stmt)
        c.execute("PRAGMA user_version = 1")
    c.close()
    with KB.open(old) as kb, KB.open(tmp_path / "new.sqlite") as new:
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert {r[:3] for r in _master(kb.conn)} == {r[:3] for r in _master(new.conn)}
