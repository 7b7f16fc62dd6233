"""The published knowledge base against a hostile or broken environment: a symbolic link planted where the
snapshot goes, a named pipe or a device named as a KB, read-only media, a signal in the middle of a
publication."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ioadvisor.errors import KBError, UsageError
from ioadvisor.kb import KB
from ioadvisor.kb.publish import publish

EXE = Path(sys.executable).parent / "ioadvise"
SAMPLES = Path(__file__).resolve().parent / "data" / "samples" / "ior"


@pytest.fixture
def staff(tmp_path, monkeypatch) -> Path:
    """A staff KB of two runs (the environment private to the test; the cache the session's, where the fits of
    the reference systems a publication makes are read by content once another test made them)."""
    monkeypatch.setenv("IOADVISE_CENTER_KB", "")
    from ioadvisor.ingest import import_file
    path = tmp_path / "staff.sqlite"
    with KB.open(path) as kb:
        import_file(kb, SAMPLES / "posix_fpp_2ranks.txt", system="Mine", filesystem="lus")
    return path


def _tree(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


@pytest.mark.parametrize("to", ["directory", "file"])
def test_publish_never_writes_through_a_planted_symlink(staff, tmp_path, to):
    """`kb publish shared/kb.sqlite` (or `kb publish shared`) where someone planted kb.sqlite as a symbolic link
    to a directory or file elsewhere: what must NOT happen is a file written or replaced there, or the link
    replaced silently. Refused, naming the link."""
    shared, elsewhere = tmp_path / "shared", tmp_path / "victim"
    shared.mkdir()
    elsewhere.mkdir()
    (elsewhere / "kb.sqlite").write_bytes(b"victim's own file")
    link_to = elsewhere if to == "directory" else elsewhere / "kb.sqlite"
    (shared / "kb.sqlite").symlink_to(link_to)
    before = {p: p.read_bytes() for p in elsewhere.iterdir()}
    for target in (shared / "kb.sqlite", shared):
        with pytest.raises(UsageError, match=r"kb\.sqlite: is a symbolic link .*never writes through"):
            publish(staff, target)
    assert {p: p.read_bytes() for p in elsewhere.iterdir()} == before
    assert _tree(shared) == ["kb.sqlite"] and os.readlink(shared / "kb.sqlite") == str(link_to)


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "kb.fifo"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize("special", ["fifo", "/dev/null"])
def test_a_kb_that_is_no_regular_file_is_refused_by_its_type(staff, tmp_path, monkeypatch, special):
    """IOADVISE_KB or IOADVISE_CENTER_KB naming a named pipe made every command wait forever (sqlite opened it);
    /dev/null was called "does not exist". Each is refused at once, naming the file and what it is."""
    path = _fifo(tmp_path) if special == "fifo" else Path(special)
    what = "a named pipe" if special == "fifo" else "a device"
    with pytest.raises(KBError, match=f"^{path}: is {what}, not a regular file"):
        KB.open(path)
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(path))
    with pytest.raises(KBError, match=f"^{path}: is {what}, not a regular file.*IOADVISE_CENTER_KB names"):
        KB.open(tmp_path / "mine.sqlite")
    monkeypatch.setenv("IOADVISE_CENTER_KB", "")
    with pytest.raises(UsageError, match=f"^{path}: is {what}, not a regular file"):
        publish(path, tmp_path / "out.sqlite")
    assert not (tmp_path / "out.sqlite").exists()


def test_every_command_refuses_a_fifo_kb_and_submit_fails_open(tmp_path):
    """What must NOT happen: a command that hangs (each runs under a timeout here) or prints a traceback; submit
    must submit the script unchanged (fail open), not hang or stop the job."""
    fifo = _fifo(tmp_path)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun ./app\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "IOADVISE_CENTER_KB": ""}
    for var in ("IOADVISE_KB", "IOADVISE_CENTER_KB"):
        e = {**env, var: str(fifo)}
        for args in (["kb", "list"], ["systems"], ["docs", "build", "--out", str(tmp_path / "site")],
                     ["advise", "--system", "HA8000", "--nodes", "2", "--ranks-per-node", "4", "--bytes-per-rank", "1GiB"]):
            p = subprocess.run([str(EXE), *args], capture_output=True, text=True, env=e, timeout=120)
            assert p.returncode == 1 and "Traceback" not in p.stderr, (var, args, p.stderr)
            assert f"{fifo}: is a named pipe" in p.stderr, (var, args, p.stderr)
        p = subprocess.run([str(EXE), "submit", "--dry-run", str(script), "--center", "ha8000", "--bytes-per-rank",
                            "1GiB"], capture_output=True, text=True, env=e, timeout=120)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (var, p.stderr)
        assert "submitted unchanged" in p.stderr and f"{fifo}: is a named pipe" in p.stderr, (p.stdout, p.stderr)


def test_publish_from_read_only_media(staff, tmp_path):
    """A staff KB (WAL mode) on a read-only mount: "unable to open database file" before (SQLite cannot make
    the shared-memory file beside it to read it); published now, with every run."""
    media = tmp_path / "media"
    media.mkdir()
    os.replace(staff, media / "kb.sqlite")
    conn = sqlite3.connect(media / "kb.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    assert _tree(media) == ["kb.sqlite"]
    view = tmp_path / "ro"
    view.mkdir()
    if subprocess.run(["mount", "--bind", str(media), str(view)], capture_output=True).returncode:
        pytest.skip("a read-only bind mount needs privileges this process lacks")
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True).returncode:
            pytest.skip("the bind mount cannot be made read-only here")
        res = publish(view / "kb.sqlite", tmp_path / "out.sqlite")
        assert _tree(view) == ["kb.sqlite"]
    finally:
        subprocess.run(["umount", str(view)], check=True)
    assert res["center_runs"] == 2


# `kb publish` with the step that fills the snapshot replaced by one that signals the process half-way: the
# snapshot's temporary file is full by then (the copy is done)
SIGNAL = textwrap.dedent("""
    import os, signal, sys, time
    import ioadvisor.kb.publish as publish
    NAME = sys.argv[1]
    real = publish._summarise
    def summarise(conn):
        real(conn)
        os.kill(os.getpid(), getattr(signal, NAME))
        time.sleep(30)
    publish._summarise = summarise
    sys.argv = ["ioadvise", "kb", "publish", sys.argv[2], "--kb", sys.argv[3]]
    from ioadvisor.cli import main
    main()
