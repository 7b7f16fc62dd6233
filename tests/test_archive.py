"""`ioadvise archive scan`: the wheel's real Darshan logs scanned into the KB by long-lived workers, findings held
to what `ioadvise diagnose` says of the same log, re-scans and copies adding nothing, and corrupt logs (one of
which genuinely crashes the Darshan C library) reported and skipped without stopping the scan."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from typer.testing import CliRunner  # noqa: E402

from ioadvisor.archive.scan import scan  # noqa: E402
from ioadvisor.archive.worker import Settings, app_name  # noqa: E402
from ioadvisor.cli import app  # noqa: E402
from ioadvisor.diagnose import analyze  # noqa: E402
from ioadvisor.importers import ImportContext  # noqa: E402
from ioadvisor.importers.darshan import summary_runs  # noqa: E402
from ioadvisor.kb import KB  # noqa: E402
from ioadvisor.model.types import to_plain  # noqa: E402
from tests.darshan_copies import wheel_logs, with_job  # noqa: E402

runner = CliRunner()
LOGS = wheel_logs()


def _archive(root: Path) -> dict[str, Path]:
    """The wheel's distinct logs in a YEAR/MONTH/DAY tree, one day per log."""
    out = {}
    for i, p in enumerate(LOGS):
        d = root / "2026" / "11" / f"{i + 1:02d}"
        d.mkdir(parents=True)
        out[p.name] = d / p.name
        shutil.copy(p, out[p.name])
    return out


def _crashing_log(path: Path) -> Path:
    """example.darshan (log format 3.21) with the low byte of its name table's length (header bytes 32-39)
    inverted, 7103 -> 7232 bytes: the Darshan library aborts the process reading it (SIGABRT)."""
    data = bytearray(next(p for p in LOGS if p.name == "example.darshan").read_bytes())
    data[32] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def _count(kb_path: Path, table: str) -> int:
    return sqlite3.connect(kb_path).execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_findings_and_facts_are_those_of_diagnose_on_every_wheel_log(tmp_path, kb_path):
    logs = _archive(tmp_path / "arch")
    with KB.open(kb_path) as kb:
        out = scan([tmp_path / "arch"], kb, Settings(system="wheelbox"), workers=2)
        assert out.failed == [] and out.diagnosed == len(LOGS) == out.added["jobs"]
        for name, path in logs.items():
            d = analyze(path, use_kb=False)
            stored = {r[0]: json.loads(r[1]) for r in kb.conn.execute(
                "SELECT f.rule, f.finding FROM archive_findings f JOIN archive_logs l ON l.hash = f.hash "
                "WHERE l.path = ?", (str(path),))}
            # the same findings, every field (message, evidence, arithmetic), as `diagnose` gives them
            assert stored == {f.id: to_plain(f) for f in d.findings}, name
            job = kb.conn.execute("SELECT j.* FROM archive_jobs j JOIN archive_logs l ON l.hash = j.hash "
                                  "WHERE l.path = ?", (str(path),)).fetchone()
            s = d.summary
            assert (job["jobid"], job["uid"], job["nprocs"], job["run_time_s"]) == (s.jobid, s.uid, s.nprocs,
                                                                                    s.run_time)
            # diagnose's I/O time per rank, each API's part that is negative or not a number left out (a wheel log
            # holds a STDIO_F_WRITE_TIME of -2,662.7 s)
            parts = [getattr(a, t) for k, a in s.apis.items() if k in ("POSIX", "STDIO")
                     for t in ("read_time", "write_time")]
            assert job["io_time_per_rank_s"] == pytest.approx(sum(t for t in parts if t >= 0) / s.nprocs)
            assert (job["bytes_read"], job["bytes_written"]) == (s.bytes_read, s.bytes_written)
            assert job["app"] == app_name(s.exe)
        # no center: no mount holds any file, so every job is a diagnosis, not a measurement (no production run)
        assert kb.conn.execute("SELECT count(*) FROM main.runs").fetchone()[0] == 0
        assert {r[0] for r in kb.conn.execute("SELECT filesystem FROM archive_jobs")} == {None}
    assert out.added["runs"] == out.added["measured"] == 0
    # three of the wheel's logs have findings (example, noposix, sample-badost): the scan is not vacuous
    assert out.added["findings"] >= 3


EDISON = ('name = "edison"\nnode_memory = "64GiB"\n[[filesystems]]\nname = "scratch1"\ntype = "lustre"\n'
          'mount = "/scratch1"\nost_count = 96\n')


