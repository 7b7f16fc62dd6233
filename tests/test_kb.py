"""The knowledge base: transactions, idempotency, layering over the reference data, concurrency."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ioadvisor.errors import ImportFormatError, KBError
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter
from ioadvisor.importers.csv import export_csv
from ioadvisor.kb.schema import SCHEMA_VERSION

HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")


def write_csv(path, rows):
    path.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    return path


def test_import_is_one_transaction_and_idempotent(tmp_path, kb_path):
    f = write_csv(tmp_path / "a.csv", [
        "x,sysA,lustre,8,write,MPI-IO,shared,true,2,8,1048576,4194304,4,1048576,1000,MB/s,",
        "x,sysA,lustre,8,read,POSIX,fpp,,2,8,1048576,4194304,1,1048576,2,GiB/s,note",
    ])
    with KB.open(kb_path) as kb:
        r1 = import_file(kb, f)
        r2 = import_file(kb, f)
        assert (r1.runs, r1.skipped) == (2, False)
        assert (r2.runs, r2.skipped) == (0, True)
        runs = kb.runs(RunFilter(system="sysA", origin="user"))
    assert len(runs) == 2
    w = next(r for r in runs if r.op == "write")
    assert w.api == "MPIIO" and w.collective is True and w.layout == "shared"
    assert w.value == pytest.approx(1000e6 / 2**20) and w.unit == "MiB/s"
    assert (w.value_given, w.unit_given) == (1000, "MB/s")
    rd = next(r for r in runs if r.op == "read")
    assert rd.value == 2048 and rd.collective is None


@pytest.mark.parametrize("row,msg", [
    ("x,sysA,lustre,8,write,POSIX,fpp,,1,1,,,,,-5,MB/s,", "negative"),
    ("x,sysA,lustre,8,write,POSIX,fpp,,1,1,,,,,12,furlongs,", "unknown unit"),
    ("x,sysA,lustre,8,write,POSIX,fpp,,1,1,,,,,,MB/s,", "value is empty"),
    ("x,sysA,lustre,8,write,POSIX,diagonal,,1,1,,,,,5,MB/s,", "layout"),
    ("x,sysA,lustre,8,write,POSIX,fpp,,one,1,,,,,5,MB/s,", "nodes"),
])
def test_bad_rows_name_file_and_line_and_import_nothing(tmp_path, kb_path, row, msg):
    good = "x,sysA,lustre,8,write,POSIX,fpp,,1,1,,,,,5,MB/s,"
    f = write_csv(tmp_path / "bad.csv", [good, row])
    with KB.open(kb_path) as kb:
        with pytest.raises(ImportFormatError) as e:
            import_file(kb, f)
        assert f"bad.csv:3:" in str(e.value) and msg in str(e.value)
        assert kb.count(RunFilter(origin="user")) == 0


def test_foreign_and_truncated_files(tmp_path, kb_path, samples):
    png = tmp_path / "x.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    trunc = tmp_path / "t.csv"
    trunc.write_text(HEADER + "\nx,sysA,lustre,8,write,POSIX,fpp\n")
    with KB.open(kb_path) as kb:
        for f in (png, trunc):
            with pytest.raises(ImportFormatError) as e:
                import_file(kb, f)
            assert f.name in str(e.value)
        assert kb.count(RunFilter(origin="user")) == 0


def test_reference_data_is_underneath_every_kb(kb_path):
    with KB.open(kb_path) as kb:
        systems = kb.systems()
        ref = kb.runs(RunFilter(origin="reference"))
    assert "HA8000" in systems
    assert ref and all(r.provenance.kind == "reference" for r in ref)
    # every reference number names the seed and the place in it
    assert all(r.provenance.source.endswith(".txt") and r.provenance.citation for r in ref)


def test_export_round_trips(tmp_path, kb_path):
    with KB.open(kb_path) as kb:
        ref = kb.runs(RunFilter(origin="reference"))
    text = export_csv(ref)
    out = tmp_path / "export.csv"
    out.write_text(text)
    other = tmp_path / "other.sqlite"
    with KB.open(other, reference=False) as kb2:
        import_file(kb2, out)
        back = kb2.runs()
    assert len(back) == len(ref)
    key = lambda r: str((r.system, r.filesystem, r.op, r.nodes, r.ranks, round(r.value, 6), r.provenance.citation))
    assert sorted(map(key, back)) == sorted(map(key, ref))
    for a, b in zip(sorted(back, key=key), sorted(ref, key=key)):
        assert a.ci95_low == pytest.approx(b.ci95_low) if b.ci95_low is not None else a.ci95_low is None


def test_newer_schema_is_refused(kb_path):
    KB.open(kb_path).close()
    import sqlite3
    c = sqlite3.connect(kb_path)
    c.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    c.commit()
    c.close()
    with pytest.raises(KBError, match="newer"):
        KB.open(kb_path)


def _csv_with(tmp_path, name, n, system):
    rows = [f"{name},{system},lustre,8,write,POSIX,fpp,,1,{i + 1},,,,,{i + 1},MB/s," for i in range(n)]
    return write_csv(tmp_path / f"{name}.csv", rows)


def test_a_new_kb_has_large_pages_and_an_older_kb_keeps_its_own(tmp_path):
    """A KB made now is laid out in PAGE_SIZE pages (16 KiB); a KB made before, in SQLite's 4 KiB, must NOT
    have its page size changed by opening it and importing into it (its pages would no longer line up), and
    must take the runs as before."""
    import sqlite3
    from ioadvisor.kb.store import PAGE_SIZE

    def page_size(p):
        with sqlite3.connect(p) as c:
            return c.execute("PRAGMA page_size").fetchone()[0]

    new = tmp_path / "new.sqlite"
    with KB.open(new) as kb:
        import_file(kb, _csv_with(tmp_path, "a", 3, "sysN"))
    assert (page_size(new), PAGE_SIZE) == (16384, 16384)
    old = tmp_path / "old.sqlite"
    c = sqlite3.connect(old)
    c.execute("PRAGMA page_size = 4096")
    c.execute("PRAGMA journal_mode = WAL")          # the file's header written: 4 KiB pages, no table yet
    c.close()
    with KB.open(old) as kb:
        import_file(kb, _csv_with(tmp_path, "b", 3, "sysO"))
        assert kb.count(RunFilter(origin="user")) == 3
    assert page_size(old) == 4096


def test_eight_concurrent_importers_lose_nothing(tmp_path, kb_path):
    files = [_csv_with(tmp_path, f"f{i}", 200, f"sys{i}") for i in range(8)]
    script = ("import sys; from ioadvisor.kb import KB; from ioadvisor.ingest import import_file; "
              "import_file(KB.open(sys.argv[1]), sys.argv[2])")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(kb_path), str(f)]) for f in files]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    with KB.open(kb_path) as kb:
        assert kb.count(RunFilter(origin="user")) == 8 * 200
        assert kb.stats()["sources"] == 8


def test_processes_opening_one_new_kb_at_the_same_instant_all_open_it(tmp_path):
    """Four processes open the same not-yet-existing KB at one instant, five times over: none fails. SQLite does
    not wait for a lock to switch a new database to WAL, so without a retry one in four of them failed at once
    with "database is locked" (two `archive scan`s started together into a new KB were refused so)."""
    script = textwrap.dedent("""
        import sys, time
        from ioadvisor.kb import KB
        start = float(sys.argv[2])
        time.sleep(max(0.0, start - time.time()))
        KB.open(sys.argv[1]).close()
    """)
    for n in range(5):
        kb = tmp_path / f"new{n}.sqlite"
        start = time.time() + 1.0     # after every interpreter has started
        procs = [subprocess.Popen([sys.executable, "-c", script, str(kb), str(start)], stderr=subprocess.PIPE,
                                  text=True) for _ in range(4)]
        errs = [p.communicate(timeout=120)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, errs
        with KB.open(kb) as store:
            assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_killed_import_leaves_kb_consistent(tmp_path, kb_path):
    KB.open(kb_path).close()
    big = _csv_with(tmp_path, "big", 50_000, "sysK")
    # the child signals when it is inside the transaction, then gets killed
    script = textwrap.dedent("""
        import sys, os
        from ioadvisor.ingest import import_file
        from ioadvisor.kb import KB
        kb = KB.open(sys.argv[1])
        orig = kb.conn
        class Slow:
            def __getattr__(self, k): return getattr(orig, k)
            def executemany(self, sql, rows):
                def gen():
                    for i, r in enumerate(rows):
                        if i == 1000:
                            open(sys.argv[3], "w").close()
                            import time; time.sleep(60)
                        yield r
                return orig.executemany(sql, gen())
            def execute(self, *a): return orig.execute(*a)
        kb.conn = Slow()
        import_file(kb, sys.argv[2])
    """)
    flag = tmp_path / "inside"
    p = subprocess.Popen([sys.executable, "-c", script, str(kb_path), str(big), str(flag)])
    for _ in range(300):
        if flag.exists():
            break
        time.sleep(0.1)
    assert flag.exists(), "child never reached the middle of the import"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    with KB.open(kb_path) as kb:
        assert kb.count(RunFilter(origin="user")) == 0
        assert kb.stats()["sources"] == 0
        assert kb.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        r = import_file(kb, big)   # and the same file imports fine afterwards
        assert r.runs == 50_000


def test_a_version_1_kb_is_migrated_and_keeps_its_comparisons(tmp_path):
    import sqlite3
    from ioadvisor.kb.schema import MIGRATIONS, SCHEMA_VERSION
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("INSERT INTO sources VALUES ('h', 'c.csv', 'comparisons', 'comparisons/1', 'now', 0)")
    conn.execute("INSERT INTO comparisons (source_hash, system, op, factor, better, worse) "
                 "VALUES ('h', 'X', 'write', 'layout', 'fpp', 'shared')")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with KB.open(path, reference=False) as kb:
        assert kb.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 2
        (c,) = kb.comparisons("X")
        assert (c["better"], c["nodes_min"], c["nodes_max"]) == ("fpp", None, None)


def test_a_write_to_the_user_kb_does_not_lock_the_shared_reference_kb(kb_path):
    """Every process of a user attaches the same cached reference KB: it is attached read-only, so one
    process's write transaction (an import, an archive scan's batch) never blocks another's."""
    import sqlite3 as _sqlite3
    with KB.open(kb_path) as kb:
        assert kb.conn.execute("SELECT count(*) FROM ref.runs").fetchone()[0] > 0
        kb.conn.execute("BEGIN IMMEDIATE")
        other = _sqlite3.connect(kb.reference, timeout=0.2, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")          # would raise "database is locked" with a writable attach
        other.execute("ROLLBACK")
        other.close()
        with pytest.raises(_sqlite3.OperationalError, match="readonly"):
            kb.conn.execute("DELETE FROM ref.runs")
        kb.conn.execute("ROLLBACK")
