"""`ioadvise diagnose LOG` forks the log's reader before the command line is parsed (ioadvisor.console). What must
not happen: a read of a file that is not what the command then checks (a file replaced in between, one the checks
refuse), a reader left running, a FIFO opened, or an answer that differs from the read the command starts itself."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

from ioadvisor.darshanlog import child  # noqa: E402
from ioadvisor.errors import ImportFormatError  # noqa: E402

LOGDIR = Path(darshan.__file__).parent / "examples" / "example_logs"
SCRIPT = str(Path(sys.executable).parent / "ioadvise")


@pytest.fixture(autouse=True)
def _no_read_left():
    """Each test starts with no prefetched read and leaves none behind, whatever it asserted."""
    yield
    while child._started:
        child._started.popitem()[1][1].cancel()


def _gone(pid: int) -> bool:
    """True when `pid` is no child of this process any more (reaped, so neither running nor a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_a_file_replaced_after_the_prefetch_is_read_anew(tmp_path):
    """The prefetched read started on one log; the path then holds another: the answer is the second log's."""
    p = tmp_path / "job.darshan"
    p.write_bytes((LOGDIR / "example.darshan").read_bytes())
    child.prefetch(["--json", str(p)])
    early = child._started[str(p)][1]
    replacement = tmp_path / "other.darshan"
    replacement.write_bytes((LOGDIR / "ior_hdf5_example.darshan").read_bytes())
    os.replace(replacement, p)
    s = child.start_read(p).result()
    assert s.jobid == child.summarize(LOGDIR / "ior_hdf5_example.darshan").jobid
    assert s.jobid != child.summarize(LOGDIR / "example.darshan").jobid
    assert _gone(early.pid) and not child._started


def test_a_prefetched_read_the_checks_refuse_is_stopped(tmp_path):
    """A file with a Darshan header's first 16 bytes but shorter than any header passes the prefetch's look and
    fails the command's check: the error is the check's, and the reader started early is killed and reaped."""
    p = tmp_path / "short.darshan"
    p.write_bytes((LOGDIR / "example.darshan").read_bytes()[:100])
    child.prefetch([str(p)])
    early = child._started[str(p)][1]
    with pytest.raises(ImportFormatError, match="truncated Darshan log: 100 bytes"):
        child.start_read(p)
    assert _gone(early.pid) and not child._started


def test_options_fifos_and_foreign_files_are_not_read(tmp_path):
    fifo = tmp_path / "pipe.darshan"
    os.mkfifo(fifo)
    text = tmp_path / "notes.darshan"
    text.write_text("3. not a log at all\n" * 4)
    child.prefetch(["--center", str(fifo), str(text), str(tmp_path / "missing.darshan")])
    assert not child._started


def test_the_command_gives_the_same_answer_with_and_without_the_prefetch(tmp_path):
    """`ioadvise diagnose` (prefetch) and `python -c 'ioadvisor.cli.main()'` (no prefetch) print the same JSON."""
    log = str(LOGDIR / "example.darshan")
    env = {**os.environ, "IOADVISE_KB": str(tmp_path / "kb.sqlite")}
    a = subprocess.run([SCRIPT, "diagnose", log, "--json"], capture_output=True, text=True, timeout=120, env=env)
    b = subprocess.run([sys.executable, "-c", "from ioadvisor.cli import main; main()", "diagnose", log, "--json"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
    assert json.loads(a.stdout) == json.loads(b.stdout)


def test_a_fifo_named_on_the_command_line_does_not_block(tmp_path):
    fifo = tmp_path / "pipe.darshan"
    os.mkfifo(fifo)
    r = subprocess.run([SCRIPT, "diagnose", str(fifo)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr and str(fifo) in r.stderr
