"""The center's published KB (`kb publish`, IOADVISE_CENTER_KB): one file on a shared, read-only file system that
every user process reads while staff publish again, with each user's own KB layered on top."""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ioadvisor.errors import KBError
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB

EXE = Path(sys.executable).parent / "ioadvise"
SAMPLES = Path(__file__).resolve().parent / "data" / "samples" / "ior"
ADVISE = ["advise", "--system", "HA8000", "--nodes", "4", "--ranks-per-node", "2", "--bytes-per-rank", "1GiB",
          "--api", "posix", "--layout", "shared", "--json"]


def _ioadvise(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, env=env, timeout=timeout)


def _ok(p: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return p


@contextlib.contextmanager
def _read_only_view(src: Path, view: Path):
    """`view`: `src` as users see it, read-only: a read-only bind mount when this process may mount (root in a
    namespace that allows it), where any attempt to create a file fails. Else `src` itself (staff write there;
    the directory listings before and after are then the only check). Yields whether it is a mount."""
    view.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(src), str(view)], capture_output=True).returncode == 0
    if mounted and subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True).returncode:
        subprocess.run(["umount", str(view)], capture_output=True)
        mounted = False
    if not mounted:
        view.rmdir()
        view.symlink_to(src)
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", str(view)], check=True)


def _ids(p: subprocess.CompletedProcess) -> frozenset[str]:
    return frozenset(r["id"] for r in json.loads(p.stdout))


def test_readers_see_one_whole_snapshot_while_staff_publish_again(tmp_path):
    """Three user processes run `kb list --json` and `advise --json` against the published KB in a read-only
    directory, in a loop, while staff import into their working KB and publish twice. What must NOT happen: a
    reader that fails or prints a traceback; a reader that sees runs of no snapshot (a half-written file, or
    the staff's working KB between publications); a file created beside the published one (-wal, -shm,
    -journal, a temporary left behind)."""
    shared, view = tmp_path / "shared", tmp_path / "view"
    shared.mkdir()
    # staff's cache is the session's: a publication reads there the fits of the reference systems another test
    # made (by content: the same runs, the same center), which the readers' checks do not depend on
    staff = {**os.environ, "IOADVISE_KB": str(tmp_path / "staff.sqlite"), "IOADVISE_CENTER_KB": ""}
    _ok(_ioadvise(staff, "kb", "import", str(SAMPLES / "posix_fpp_2ranks.txt"), "--system", "Mine",
                  "--filesystem", "lus"))
    _ok(_ioadvise(staff, "kb", "publish", str(shared)))
    published = view / "kb.sqlite"
    user = lambda i: {**os.environ, "IOADVISE_CENTER_KB": str(published),   # noqa: E731
                      "IOADVISE_KB": str(tmp_path / f"user{i}" / "kb.sqlite"),
                      "XDG_CACHE_HOME": str(tmp_path / f"user{i}" / "cache")}
    for i in range(4):        # each user has a KB of their own (where their stored fits go)
        KB.open(tmp_path / f"user{i}" / "kb.sqlite", reference=False).close()
    with _read_only_view(shared, view) as mounted:
        before = sorted(os.listdir(shared))
        assert before == ["kb.sqlite"]
        snapshots = [_ids(_ok(_ioadvise(user(0), "kb", "list", "--json")))]
        answers = {json.dumps(json.loads(_ok(_ioadvise(user(0), *ADVISE)).stdout), sort_keys=True)}
        seen: list[frozenset[str]] = []
        advised: list[str] = []
        failures: list[str] = []
        stop = threading.Event()

        def reader(i: int) -> None:
            n = 0
            while not stop.is_set() or n < 2:
                n += 1
                for args in (("kb", "list", "--json"), ADVISE):
                    p = _ioadvise(user(i), *args)
                    if p.returncode or "Traceback" in p.stderr:
                        failures.append(f"reader {i}: {' '.join(args)}: exit {p.returncode}: {p.stderr[-500:]}")
                    elif args[0] == "kb":
                        seen.append(_ids(p))
                    else:
                        advised.append(json.dumps(json.loads(p.stdout), sort_keys=True))

        threads = [threading.Thread(target=reader, args=(i,)) for i in range(1, 4)]
        for t in threads:
            t.start()
        def readers_saw(snapshot: frozenset[str]) -> None:
            """Wait (5 minutes at most) until a reader has listed exactly these runs."""
            deadline = time.monotonic() + 300
            while snapshot not in seen and not failures and time.monotonic() < deadline:
                time.sleep(0.1)
        try:
            readers_saw(snapshots[0])
            for sample, system in (("posix_shared_2ranks.txt", "Mine"), ("mpiio_indep_2ranks.json", "HA8000")):
                _ok(_ioadvise(staff, "kb", "import", str(SAMPLES / sample), "--system", system,
                              "--filesystem", "lustre" if system == "HA8000" else "lus"))
                _ok(_ioadvise(staff, "kb", "publish", str(shared)))
                snapshots.append(_ids(_ok(_ioadvise(user(0), "kb", "list", "--json"))))
                answers.add(json.dumps(json.loads(_ok(_ioadvise(user(0), *ADVISE)).stdout), sort_keys=True))
                readers_saw(snapshots[-1])
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=600)
        after = sorted(os.listdir(shared))
        if mounted:       # the view really is read-only: a reader that tried to write would have failed above
            assert subprocess.run(["touch", str(view / "probe")], capture_output=True).returncode != 0
    assert not failures, "\n".join(failures)
    assert after == before, f"files created beside the published KB: {sorted(set(after) - set(before))}"
    # each publication added runs: three distinct snapshots, each a superset of the one before
    assert len(set(snapshots)) == 3 and snapshots[0] < snapshots[1] < snapshots[2]
    assert seen and all(s in snapshots for s in seen), [len(s) for s in set(seen) if s not in snapshots]
    # the readers ran across the publications: they saw the first snapshot and the last
    assert snapshots[0] in seen and snapshots[2] in seen
    assert advised and set(advised) <= answers


