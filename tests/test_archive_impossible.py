"""`ioadvise archive scan` and `report` on logs whose counters or job record state what no job does: a float
counter that is NaN or infinite, byte counters that sum past 2^63 - 1, 0 or 2^63 - 1 processes, a run of minus
30 years or of 31,700 years, user id -5, and a command line holding terminal escapes. Each such log is one log:
read with the impossible value left out and noted, or refused alone; the good logs of its batch are kept, and
nothing stored or reported is out of its column's range."""
from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from typer.testing import CliRunner  # noqa: E402

from ioadvisor.archive.report import center_report  # noqa: E402
from ioadvisor.archive.store import add_results  # noqa: E402
from ioadvisor.cli import app  # noqa: E402
from ioadvisor.darshanlog.jobrecord import MAX_PROCS, MAX_RUN_S  # noqa: E402
from ioadvisor.kb import KB  # noqa: E402
from tests.darshan_copies import wheel_logs, with_counter, with_job  # noqa: E402

runner = CliRunner()
# 4 processes, POSIX (3 records), MPI-IO and STDIO, module versions of the library's own layout
SRC = next(p for p in wheel_logs() if p.name.startswith("pq_app_readAB_writeC"))
INT64_MAX = 2 ** 63 - 1


def _scan(arch: Path, kb: Path) -> dict:
    r = runner.invoke(app, ["archive", "scan", str(arch), "--kb", str(kb), "-j", "1", "--json"])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    return json.loads(r.stdout)


def _stored_numbers_in_range(kb: Path) -> list[tuple]:
    """Every archive_jobs row whose numbers are not finite or outside their column's range (none may be)."""
    db = sqlite3.connect(kb)
    bad = []
    for row in db.execute("SELECT nprocs, run_time_s, io_time_per_rank_s, bytes_read, bytes_written, uid, jobid, "
                          "start_time, nodes FROM archive_jobs"):
        n, rt, io, br, bw, uid, jobid, start, nodes = row
        ok = (1 <= n <= MAX_PROCS and math.isfinite(rt) and 0 <= rt <= MAX_RUN_S and math.isfinite(io) and io >= 0
              and 0 <= br <= INT64_MAX and 0 <= bw <= INT64_MAX and all(v is None or v >= 0 for v in
                                                                       (uid, jobid, start, nodes)))
        if not ok:
            bad.append(row)
    for (at,) in db.execute("SELECT time_at_stake_s FROM archive_findings"):
        if at is not None and not (math.isfinite(at) and at >= 0):
            bad.append(("finding", at))
    return bad