def test_a_log_is_a_measurement_only_when_its_files_lie_under_the_centers_mounts(tmp_path, kb_path):
    """sample-badost (2048 files) and sample-goodost (48 files) wrote below /scratch1, edison's one mount:
    they become production runs on file system scratch1 (badost also read 1,654,784 bytes of input through STDIO
    from /global/project, which edison's file does not describe: 0.0003% of the 549,757,468,672 bytes it moved
    through files, well within the 1% a measured job may move elsewhere). example.darshan wrote to /scratch2, the
    others to
    /home, /tmp, /global/cscratch1, ... (or to no file at all): under no mount of edison, they stay diagnoses."""
    from ioadvisor.center import load_center
    c = tmp_path / "edison.toml"
    c.write_text(EDISON)
    logs = _archive(tmp_path / "arch")
    with KB.open(kb_path) as kb:
        out = scan([tmp_path / "arch"], kb, Settings(system="edison", center=str(c)), workers=2,
                   center=load_center(c))
        fs = dict(kb.conn.execute("SELECT l.path, j.filesystem FROM archive_jobs j JOIN archive_logs l "
                                  "ON l.hash = j.hash").fetchall())
        measured = {"sample-badost.darshan", "sample-goodost.darshan"}
        assert {Path(p).name for p, f in fs.items() if f is not None} == measured
        assert {f for f in fs.values() if f is not None} == {"scratch1"}
        assert out.added["jobs"] == len(LOGS) and out.added["measured"] == 2
        stored = sorted(tuple(r) for r in kb.conn.execute("SELECT op, value, filesystem, kind FROM main.runs"))
        want = sorted((r.op, r.value, "scratch1", "production") for name in measured
                      for r in summary_runs(analyze(logs[name], use_kb=False).summary,
                                            ImportContext(source="x", system="edison", filesystem="scratch1",
                                                          kind="production"), "x"))
    # each job wrote (one of them also read a little): a run per direction, bytes / run time
    assert len(want) == 3 and stored == want


def test_foreign_logs_add_no_runs_and_the_scan_says_so(tmp_path, kb_path):
    """A center whose only mount is /lus/x holds none of the wheel logs' files: every log is kept as a diagnosis
    (its findings and job facts), no run of the center is added."""
    c = tmp_path / "x.toml"
    c.write_text('name = "xsys"\n[[filesystems]]\nname = "fs0"\ntype = "lustre"\nmount = "/lus/x"\n')
    _archive(tmp_path / "arch")
    r = runner.invoke(app, ["archive", "scan", str(tmp_path / "arch"), "--center", str(c), "--kb", str(kb_path)])
    assert r.exit_code == 0, r.output
    assert f"0 of the jobs had their files under the center's mounts" in r.output
    assert f"the other {len(LOGS)} are kept as diagnoses only" in r.output
    assert _count(kb_path, "runs") == 0 and _count(kb_path, "archive_jobs") == len(LOGS)
    assert _count(kb_path, "archive_findings") >= 3


def test_app_name_is_the_executable_base_name():
    assert app_name("/opt/vpic/bin/vpic-io -n 8 --deck x") == "vpic-io"
    assert app_name("python3 run.py") == "python3"
    assert app_name("") == "(not recorded)"


def test_rescan_and_copies_add_nothing(tmp_path, kb_path):
    logs = _archive(tmp_path / "arch")
    with KB.open(kb_path) as kb:
        first = scan([tmp_path / "arch"], kb, Settings(), workers=2)
        counts = {t: _count(kb_path, t) for t in ("archive_logs", "archive_jobs", "archive_findings", "runs")}
        again = scan([tmp_path / "arch"], kb, Settings(), workers=2)
        assert again.diagnosed == 0 and again.unchanged == len(LOGS) and sum(again.added.values()) == 0
        # copies under other names are read (hashed) once, recognised by content, and add no job
        copies = tmp_path / "copies"
        copies.mkdir()
        for p in list(logs.values())[:5]:
            shutil.copy(p, copies / ("renamed-" + p.name))
        dup = scan([copies], kb, Settings(), workers=2)
        assert dup.diagnosed == 0 and dup.duplicates == 5 and sum(dup.added.values()) == 0
        # ... and a third scan of them does not even hash them (their path, size and mtime are recorded)
        third = scan([copies], kb, Settings(), workers=1)
        assert third.unchanged == 5 and third.duplicates == 0
    assert first.diagnosed == len(LOGS)
    assert {t: _count(kb_path, t) for t in counts} == counts
    assert _count(kb_path, "archive_paths") == len(LOGS) + 5


