"""Run identity by content, and repairing a KB: kb delete, kb relabel, the quarantine of runs an earlier
version let in. What must not happen: a copy of a file (export, CRLF, reordered) adding runs; a dry run or a
failed command changing the KB; reference data being changed; docs build failing on a KB after repair."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.kb import KB, RunFilter
from ioadvisor.kb.schema import MIGRATIONS

runner = CliRunner()
HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes\n")
ROWS = ["s1,sysA,lus,4,write,POSIX,fpp,,1,4,1048576,1073741824,1,1048576,100.5,MiB/s,\n",
        "s1,sysA,lus,4,write,POSIX,fpp,,2,8,1048576,1073741824,1,1048576,180.25,MiB/s,\n",
        "s1,sysA,lus,4,read,POSIX,fpp,,2,8,1048576,1073741824,1,1048576,1.5,GiB/s,\n"]


def ioadvise(*args: str):
    res = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in res.output
    return res


def user_ids(kb: Path) -> list[str]:
    return sorted(r["id"] for r in json.loads(ioadvise("kb", "list", "--kb", kb, "--origin", "user", "--json").stdout))


def snapshot(kb: Path) -> list[tuple]:
    with sqlite3.connect(kb) as c:
        return sorted(c.execute("SELECT * FROM runs").fetchall()) + sorted(c.execute("SELECT * FROM sources"))


def test_export_crlf_reordered_and_renamed_copies_add_no_runs(tmp_path, kb_path):
    a = tmp_path / "a.csv"
    a.write_text(HEADER + "".join(ROWS))
    assert ioadvise("kb", "import", a, "--kb", kb_path).exit_code == 0
    ids = user_ids(kb_path)
    assert len(ids) == 3
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes((HEADER + "".join(ROWS)).replace("\n", "\r\n").encode())
    rev = tmp_path / "rev.csv"
    rev.write_text(HEADER + "".join(reversed(ROWS)))
    export = tmp_path / "export.csv"   # every run, the reference ones included
    assert ioadvise("kb", "export", "--kb", kb_path, "-o", export).exit_code == 0
    before = snapshot(kb_path)
    for copy in (crlf, rev, export):
        res = ioadvise("kb", "import", copy, "--kb", kb_path, "--json")
        assert res.exit_code == 0
        (r,) = json.loads(res.stdout)
        # 3 + 3 + (3 user + 82 reference) rows, none new
        assert r["runs"] == 0 and r["skipped"] and r["duplicates"] in (3, len(export.read_text().splitlines()) - 1)
    assert snapshot(kb_path) == before
    assert user_ids(kb_path) == ids


def test_a_file_twice_in_one_source_keeps_both_and_a_copy_adds_neither(tmp_path, kb_path):
    twice = tmp_path / "twice.csv"
    twice.write_text(HEADER + ROWS[0] + ROWS[0])
    assert json.loads(ioadvise("kb", "import", twice, "--kb", kb_path, "--json").stdout)[0]["runs"] == 2
    copy = tmp_path / "copy.csv"
    copy.write_text(HEADER + ROWS[0] + ROWS[0] + ROWS[1])
    # two copies of the first run are there already: only the second run is new (3 rows - 2 known = 1)
    assert json.loads(ioadvise("kb", "import", copy, "--kb", kb_path, "--json").stdout)[0]["runs"] == 1


def test_reimport_under_another_system_says_what_it_did(samples, tmp_path, kb_path):
    ior = samples / "ior" / "posix_fpp_2ranks.txt"
    assert ioadvise("kb", "import", ior, "--kb", kb_path, "--system", "alpha").exit_code == 0
    before = snapshot(kb_path)
    res = ioadvise("kb", "import", ior, "--kb", kb_path, "--system", "beta")
    assert res.exit_code == 0
    assert "already in the KB as system alpha" in res.stdout and "nothing was added as beta" in res.stdout
    assert "kb relabel" in res.stdout
    assert snapshot(kb_path) == before


def test_delete_is_a_dry_run_without_yes_and_refuses_an_empty_selection(tmp_path, kb_path):
    a = tmp_path / "a.csv"
    a.write_text(HEADER + "".join(ROWS))
    ioadvise("kb", "import", a, "--kb", kb_path)
    before = snapshot(kb_path)
    res = ioadvise("kb", "delete", "--kb", kb_path, "--op", "read", "--json")
    rep = json.loads(res.stdout)
    assert (res.exit_code, rep["dry_run"], rep["runs"]) == (0, True, 1)
    assert snapshot(kb_path) == before
    res = ioadvise("kb", "delete", "--kb", kb_path, "--yes")
    assert res.exit_code == 2 and "say which runs" in res.output
    assert snapshot(kb_path) == before
    res = ioadvise("kb", "delete", "nosuchid", "--kb", kb_path, "--yes")
    assert res.exit_code == 2 and "no run of yours with id 'nosuchid'" in res.output
    assert snapshot(kb_path) == before
    # reference runs ship with ioadvisor and cannot be deleted
    ref_id = json.loads(ioadvise("kb", "list", "--kb", kb_path, "--origin", "reference", "--json").stdout)[0]["id"]
    res = ioadvise("kb", "delete", ref_id, "--kb", kb_path, "--yes")
    assert res.exit_code == 2 and "reference data" in res.output
    assert snapshot(kb_path) == before
    res = ioadvise("kb", "delete", "--kb", kb_path, "--op", "read", "--yes", "--json")
    assert json.loads(res.stdout)["deleted"] == 1
    assert len(user_ids(kb_path)) == 2


def test_deleting_every_run_of_a_file_lets_it_be_imported_again(tmp_path, kb_path):
    a = tmp_path / "a.csv"
    a.write_text(HEADER + "".join(ROWS))
    ioadvise("kb", "import", a, "--kb", kb_path)
    rep = json.loads(ioadvise("kb", "delete", "--kb", kb_path, "--source", "s1", "--yes", "--json").stdout)
    assert (rep["deleted"], rep["sources_removed"]) == (3, 1)
    assert json.loads(ioadvise("kb", "import", a, "--kb", kb_path, "--json").stdout)[0]["runs"] == 3


def test_relabel_renames_and_follows_the_content(tmp_path, kb_path):
    a = tmp_path / "a.csv"
    a.write_text(HEADER + "".join(ROWS))
    ioadvise("kb", "import", a, "--kb", kb_path)
    before = snapshot(kb_path)
    dry = ioadvise("kb", "relabel", "--kb", kb_path, "--system", "sysA", "--to-system", "sysB")
    assert dry.exit_code == 0 and "3 run(s) would be relabelled; add --yes to do it" in dry.stdout
    assert snapshot(kb_path) == before
    bad = ioadvise("kb", "relabel", "--kb", kb_path, "--system", "sysA", "--to-system", "evil\nname", "--yes")
    assert bad.exit_code == 2 and "control character" in bad.output
    assert snapshot(kb_path) == before
    rep = json.loads(ioadvise("kb", "relabel", "--kb", kb_path, "--system", "sysA", "--to-system", "sysB",
                              "--yes", "--json").stdout)
    assert (rep["relabelled"], rep["merged"]) == (3, 0)
    runs = json.loads(ioadvise("kb", "list", "--kb", kb_path, "--origin", "user", "--json").stdout)
    assert {r["system"] for r in runs} == {"sysB"}
    # the ids follow the content: a file saying sysB is now a copy and adds nothing
    b = tmp_path / "b.csv"
    b.write_text(HEADER + "".join(ROWS).replace("sysA", "sysB"))
    assert json.loads(ioadvise("kb", "import", b, "--kb", kb_path, "--json").stdout)[0]["runs"] == 0
    # relabelling into a system that has the same runs merges them (3 runs, not 6); a.csv itself is known by
    # its bytes, so its CRLF twin brings the sysA runs back
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(a.read_bytes().replace(b"\n", b"\r\n"))
    assert json.loads(ioadvise("kb", "import", crlf, "--kb", kb_path, "--json").stdout)[0]["runs"] == 3
    rep = json.loads(ioadvise("kb", "relabel", "--kb", kb_path, "--system", "sysA", "--to-system", "sysB",
                              "--yes", "--json").stdout)
    assert (rep["relabelled"], rep["merged"]) == (0, 3)
    assert len(user_ids(kb_path)) == 3


def test_like_wildcards_match_only_themselves(tmp_path, kb_path):
    a = tmp_path / "a.csv"
    a.write_text(HEADER + "".join(ROWS).replace("s1,", "lab_100%,", 1).replace("s1,", "labX100,"))
    ioadvise("kb", "import", a, "--kb", kb_path)
    listed = lambda src: json.loads(ioadvise("kb", "list", "--kb", kb_path, "--source", src, "--json").stdout)  # noqa: E731
    assert [r["provenance"]["source"] for r in listed("_100%")] == ["lab_100%"]
    assert listed("%") == listed("_100%")          # '%' is a character, not "anything"
    assert len(listed("X100")) == 2
    some = user_ids(kb_path)[0]
    assert ioadvise("kb", "show", "%" + some[1:], "--kb", kb_path).exit_code == 2
    assert ioadvise("kb", "show", some[:4] + "_", "--kb", kb_path).exit_code == 2
    assert ioadvise("kb", "show", some[:5], "--kb", kb_path).exit_code == 0


def _v2_kb(path: Path, rows: list[dict]) -> None:
    """A KB as ioadvisor wrote it before run ids followed content and before values were validated."""
    c = sqlite3.connect(path)
    for m in MIGRATIONS[:2]:
        c.executescript(m)
    c.execute("INSERT INTO sources VALUES ('h1', 'old.csv', 'csv', 'csv/1', '2026-01-01', ?)", (len(rows),))
    cols = [r[1] for r in c.execute("PRAGMA table_info(runs)")]
    for i, r in enumerate(rows):
        full = {k: None for k in cols} | {"id": f"old{i:09d}", "source_hash": "h1", "seq": i, "kind": "benchmark",
                                           "unit": "MiB/s", "op": "write", "system": "old"} | r
        c.execute(f"INSERT INTO runs ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                  [full[k] for k in cols])
    c.execute("PRAGMA user_version = 2")
    c.commit()
    c.close()


def test_upgrade_quarantines_poisoned_runs_and_docs_build_works(tmp_path, kb_path):
    good = {"filesystem": "lus", "api": "POSIX", "layout": "fpp", "nodes": 1, "ranks": 4, "value": 100.0}
    _v2_kb(kb_path, [good, {**good, "nodes": 2, "value": float("inf")}, {**good, "nodes": 4, "stripe_count": "lots"},
                     {**good, "value": 100.0}])   # a copy of the first: kept, as its second occurrence
    stats = json.loads(ioadvise("kb", "stats", "--kb", kb_path, "--json").stdout)
    assert stats["quarantined"] == 2
    runs = json.loads(ioadvise("kb", "list", "--kb", kb_path, "--origin", "user", "--json").stdout)
    assert [r["value"] for r in runs] == [100.0, 100.0] and len({r["id"] for r in runs}) == 2
    out = tmp_path / "site"
    res = ioadvise("docs", "build", "--kb", kb_path, "-o", out)
    assert res.exit_code == 0, res.output
    export = ioadvise("kb", "export", "--kb", kb_path, "--format", "json")
    assert export.exit_code == 0 and "Infinity" not in export.stdout
    listing = json.loads(ioadvise("kb", "delete", "--quarantined", "--kb", kb_path, "--json").stdout)
    assert listing["dry_run"] and {r["id"]: r["reason"] for r in listing["selected"]} == {
        "old000000001": "value must be a finite number, got inf",
        "old000000002": "stripe_count must be a whole number, got 'lots'"}
    rep = json.loads(ioadvise("kb", "delete", "--quarantined", "--kb", kb_path, "--yes", "--json").stdout)
    assert rep["deleted"] == 2
    assert json.loads(ioadvise("kb", "stats", "--kb", kb_path, "--json").stdout)["quarantined"] == 0
    with KB.open(kb_path) as kb:   # the good runs stay
        assert kb.count(RunFilter(origin="user")) == 2


def test_a_reformatted_job_record_adds_nothing(tmp_path, kb_path):
    rec = {"job_id": "77", "host": "n1", "start": 100, "end": 110, "exit_code": 0, "staged_out_bytes": 10 << 20,
           "stage_out_seconds": 1, "settings": {"tier": {"name": "beeond"}, "hints": {"romio_cb_write": "disable"},
                                                 "stripe_count": 4}}
    compact = tmp_path / "a" / "ioadvise-77.json"
    compact.parent.mkdir()
    compact.write_text(json.dumps(rec, separators=(",", ":")) + "\n")
    pretty = tmp_path / "b" / "ioadvise-77.json"     # the same record, indented and keys reordered
    pretty.parent.mkdir()
    pretty.write_text('{"job_id": "77",\n' + json.dumps({k: v for k, v in reversed(rec.items()) if k != "job_id"},
                                                        indent=4)[1:])
    assert compact.read_bytes() != pretty.read_bytes()
    first = json.loads(ioadvise("kb", "import", compact, "--kb", kb_path, "--system", "TSUBAME3.0", "--json").stdout)
    assert first[0]["runs"] == 1
    before = snapshot(kb_path)
    again = json.loads(ioadvise("kb", "import", pretty, "--kb", kb_path, "--system", "TSUBAME3.0", "--json").stdout)
    assert (again[0]["runs"], again[0]["duplicates"]) == (0, 1)
    assert snapshot(kb_path) == before