def test_nan_inf_and_overflowing_counters_are_left_out_of_one_log_and_the_batch_is_kept(tmp_path):
    """Before: the NaN read time failed NOT NULL archive_jobs.io_time_per_rank_s (sqlite stores NaN as NULL) and
    the two byte counters of 1.5 x 2^62 (their sum 2^63 + 2^62 > 2^63 - 1) raised OverflowError: the scan ended in
    a traceback, the good log of the batch lost, and every later scan stopped at the same log. Now each bad log is
    read with that value left out and a note naming it; the good log is stored whole; a second scan reads
    nothing again."""
    arch, kb = tmp_path / "arch", tmp_path / "kb.sqlite"
    arch.mkdir()
    (arch / "good.darshan").write_bytes(SRC.read_bytes())
    (arch / "nan.darshan").write_bytes(with_job(with_counter(SRC, "POSIX", "POSIX_F_READ_TIME", math.nan,
                                                             record=1), jobid=2))
    (arch / "inf.darshan").write_bytes(with_job(with_counter(SRC, "POSIX", "POSIX_F_WRITE_TIME", math.inf,
                                                             record=2), jobid=3))
    half = tmp_path / "half.darshan"
    half.write_bytes(with_counter(SRC, "POSIX", "POSIX_BYTES_READ", 3 * 2 ** 61, record=0))
    (arch / "huge.darshan").write_bytes(with_job(with_counter(half, "POSIX", "POSIX_BYTES_READ", 3 * 2 ** 61,
                                                              record=1), jobid=4))
    doc = _scan(arch, kb)
    assert doc["failed"] == [] and doc["added"]["jobs"] == 4
    noted = {Path(n["path"]).name: n["note"] for n in doc["notes"]}
    assert set(noted) == {"nan.darshan", "inf.darshan", "huge.darshan"}, noted
    # the reader leaves the impossible timers out and names them by counter; the note reaches the scan's output
    assert "POSIX_F_READ_TIME = nan" in noted["nan.darshan"] and "POSIX_F_WRITE_TIME = inf" in noted["inf.darshan"]
    assert "bytes read" in noted["huge.darshan"]
    assert _stored_numbers_in_range(kb) == []
    db = sqlite3.connect(kb)
    good = db.execute("SELECT j.bytes_read, j.io_time_per_rank_s FROM archive_jobs j JOIN archive_logs l "
                      "ON l.hash = j.hash WHERE l.path LIKE '%good.darshan'").fetchone()
    assert good[0] > 0 and good[1] > 0
    # the huge log's POSIX bytes read are left out; its STDIO bytes read (if any) stay
    huge = db.execute("SELECT j.bytes_read FROM archive_jobs j JOIN archive_logs l ON l.hash = j.hash "
                      "WHERE l.path LIKE '%huge.darshan'").fetchone()[0]
    assert huge < good[0]
    assert _scan(arch, kb)["unchanged"] == 4


def test_a_result_that_cannot_be_stored_is_one_failed_log(tmp_path):
    """The store's own guard, for what a worker should never send: a job row with 2^64 bytes read is rolled back
    alone and its log stored as failed with the reason; the other log of the same transaction is stored."""
    def rec(digest: str, path: str, bytes_read: int) -> dict:
        job = {"jobid": 1, "uid": 1, "exe": "a", "app": "a", "nprocs": 1, "run_time_s": 1.0, "start_time": 0,
               "io_time_per_rank_s": 0.5, "bytes_read": bytes_read, "bytes_written": 0, "layout": "none",
               "files": 0, "partial": 0, "darshan_version": "3", "nodes": None, "filesystem": None}
        return {"hash": digest, "path": path, "size": 10, "status": "ok", "error": None, "job": job,
                "findings": [], "runs": []}
    failed: list = []
    with KB.open(tmp_path / "kb.sqlite") as kb:
        added, _ = add_results(kb, [rec("a" * 64, "/x/bad", 2 ** 64), rec("b" * 64, "/x/good", 5)], [],
                               system="s", failed=failed)
        rows = dict(kb.conn.execute("SELECT path, status FROM archive_logs").fetchall())
        jobs = kb.conn.execute("SELECT bytes_read FROM archive_jobs").fetchall()
    assert rows == {"/x/bad": "failed", "/x/good": "ok"} and [tuple(j) for j in jobs] == [(5,)]
    assert added == {"logs": 2, "failed": 1, "jobs": 1, "measured": 0, "findings": 0, "runs": 0}
    assert failed and failed[0][0] == "/x/bad" and "OverflowError" in failed[0][1]


def _impossible_jobs(arch: Path) -> None:
    arch.mkdir()
    data = SRC.read_bytes()
    (arch / "good.darshan").write_bytes(data)
    for n in (0, -1, 2 ** 31, INT64_MAX):
        (arch / f"nprocs{n}.darshan").write_bytes(with_job(data, nprocs=n))
    (arch / "backwards.darshan").write_bytes(with_job(data, start_time=2_000_000_000, end_time=1_000_000_000))
    (arch / "eons.darshan").write_bytes(with_job(data, start_time=0, end_time=10 ** 12))
    (arch / "uid.darshan").write_bytes(with_job(data, uid=-5))