def test_two_workers_store_what_one_worker_stores(tmp_path):
    _archive(tmp_path / "arch")
    dumps = []
    for n in (1, 2):
        p = tmp_path / f"kb{n}.sqlite"
        with KB.open(p) as kb:
            scan([tmp_path / "arch"], kb, Settings(), workers=n)
        c = sqlite3.connect(p)
        dumps.append((sorted(c.execute("SELECT hash, path, size, status FROM archive_logs")),
                      sorted(c.execute("SELECT * FROM archive_jobs")),
                      sorted(c.execute("SELECT * FROM archive_findings")),
                      sorted(c.execute("SELECT id, value FROM runs"))))
    assert dumps[0] == dumps[1] and len(dumps[0][1]) == len(LOGS)


def test_corrupt_logs_are_reported_and_skipped_and_a_crash_costs_one_restart(tmp_path, kb_path):
    arch = tmp_path / "arch"
    _archive(arch)
    bad = arch / "bad"
    bad.mkdir()
    example = next(p for p in LOGS if p.name == "example.darshan").read_bytes()
    (bad / "truncated.darshan").write_bytes(example[:3000])           # the library finds it cut short
    _crashing_log(bad / "crashes.darshan")
    v = bytearray(example)
    v[300] ^= 0xFF                                                     # POSIX module version: the library complains
    (bad / "badversion.darshan").write_bytes(bytes(v))
    with KB.open(kb_path) as kb:
        out = scan([arch], kb, Settings(), workers=2)
        failed = dict(out.failed)
        assert set(failed) == {str(bad / n) for n in ("truncated.darshan", "crashes.darshan", "badversion.darshan")}
        assert "crashed" in failed[str(bad / "crashes.darshan")]
        assert "truncated" in failed[str(bad / "truncated.darshan")]
        assert "POSIX module version" in failed[str(bad / "badversion.darshan")]
        # exactly one worker died (the crashing log); the other two failures were caught inside the worker
        assert out.restarts == 1
        # every good log was still diagnosed, whatever the order the pool handed them out in
        assert out.added["jobs"] == len(LOGS) and out.added["failed"] == 3
        status = dict(kb.conn.execute("SELECT path, status FROM archive_logs WHERE status = 'failed'").fetchall())
        assert set(status) == set(failed)
        # a re-scan does not read them again; --retry-failed does, and they fail again without a second row
        assert scan([arch], kb, Settings(), workers=2).diagnosed == 0
        retry = scan([arch], kb, Settings(), workers=1, retry_failed=True)
        assert retry.diagnosed == 3 and retry.restarts == 1 and retry.added["logs"] == 0
    assert _count(kb_path, "archive_logs") == len(LOGS) + 3