def test_a_published_kb_serves_the_guide_and_users_keep_their_own_runs_on_top(tmp_path):
    staff = {**os.environ, "IOADVISE_KB": str(tmp_path / "staff.sqlite"), "IOADVISE_CENTER_KB": ""}
    _ok(_ioadvise(staff, "kb", "import", str(SAMPLES / "posix_fpp_2ranks.txt"), "--system", "Mine",
                  "--filesystem", "lus"))
    shared = tmp_path / "shared"
    shared.mkdir()
    res = json.loads(_ok(_ioadvise(staff, "kb", "publish", str(shared / "center.sqlite"), "--json")).stdout)
    assert res["center_runs"] == 2 and res["runs"] == res["center_runs"] + res["reference_runs"]
    doc = (Path(__file__).resolve().parent.parent / "docs" / "json.md").read_text().split("## `kb publish --json`")[1]
    assert all(f"`{k}`" in doc.split("\n## ")[0] for k in res), "docs/json.md names every field kb publish prints"
    shared.chmod(0o555)
    try:
        user = {**os.environ, "IOADVISE_CENTER_KB": res["path"], "IOADVISE_KB": str(tmp_path / "me.sqlite"),
                "XDG_CACHE_HOME": str(tmp_path / "my-cache")}
        out = json.loads(_ok(_ioadvise(user, "docs", "build", "--out", str(tmp_path / "site"), "--json")).stdout)
        assert "Mine" in out["systems"] and "HA8000" in out["systems"]
        # the user's own run lands in the user's KB, next to the center's runs, not in the published file
        _ok(_ioadvise(user, "kb", "import", str(SAMPLES / "posix_shared_2ranks.txt"), "--system", "Mine",
                      "--filesystem", "lus"))
        runs = json.loads(_ok(_ioadvise(user, "kb", "list", "--system", "Mine", "--json")).stdout)
        assert sorted(r["origin"] for r in runs) == ["reference", "reference", "user", "user"]
        stats = json.loads(_ok(_ioadvise(user, "kb", "stats", "--json")).stdout)
        assert stats["published"]["snapshot"] == res["snapshot"]
    finally:
        shared.chmod(0o755)
    assert sorted(os.listdir(shared)) == ["center.sqlite"]
    # what must NOT happen: a snapshot opened as a working KB (switched to WAL in place under its readers), or the
    # working KB replaced by its own snapshot
    size = (shared / "center.sqlite").stat().st_size
    for kb, target in ((shared / "center.sqlite", tmp_path / "again.sqlite"), (tmp_path / "staff.sqlite",) * 2):
        p = _ioadvise(staff, "kb", "publish", str(target), "--kb", str(kb))
        assert p.returncode == 2 and "Traceback" not in p.stderr and str(kb) in p.stderr, p.stderr
    assert sorted(os.listdir(shared)) == ["center.sqlite"] and (shared / "center.sqlite").stat().st_size == size
    assert not (tmp_path / "again.sqlite").exists()