def test_impossible_job_fields_are_refused_or_left_out_and_never_ranked(tmp_path):
    """Before: 0 and -1 processes were read as 1 without a word, 2^31 and 2^63 - 1 processes and a run of 10^12 s
    were stored, and the report ranked a job at 2^63 - 1 x 1 s / 3600 = 2.6e15 process-hours. Now a process
    count outside 1 .. 2^24 refuses the log (every per-process figure divides by it); an impossible run time or
    user id is left out with a note; no job of the report has more process-hours than the good log's 4 x 1 s."""
    arch, kb = tmp_path / "arch", tmp_path / "kb.sqlite"
    _impossible_jobs(arch)
    doc = _scan(arch, kb)
    failed = {Path(f["path"]).name: f["error"] for f in doc["failed"]}
    assert set(failed) == {f"nprocs{n}.darshan" for n in (0, -1, 2 ** 31, INT64_MAX)}
    assert all("processes; a job runs on 1 to 16,777,216" in e for e in failed.values())
    noted = {Path(n["path"]).name: n["note"] for n in doc["notes"]}
    assert set(noted) == {"backwards.darshan", "eons.darshan", "uid.darshan"}
    assert "run time (-999999999.0 s)" in noted["backwards.darshan"] and "user id (-5)" in noted["uid.darshan"]
    assert _stored_numbers_in_range(kb) == []
    with KB.open(kb, create=False) as store:
        rep = center_report(store, top=100)
    assert rep["totals"]["jobs"] == 4
    assert max(j["process_hours"] for j in rep["jobs"]) == round(4 * 1.0 / 3600, 4)
    assert {j["uid"] for j in rep["jobs"]} == {1000, None}


def test_the_report_leaves_out_impossible_jobs_an_earlier_scan_stored(tmp_path):
    """A KB scanned by an earlier version holds a job of 2^63 - 1 processes and one of 10^12 s: the report
    counts them as left out and ranks only the possible job."""
    arch, kb = tmp_path / "arch", tmp_path / "kb.sqlite"
    arch.mkdir()
    for i in range(3):
        (arch / f"j{i}.darshan").write_bytes(with_job(SRC.read_bytes(), jobid=10 + i))
    _scan(arch, kb)
    db = sqlite3.connect(kb)
    db.execute("UPDATE archive_jobs SET nprocs = ? WHERE jobid = 10", (INT64_MAX,))
    db.execute("UPDATE archive_jobs SET run_time_s = 1e12 WHERE jobid = 11")
    db.commit()
    with KB.open(kb, create=False) as store:
        rep = center_report(store)
    assert [j["jobid"] for j in rep["jobs"]] == [12] and rep["logs"]["impossible_jobs_left_out"] == 2
    assert rep["totals"]["process_hours"] == round(4 / 3600, 3)


def test_diagnose_refuses_an_impossible_process_count_and_drops_a_backwards_run_time(tmp_path):
    """diagnose reads the same job record: 0 processes is one line and exit 2 (it was read as 1 process);
    a run that ends before it starts has no run time (--json said run_time -999999999.0) and a note says why."""
    arch = tmp_path / "arch"
    _impossible_jobs(arch)
    r = runner.invoke(app, ["diagnose", str(arch / "nprocs0.darshan")])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert "states 0 processes" in r.output
    r = runner.invoke(app, ["diagnose", str(arch / "backwards.darshan"), "--json"])
    assert r.exit_code == 0, r.output
    job = json.loads(r.stdout)["job"]
    assert job["run_time"] == 0.0 and any("run time (-999999999.0 s)" in n for n in job["notes"])


def test_report_escapes_the_application_name(tmp_path):
    """The application is the log's command line, which the job's user writes: an OSC title sequence, a colour
    escape and a right-to-left override reached the terminal raw from `archive report` (diagnose escapes the same
    string). Now each shows as \\xNN or \\uNNNN and no such character is printed."""
    arch, kb = tmp_path / "arch", tmp_path / "kb.sqlite"
    arch.mkdir()
    exe = "/b/\x1b]0;X\x07\x1b[2J\u202eapp"
    (arch / "esc.darshan").write_bytes(with_job(SRC.read_bytes(), exe=exe))
    _scan(arch, kb)
    r = runner.invoke(app, ["archive", "report", "--kb", str(kb)])
    assert r.exit_code == 0, r.output
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in r.output
    assert "\\x1b]0;X\\x07\\x1b[2J\\u202eapp" in r.output