def test_cli_scan_json_and_bad_input(tmp_path, kb_path):
    _archive(tmp_path / "arch")
    _crashing_log(tmp_path / "arch" / "crashes.darshan")
    r = runner.invoke(app, ["archive", "scan", str(tmp_path / "arch"), "--kb", str(kb_path), "--json", "-j", "2"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["diagnosed"] == len(LOGS) + 1 and doc["added"]["jobs"] == len(LOGS)
    assert [f["path"] for f in doc["failed"]] == [str(tmp_path / "arch" / "crashes.darshan")]
    assert doc["worker_restarts"] == 1
    r = runner.invoke(app, ["archive", "scan", str(tmp_path / "nothing-here"), "--kb", str(kb_path)])
    assert r.exit_code == 2 and "nothing-here: no such file or directory" in r.output
    assert "Traceback" not in r.output
    bad = tmp_path / "t.toml"
    bad.write_text("[LUS001]\nno_such_key = 1\n")
    r = runner.invoke(app, ["archive", "scan", str(tmp_path / "arch"), "--kb", str(kb_path), "--thresholds",
                            str(bad)])
    assert r.exit_code == 2 and "no_such_key" in r.output


def test_distinct_copies_are_distinct_jobs(tmp_path, kb_path):
    """Copies with another user id in the job record (as the benchmark makes them) are new content: each is a
    job, with the same findings as its original."""
    src = next(p for p in LOGS if p.name == "example.darshan")
    d = tmp_path / "copies"
    d.mkdir()
    for uid in (101, 102, 103):
        (d / f"u{uid}.darshan").write_bytes(with_job(src.read_bytes(), uid=uid))
    with KB.open(kb_path) as kb:
        out = scan([d, src], kb, Settings(), workers=2)
        uids = sorted(r[0] for r in kb.conn.execute("SELECT uid FROM archive_jobs"))
        rules = kb.conn.execute("SELECT rule, count(*) FROM archive_findings GROUP BY rule").fetchall()
    assert out.diagnosed == 4 and uids == sorted([101, 102, 103, analyze(src, use_kb=False).summary.uid])
    assert sorted(tuple(r) for r in rules) == sorted((f.id, 4) for f in analyze(src, use_kb=False).findings)


def test_scan_progress_with_eta_on_a_terminal_only(tmp_path):
    from tests.test_progress import _run
    src = next(p for p in LOGS if p.name == "sample-goodost.darshan").read_bytes()
    d = tmp_path / "arch"
    d.mkdir()
    for i in range(300):
        (d / f"j{i}.darshan").write_bytes(with_job(src, jobid=1000 + i))
    rc, out, err = _run(["archive", "scan", str(d), "--kb", str(tmp_path / "a.sqlite"), "-j", "1"], tty=True)
    assert rc == 0 and "Added 300 jobs" in out
    assert "Scanning Darshan logs" in err and "ETA" in err
    rc, out, err = _run(["archive", "scan", str(d), "--kb", str(tmp_path / "b.sqlite"), "-j", "1"], tty=False)
    assert rc == 0 and "Added 300 jobs" in out and err == ""
    rc, out, err = _run(["archive", "scan", str(d), "--kb", str(tmp_path / "c.sqlite"), "--json"], tty=True)
    assert rc == 0 and json.loads(out)["added"]["jobs"] == 300 and err == ""


def test_production_runs_are_those_kb_import_makes_with_the_same_center(tmp_path):
    """The runs a scan stores, evidence flags included, are the runs `kb import --center --filesystem` makes of
    each log: the center's one mount is / and holds every file, so every log that moved data is a measurement."""
    c = tmp_path / "c.toml"
    c.write_text('name = "laptop"\nnode_memory = "1TiB"\n[[filesystems]]\nname = "disk"\ntype = "ext4"\n'
                 'mount = "/"\nrated_write_bandwidth = "1MB/s"\nrated_read_bandwidth = "1MB/s"\n')
    _archive(tmp_path / "arch")
    r = runner.invoke(app, ["archive", "scan", str(tmp_path / "arch"), "--center", str(c), "--kb",
                            str(tmp_path / "a.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    measured = {r[0] for r in sqlite3.connect(tmp_path / "a.sqlite").execute(
        "SELECT l.path FROM archive_jobs j JOIN archive_logs l ON l.hash = j.hash WHERE j.filesystem = 'disk'")}
    # the one log left out: noposix moved 1,812,408,359 bytes through /global/cscratch1/4028781608 and 29,562,779
    # through a file recorded without a directory ('3710437467': under no mount); 29,562,779 / 1,841,971,138 =
    # 1.6% of its bytes lie outside, more than the 1% allowed. noposixopens' nameless file holds 779,748 of its
    # 608,096,825 bytes (0.13%): measured
    assert {Path(p).name for p in set(map(str, (tmp_path / "arch").rglob("*.darshan"))) - measured} == {
        "noposix.darshan"}
    for p in sorted(measured):
        r = runner.invoke(app, ["kb", "import", str(p), "--system", "laptop", "--center", str(c), "--filesystem",
                                "disk", "--kb", str(tmp_path / "b.sqlite"), "--json"])
        assert r.exit_code == 0 or "no measured results" in r.output, r.output

    def runs(kb):
        return sorted(sqlite3.connect(kb).execute("SELECT id, system, filesystem, op, value, flags, kind FROM runs"))
    a, b = runs(tmp_path / "a.sqlite"), runs(tmp_path / "b.sqlite")
    assert a == b and a
    # 1 TiB of node memory holds every wheel job's data and 1 MB/s is below what they moved: flags are set
    assert any(r[5] and "cache-sized" in r[5] for r in a) and all(r[6] == "production" for r in a)


def test_every_empty_file_is_one_failure_however_it_is_met(tmp_path, kb_path):
    """All empty files share one sha256, so the second one met used to count as a copy of the first and vanish
    from the report. Each is now the same failure, named by its path, in the first scan or a later one."""
    arch = tmp_path / "arch"
    _archive(arch)
    for d in ("a", "b"):
        (arch / d).mkdir()
        (arch / d / "empty.darshan").write_bytes(b"")
    with KB.open(kb_path) as kb:
        first = scan([arch], kb, Settings(), workers=2)
        (arch / "c").mkdir()
        (arch / "c" / "later.darshan").write_bytes(b"")
        second = scan([arch], kb, Settings(), workers=1)
        third = scan([arch], kb, Settings(), workers=1)
    reason = "empty file (0 bytes): not a Darshan log"
    assert first.failed == [(str(arch / d / "empty.darshan"), reason) for d in ("a", "b")]
    assert first.duplicates == 0 and first.diagnosed == len(LOGS)
    # the third empty file, met after the KB knows the empty content: the same failure, not a copy
    assert second.failed == [(str(arch / "c" / "later.darshan"), reason)] and second.duplicates == 0
    # paths unchanged since: not looked at again, as for any log that failed
    assert third.failed == [] and third.unchanged == len(LOGS) + 3
    assert _count(kb_path, "archive_paths") == len(LOGS) + 3
    # the report counts each of them as one empty file, as the scans listed them
    from ioadvisor.archive.report import center_report
    with KB.open(kb_path) as kb:
        logs = center_report(kb)["logs"]
    assert logs == {"scanned": len(LOGS) + 3, "readable": len(LOGS), "failed": 0, "empty_files": 3,
                    "impossible_jobs_left_out": 0}


def _bench_runs(system: str, fs: str) -> list:
    from ioadvisor.model.run import Provenance
    from ioadvisor.model.validate import make_run
    return [make_run(system=system, filesystem=fs, op="write", value=v, unit="MiB/s", api="POSIX", layout="fpp",
                     nodes=n, ranks=n * 4, stripe_count=1, provenance=Provenance(kind="benchmark"))
            for n, v in ((1, 900.0), (2, 1700.0), (4, 3100.0))]


@pytest.mark.parametrize("mount", ["/lus/x", "/"])
def test_the_guide_shows_no_archived_job_as_a_measurement(tmp_path, mount):
    """Three benchmark runs of xsys on fs0, then `archive scan --center xsys` of the wheel's logs: with fs0 at
    /lus/x no log's files lie under it (foreign jobs: no run at all); with fs0 at / every file does (the jobs
    become production runs of fs0). Either way the guide's page for xsys still says 3 measured runs, has only
    the section of fs0, and its table lists the 3 benchmark values and nothing of the jobs."""
    from ioadvisor.docs.build import build_site
    c = tmp_path / "xsys.toml"
    c.write_text(f'name = "xsys"\n[[filesystems]]\nname = "fs0"\ntype = "lustre"\nmount = "{mount}"\n'
                 'ost_count = 8\n')
    kb_path = tmp_path / "kb.sqlite"
    with KB.open(kb_path) as kb:
        kb.add_runs(_bench_runs("xsys", "fs0"), source="bench", source_hash="bench-1", fmt="csv", importer="test")
    _archive(tmp_path / "arch")
    r = runner.invoke(app, ["archive", "scan", str(tmp_path / "arch"), "--center", str(c), "--kb", str(kb_path),
                            "--json"])
    assert r.exit_code == 0, r.output
    added = json.loads(r.stdout)["added"]
    assert added["jobs"] == len(LOGS) and (added["runs"] > 0) == (mount == "/")
    with KB.open(kb_path, create=False) as kb:
        build_site(tmp_path / "site", kb=kb, center=str(c), formats=("html", "md"), plot_cache=False,
                   archive=True)
    page = (tmp_path / "site" / "en" / "systems" / "xsys.md").read_text()
    assert "3 measured runs." in page
    assert "## File system -" not in page and page.count("## File system ") == 1
    assert "B/s" not in page.replace("MiB/s", "")       # no job's bytes / run time, in any unit but MiB/s
    assert (tmp_path / "site" / "en" / "archive.md").exists()     # the jobs are diagnoses on the archive page


def test_bench_plan_takes_no_target_from_archived_jobs(tmp_path):
    """Every wheel log's files lie under / (xsys's mount): the archive adds production runs, which must not
    become the plan's targets: the plan is the one made without them (default targets)."""
    from ioadvisor.bench.plan import plan_for
    from ioadvisor.center import load_center
    c = tmp_path / "xsys.toml"
    c.write_text('name = "xsys"\n[[filesystems]]\nname = "fs0"\ntype = "lustre"\nmount = "/"\nost_count = 8\n')
    center = load_center(c)
    kb_path = tmp_path / "kb.sqlite"
    with KB.open(kb_path) as kb:
        kb.add_runs(_bench_runs("xsys", "fs0"), source="bench", source_hash="bench-1", fmt="csv", importer="test")
        before = plan_for(kb, "xsys", center, budget=2)
        out = scan([Path(p) for p in LOGS], kb, Settings(system="xsys", center=str(c)), workers=2, center=center)
        assert out.added["runs"] > 0
        after = plan_for(kb, "xsys", center, budget=2)
    assert before.target_source == after.target_source == "default"
    assert after.targets == before.targets


SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "darshan"


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent: no Darshan 3.41 logs")
def test_the_current_log_format_is_scanned_and_polaris_jobs_are_measured_on_grand(tmp_path, kb_path):
    """The seven real 3.41 logs: all read. Two DLIO workers read their training data from /grand (10,585,419,955
    and 5,527,137,065 bytes) and 13,342 bytes of Python from /home each: 13,342 / 10,585,433,297 = 0.0001% outside
    a center that describes only /grand, so both are measurements on grand. The third worker read only /home
    (7,273 bytes), the mpi-io-tests wrote to /tmp/test and /home, the DAOS job moved nothing through a file, the
    empty log has no record: diagnoses."""
    c = tmp_path / "polaris.toml"
    c.write_text('name = "polaris"\n[[filesystems]]\nname = "grand"\ntype = "lustre"\nmount = "/grand"\n')
    r = runner.invoke(app, ["archive", "scan", str(SHARED), "--center", str(c), "--kb", str(kb_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["failed"] == [] and doc["added"]["jobs"] == 7 and doc["added"]["measured"] == 2
    c2 = sqlite3.connect(kb_path)
    fs = {Path(p).name: f for p, f in c2.execute("SELECT l.path, j.filesystem FROM archive_jobs j "
                                                  "JOIN archive_logs l ON l.hash = j.hash")}
    assert {n for n, f in fs.items() if f == "grand"} == {
        p.name for p in SHARED.glob("dlio*.darshan") if "-66999-" in p.name or "-67018-" in p.name}
    assert {f for f in fs.values()} == {"grand", None}
    from ioadvisor.archive.report import center_report
    with KB.open(kb_path) as kb:
        assert center_report(kb)["totals"]["jobs_measured"] == 2
    # each of the two read its training data: a read run each, filed under grand
    ops = sorted(r[0] for r in c2.execute("SELECT op FROM runs WHERE filesystem = 'grand' AND kind = 'production'"))
    assert ops.count("read") == 2


def test_a_worker_reads_every_wheel_log_without_loading_numpy(tmp_path: Path) -> None:
    """An archive worker reads records through cffi (numpy is PyDarshan's record arrays, which the reader never
    makes): loading it would add about 0.2 s of CPU to every worker's start, for nothing. In a fresh process, a
    worker's handler over every wheel log must answer ok for each, with numpy never imported (BG/Q node counts
    included: they are read from the record's struct too)."""
    import subprocess
    import sys
    code = ("import json, sys\n"
            "from ioadvisor.archive.worker import Settings, setup\n"
            "handle = setup(Settings(system='t'))\n"
            "st = [handle((p, '0' * 64))['status'] for p in sys.argv[1:]]\n"
            "print(json.dumps([st, 'numpy' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", code, *map(str, LOGS)], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path, env={**__import__("os").environ,
                                                         "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert out.returncode == 0, out.stderr[-2000:]
    statuses, numpy_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert statuses == ["ok"] * len(LOGS)
    assert numpy_loaded is False


def test_a_scan_looks_its_center_up_once_however_many_batches(tmp_path, kb_path, monkeypatch):
    """A center lookup reads every center file; a scan stores its results in batches, and a lookup per batch cost
    the scanning process as much as the storing. At one log per batch, the wheel's 15 logs make 15 or more
    batches: the center of the scan's system must still be looked up once (a system with no center: None, which
    is not a reason to look again), and every log stored."""
    import ioadvisor.archive.scan as scan_mod
    import ioadvisor.center as center_mod
    calls = []
    real = center_mod.find_center
    monkeypatch.setattr(center_mod, "find_center", lambda *a, **k: calls.append(a) or real(*a, **k))
    monkeypatch.setattr(scan_mod, "BATCH_LOGS", 1)
    _archive(tmp_path / "arch")
    with KB.open(kb_path) as kb:
        out = scan([tmp_path / "arch"], kb, Settings(system="no-such-center"), workers=1)
    assert out.failed == [] and out.added["jobs"] == len(LOGS) >= 15
    assert calls == [("no-such-center",)]
