"""The per-system summary the KB keeps as runs change: a center derived from it equals the one derived by
reading every run, and deriving it reads no run (so its cost does not grow with the KB)."""
from __future__ import annotations

import sqlite3

import pytest

from ioadvisor.center import center_from_runs, center_from_summary, resolve_center
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter
from ioadvisor.kb.schema import MIGRATIONS

HEADER = "source,system,filesystem,fs_type,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes," \
         "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes"
# (system, filesystem, fs_type, ost_count): the type is stated late, the largest OST count in the middle, one
# run names no file system (counted under its type), one names neither (under "unknown"), and the system's
# name comes in two cases (one system, as everywhere in the KB)
ROWS = [("myc", "scratch", "", 8), ("myc", "home", "nfs", ""), ("MYC", "scratch", "lustre", 24),
        ("myc", "scratch", "", 16), ("myc", "", "beegfs", 4), ("myc", "", "", ""), ("other", "x", "gpfs", "")]


def _csv(path, rows):
    lines = [HEADER] + [f"t,{s},{f},{t},{o},write,POSIX,fpp,,1,1,1048576,1048576,1,,{100 + i},MiB/s,"
                        for i, (s, f, t, o) in enumerate(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _shape(center):
    return [(f.name, f.type, f.ost_count, f.striping) for f in center.filesystems]


def _no_run_reads(kb: KB) -> list[str]:
    """Deny every read of a `runs` table on this connection; returns the list of denied reads."""
    denied: list[str] = []

    def auth(action, table, column, db, trigger):
        if action == sqlite3.SQLITE_READ and table == "runs":
            denied.append(f"{db}.{table}.{column}")
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK
    kb.conn.set_authorizer(auth)
    return denied


def test_summary_center_equals_the_center_read_from_every_run(tmp_path, kb_path):
    with KB.open(kb_path) as kb:
        import_file(kb, _csv(tmp_path / "a.csv", ROWS))
        full = center_from_runs("myc", kb.runs(RunFilter(system="myc")))
        denied = _no_run_reads(kb)
        c = resolve_center("myc", None, kb)
        assert denied == []       # not one read of a runs table: the summary alone answered
    # the same file systems with the same facts; the summary lists them in the order the file first names them
    assert sorted(_shape(c), key=str) == sorted(_shape(full), key=str)
    assert _shape(c) == [
        ("scratch", "lustre", 24, "user"), ("home", "nfs", None, "none"), ("beegfs", "beegfs", 4, "user"),
        ("unknown", "unknown", None, "none")]


def test_deleting_the_run_with_the_largest_ost_count_lowers_it(tmp_path, kb_path):
    with KB.open(kb_path) as kb:
        import_file(kb, _csv(tmp_path / "a.csv", ROWS))
        kb.conn.execute("DELETE FROM main.runs WHERE system = 'MYC'")     # the 24-OST run, and the only 'lustre'
        c = resolve_center("myc", None, kb)
        assert _shape(c)[0] == ("scratch", "unknown", 16, "none")        # not 24, not lustre
        assert sorted(_shape(c), key=str) == sorted(
            _shape(center_from_runs("myc", kb.runs(RunFilter(system="myc")))), key=str)
        # the recomputed rows were stored: the next call reads no run
        denied = _no_run_reads(kb)
        assert _shape(resolve_center("myc", None, kb)) == _shape(c) and denied == []
        kb.conn.set_authorizer(None)
        kb.conn.execute("UPDATE main.runs SET system = 'moved' WHERE system = 'myc' AND filesystem = 'home'")
        assert [f.name for f in resolve_center("myc", None, kb).filesystems] == ["scratch", "beegfs", "unknown"]
        assert [f.name for f in resolve_center("moved", None, kb).filesystems] == ["home"]
        kb.conn.execute("DELETE FROM main.runs WHERE system = 'other'")
        assert "other" not in kb.systems() and "MYC" not in kb.systems() and {"myc", "moved"} <= set(kb.systems())


def test_a_version_2_kb_gets_its_summary_on_migration(tmp_path):
    path = tmp_path / "v2.sqlite"
    conn = sqlite3.connect(path)
    for script in MIGRATIONS[:2]:
        for stmt in script.split(";"):
            if stmt.strip():
                conn.execute(stmt)
    conn.execute("INSERT INTO sources VALUES ('h', 'a.csv', 'csv', 'csv/1', 'now', 2)")
    for i, (fs, ft, osts) in enumerate((("scratch", None, 8), ("scratch", "Lustre", 32))):
        conn.execute("INSERT INTO runs (id, source_hash, seq, system, filesystem, fs_type, ost_count, op, value, "
                     "unit) VALUES (?, 'h', ?, 'old', ?, ?, ?, 'write', 1.0, 'MiB/s')", (f"r{i}", i, fs, ft, osts))
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()
    with KB.open(path, reference=False) as kb:
        assert kb.systems() == ["old"]
        assert _shape(resolve_center("old", None, kb)) == [("scratch", "lustre", 32, "user")]


@pytest.mark.parametrize("system", ["HA8000", "ha8000"])
def test_reference_systems_summary_matches_their_runs(system):
    with KB.open(None, create=False) as kb:
        full = center_from_runs(system, kb.runs(RunFilter(system=system)))
        summary = _shape(center_from_summary(system, kb.system_filesystems(system)))
        assert sorted(summary, key=str) == sorted(_shape(full), key=str) and len(summary) >= 3
        assert sorted(kb.systems()) == sorted({r[0] for r in kb.conn.execute("SELECT system FROM all_runs")})


def test_one_name_for_runs_without_a_file_system():
    from ioadvisor.center import UNKNOWN_FS
    from ioadvisor.kb.schema import UNKNOWN_FS as KB_UNKNOWN_FS
    assert UNKNOWN_FS == KB_UNKNOWN_FS == "unknown"