def test_stored_fits_are_refitted_after_a_new_publication(tmp_path, monkeypatch):
    """A user's KB stores fits keyed by what they rest on. The published file keeps its name from one
    publication to the next: fits stored against the first snapshot must NOT serve the second, which has more
    runs of the system."""
    from ioadvisor.advise import fits
    from ioadvisor.kb.publish import publish
    staff, shared = tmp_path / "staff.sqlite", tmp_path / "shared"
    shared.mkdir()
    with KB.open(staff) as kb:
        import_file(kb, SAMPLES / "posix_fpp_2ranks.txt", system="Mine", filesystem="lus")
    target = Path(publish(staff, shared)["path"])
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(target))
    mine = tmp_path / "me.sqlite"

    def n_runs() -> int:
        fits._CACHE.clear()                                          # a new process
        with KB.open(mine) as kb:
            return sum(f.n_runs for f in fits.system_fits(kb, "Mine").values())
    first = n_runs()
    monkeypatch.delenv("IOADVISE_CENTER_KB")
    with KB.open(staff) as kb:
        import_file(kb, SAMPLES / "posix_shared_2ranks.txt", system="Mine", filesystem="lus")
    publish(staff, shared)
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(target))
    assert (first, n_runs()) == (2, 4)


def test_a_center_kb_that_cannot_be_read_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(tmp_path / "missing.sqlite"))
    with pytest.raises(KBError, match="missing.sqlite: does not exist; IOADVISE_CENTER_KB"):
        KB.open(None, create=False)
    # a snapshot of another schema is refused with the fix, not read with the wrong columns
    from ioadvisor.kb.publish import publish
    staff, out = tmp_path / "staff.sqlite", tmp_path / "kb.sqlite"
    monkeypatch.delenv("IOADVISE_CENTER_KB")
    KB.open(staff).close()
    publish(staff, out)
    with sqlite3.connect(out) as c:
        c.execute("PRAGMA user_version = 1")
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(out))
    with pytest.raises(KBError, match="publish it again"):
        KB.open(None, create=False)
    p = _ioadvise({**os.environ}, "kb", "list")
    assert p.returncode == 1 and "Traceback" not in p.stderr and str(out) in p.stderr