""")


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_during_publish_leaves_no_temporary_file(staff, tmp_path, name):
    """What must NOT happen: a `.kb.sqlite.*.tmp` file left in the shared directory, or the snapshot users
    read replaced or changed; the command exits 128 + the signal's number."""
    shared = tmp_path / "shared"
    shared.mkdir()
    publish(staff, shared)
    before = (shared / "kb.sqlite").read_bytes()
    p = subprocess.run([sys.executable, "-c", SIGNAL, name, str(shared), str(staff)], capture_output=True,
                       text=True, timeout=120, env={**os.environ})
    assert p.returncode == 128 + getattr(signal, name), (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr, p.stderr
    assert _tree(shared) == ["kb.sqlite"] and (shared / "kb.sqlite").read_bytes() == before


def _published(staff: Path, tmp_path: Path) -> Path:
    return Path(publish(staff, tmp_path / "shared.sqlite")["path"])


@pytest.mark.parametrize("cut", [100, 4096, -7])
def test_a_snapshot_cut_short_or_extended_is_refused_on_open(staff, tmp_path, monkeypatch, cut):
    """A snapshot truncated by less than a page was read as rows of NULLs (the page's cells lie at its end);
    by whole pages or with bytes appended it is no longer the file published either. What must NOT happen: any
    command reading it. Refused on open, in one line naming the file, before a row is read."""
    out = _published(staff, tmp_path)
    data = out.read_bytes()
    out.write_bytes(data[:-cut] if cut > 0 else data + b"\0" * -cut)
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(out))
    with pytest.raises(KBError, match=f"^{out}: truncated or altered: .*publish it again"):
        KB.open(tmp_path / "mine.sqlite")
    p = subprocess.run([str(EXE), "kb", "list", "--json"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "IOADVISE_KB": str(tmp_path / "mine.sqlite")})
    assert p.returncode == 1 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.count("\n") == 1 and str(out) in p.stderr and "truncated or altered" in p.stderr