def test_a_relative_archive_directory_is_planned_by_absolute_paths(tmp_path, monkeypatch):
    """`archive scan arch --mode array` from the archive's parent: the plan held arch/x.darshan, which the array
    task (run in the work directory, or on another node) could not find, so every log was stored as failed with
    "no such file" and later scans took them for unchanged. Now the plan holds absolute paths, and the task's
    body run from another directory reads every log."""
    from ioadvisor.archive.array import PLAN, plan_array, run_task
    from ioadvisor.archive.worker import Settings
    arch = tmp_path / "site" / "arch"
    arch.mkdir(parents=True)
    for i in range(2):
        (arch / f"j{i}.darshan").write_bytes(with_job(SRC.read_bytes(), jobid=50 + i))
    monkeypatch.chdir(tmp_path / "site")
    with KB.open(tmp_path / "kb.sqlite") as kb:
        plan, out = plan_array(["arch"], kb, Settings(system="s"), tasks=1, work=tmp_path / "work")
    paths = [item[0] for item in plan["slices"][0]]
    assert paths == [str(arch / "j0.darshan"), str(arch / "j1.darshan")]
    assert json.loads((tmp_path / "work" / PLAN).read_text())["slices"] == plan["slices"]
    monkeypatch.chdir(tmp_path / "work")
    recs = [json.loads(line) for line in run_task(tmp_path / "work", 0).read_text().splitlines()]
    assert sorted((Path(r["path"]).name, r["status"], r["error"]) for r in recs) == [
        ("j0.darshan", "ok", None), ("j1.darshan", "ok", None)]


def test_a_full_kb_stops_the_scan_with_what_happened_and_keeps_what_was_stored(tmp_path):
    """A full disk: sqlite rolls the transaction back itself on SQLITE_FULL, and the scan's own ROLLBACK then
    raised "cannot rollback - no transaction is active", which is all the user saw. The KB's size limit
    (max_page_count) gives the same SQLITE_FULL without filling a disk. Now the error names the KB, the full
    disk and the logs kept; the KB is left whole, and once it can grow a scan stores the rest."""
    from ioadvisor.archive.scan import scan
    from ioadvisor.archive.worker import Settings
    from ioadvisor.errors import KBError
    arch, kb = tmp_path / "arch", tmp_path / "kb.sqlite"
    arch.mkdir()
    for i in range(60):
        (arch / f"j{i:02d}.darshan").write_bytes(with_job(SRC.read_bytes(), jobid=100 + i))
    # a KB in 4 KiB pages (a new one has 16 KiB, whose empty tables' first pages would hold all 60 logs' rows):
    # five pages of room hold a few logs, not 60
    c = sqlite3.connect(kb)
    c.execute("PRAGMA page_size = 4096")
    c.execute("PRAGMA journal_mode = WAL")
    c.close()
    with KB.open(kb) as store:
        pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
        store.conn.execute(f"PRAGMA max_page_count = {pages + 5}")
        with pytest.raises(KBError) as e:
            scan([arch], store, Settings(system="s"), workers=1)
        assert not store.conn.in_transaction
    stored = sqlite3.connect(kb).execute("SELECT count(*) FROM archive_logs").fetchone()[0]
    msg = str(e.value)
    assert "no transaction is active" not in msg and str(kb) in msg
    assert "the disk holding it is full" in msg and f"the {stored} log(s) stored before it are kept" in msg
    assert stored < 60 and sqlite3.connect(kb).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    doc = _scan(arch, kb)
    assert doc["failed"] == [] and doc["added"]["jobs"] == 60 - stored