def _text_cells(path: Path) -> list[str]:
    """Every text cell of every table of the sqlite file at `path`."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [v for t in tables for row in conn.execute(f'SELECT * FROM "{t}"') for v in row if isinstance(v, str)]
    finally:
        conn.close()


def test_the_snapshot_publishes_no_users_job(tmp_path, monkeypatch):
    """The snapshot is world-readable: a production run of the staff KB (a user's Darshan log from the archive,
    a job record from `jobs collect`) must NOT carry into it the log's or record's path, the job id, the host or
    the user's command line, and the staff KB's own path must not be in it either: no text cell of any table
    holds one of them, and neither do the file's bytes (free pages included)."""
    from typer.testing import CliRunner
    from ioadvisor.cli import app
    monkeypatch.setenv("IOADVISE_CENTER_KB", "")
    darshan = Path(__import__("darshan").__file__).parent / "examples" / "example_logs" / "example.darshan"
    logs, records = tmp_path / "bob-private-logs", tmp_path / "alice-secret-records"
    logs.mkdir()
    records.mkdir()
    (logs / "bob.darshan").write_bytes(darshan.read_bytes())
    (records / "ioadvise-98765432.json").write_text(json.dumps(
        {"job_id": "98765432", "host": "node-secret-17", "start": 100, "end": 110, "exit_code": 0,
         "staged_out_bytes": 10 << 20, "stage_out_seconds": 1,
         "settings": {"tier": {"name": "beeond"}, "stripe_count": 4, "stripe_size": 1 << 20}}))
    center = tmp_path / "s.toml"     # example.darshan's files lie under /scratch2
    center.write_text('name = "s"\n[[filesystems]]\nname = "fs0"\ntype = "lustre"\nmount = "/scratch2"\n'
                      'ost_count = 8\n[[filesystems]]\nname = "beeond"\ntype = "beegfs"\nmount = "/beeond"\n'
                      '[[tiers]]\nname = "beeond"\nfilesystem = "beeond"\nkind = "per-job"\nmount = "/beeond"\n')
    staff_dir = tmp_path / "staff-kb-secret"
    staff = staff_dir / "kb.sqlite"
    runner = CliRunner()
    for args in (["kb", "import", str(logs / "bob.darshan"), "--system", "s", "--center", str(center)],
                 ["jobs", "collect", str(records), "--system", "s", "--center", str(center)],
                 ["kb", "import", str(SAMPLES / "posix_fpp_2ranks.txt"), "--system", "s", "--filesystem", "fs0"]):
        res = runner.invoke(app, [*args, "--kb", str(staff)])
        assert res.exit_code == 0, res.output
    planted = ["bob-private", "alice-secret", "98765432", "node-secret-17", "4478544", "tokio-abc-results",
               "vpicio_uni", str(staff_dir), "staff-kb-secret"]
    # the staff KB holds every planted string (else the check below proves nothing)
    staff_cells = "\n".join(_text_cells(staff))
    assert [s for s in planted if s not in staff_cells] == [str(staff_dir), "staff-kb-secret"]
    # as `kb publish` does it: the stored fits and evidence of every system in it too
    res = runner.invoke(app, ["kb", "publish", str(tmp_path / "shared.sqlite"), "--kb", str(staff), "--json"])
    assert res.exit_code == 0, res.output
    out = Path(json.loads(res.stdout)["path"])
    cells = _text_cells(out)
    assert any('"s"' in c or c == "s" for c in cells)       # the system's rows (and fits) are there
    leaked = sorted({s for s in planted for c in cells if s in c})
    assert leaked == [], leaked
    data = out.read_bytes()
    assert [s for s in planted if s.encode() in data] == []
    # the production runs themselves are published: their measurements, with what they are
    with sqlite3.connect(out) as c:
        prod = c.execute("SELECT importer, value, total_bytes, notes, job_id, source, command FROM runs "
                         "WHERE kind = 'production' ORDER BY importer").fetchall()
    assert [(i, b, j, s, cmd) for i, _, b, _, j, s, cmd in prod] == [
        ("darshan/1", 2199023263277, None, "production job", None), ("jobrecord/1", 10 << 20, None,
                                                                       "production job", None)]
    assert all("lower bound" in n for *_, n, _, _, _ in prod)