def test_a_snapshot_altered_in_place_is_refused_by_its_digest(staff, tmp_path, monkeypatch):
    """One byte of a run changed in place (its system's name): the size is right, so the cheap check on open
    lets it through, but `kb stats` reads the whole file against the digest it was published with and refuses
    it; the intact file passes and reports its digest."""
    out = _published(staff, tmp_path)
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(out))
    with KB.open(tmp_path / "mine.sqlite") as kb:
        digest = kb.stats()["published"]["sha256"]
    assert len(digest) == 64 and digest.encode() in out.read_bytes()
    data = bytearray(out.read_bytes())
    at = data.find(b"Mine")
    assert at > 0
    data[at:at + 4] = b"Mind"
    out.write_bytes(bytes(data))
    with KB.open(tmp_path / "mine.sqlite") as kb:
        assert kb.conn.execute("SELECT count(*) FROM ref.runs").fetchone()[0] > 0     # it opens and reads
        with pytest.raises(KBError, match=f"^{out}: altered since it was published"):
            kb.stats()


ADVISE = ["advise", "--system", "HA8000", "--nodes", "4", "--ranks-per-node", "2", "--bytes-per-rank", "1GiB",
          "--api", "posix", "--layout", "shared", "--json"]


def test_advise_from_the_snapshot_fits_nothing_and_writes_nothing(staff, tmp_path, monkeypatch):
    """The snapshot carries the fits and evidence index of every system, made at publication and keyed by its
    id. What must NOT happen, for a user whose home has nothing (no KB, no cache) or whose KB holds runs of other
    systems only: a fit (fit_all, or the system's runs read to fit or index them), or a file written; the answer is the one a fit gives.
    A user's run of the system itself is refitted, with the snapshot's runs."""
    import json
    from typer.testing import CliRunner
    from ioadvisor.advise import fits
    from ioadvisor.cli import app
    runner = CliRunner()
    res = runner.invoke(app, ["kb", "publish", str(tmp_path / "snap.sqlite"), "--kb", str(staff), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["fitted_systems"] >= 2
    snap = tmp_path / "snap.sqlite"
    before = snap.read_bytes()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(snap))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))

    def advise(kb: Path) -> dict:
        fits._CACHE.clear()
        fits._EVIDENCE.clear()                  # a new process
        out = runner.invoke(app, [*ADVISE, "--kb", str(kb)])
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)
    fitted = advise(home / "none.sqlite")       # the snapshot's stored fits (checked equal to a fit below)
    calls: list[str] = []
    real_fit, real_load = fits.fit_all, fits.load_system_runs
    monkeypatch.setattr(fits, "fit_all", lambda *a, **k: calls.append("fit") or real_fit(*a, **k))
    # the runs a fit or a new evidence index is made from
    monkeypatch.setattr(fits, "load_system_runs", lambda *a, **k: calls.append("runs") or real_load(*a, **k))
    assert advise(home / "none.sqlite") == fitted and calls == []
    assert sorted(os.listdir(home)) == [] and snap.read_bytes() == before
    from ioadvisor.ingest import import_file
    monkeypatch.setenv("IOADVISE_CENTER_KB", "")
    mine = home / "mine.sqlite"
    with KB.open(mine, reference=False) as kb:
        import_file(kb, SAMPLES / "posix_shared_2ranks.txt", system="Other", filesystem="lus")
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(snap))
    assert advise(mine) == fitted and calls == []
    # without the stored fits (the snapshot copied with them dropped): the same answer, from a fit
    bare = tmp_path / "bare.sqlite"
    bare.write_bytes(before)
    with sqlite3.connect(bare) as c:
        c.execute("DELETE FROM advise_fits")
        c.execute("DELETE FROM advise_evidence")
        c.execute("UPDATE published SET sha256 = NULL")
    c.close()
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(bare))
    assert advise(home / "none.sqlite") == fitted and calls and "fit" in calls
    monkeypatch.setenv("IOADVISE_CENTER_KB", str(snap))
    calls.clear()
    with KB.open(mine, reference=False) as kb:
        import_file(kb, SAMPLES / "mpiio_indep_2ranks.json", system="HA8000", filesystem="lustre")
    advise(mine)
    assert "fit" in calls                       # the user's own run of HA8000 enters a refit
