"""Every command that reads a user's file refuses a named pipe and a device unopened, and a file larger than
the cap of its kind unread (ioadvisor.inputs): one line naming the file, exit code 2, within seconds and in
bounded memory. Before, `center check /dev/zero` grew to 23 GB, `submit`, `advise`, `diagnose --thresholds`
and `archive scan --thresholds` on /dev/zero to 7-16 GB, and a FIFO without a writer hung `kb import`,
`diagnose`, `center check`, `advise --script` and `submit` for good."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from darshan_copies import wheel_logs
from measured import run_measured

from ioadvisor.darshanlog.header import MIN_HEADER_BYTES
from ioadvisor.inputs import LOG

PEAK_MB = 300          # what a refusal may cost: the interpreter and its imports, not the file
SECONDS = 10           # a refusal is a stat and one line; the rest is start-up on a loaded machine
EXAMPLE = next(p for p in wheel_logs() if p.name == "example.darshan")

# each command with the place of the file it reads (X), and what else it needs
COMMANDS = [
    ["center", "check", "X"],
    ["submit", "X"],
    ["wrap", "X", "-o", "{tmp}/wrapped.sh"],
    ["advise", "--script", "X"],
    ["advise", "--workload", "X"],
    ["diagnose", "X"],
    ["diagnose", str(EXAMPLE), "--thresholds", "X"],
    ["archive", "scan", str(EXAMPLE), "--thresholds", "X", "--kb", "{tmp}/kb.sqlite"],
    ["kb", "import", "X", "--kb", "{tmp}/kb.sqlite"],
    ["jobs", "collect", "X", "--kb", "{tmp}/kb.sqlite"],
    ["bench", "sweep", "X"],
    # a center given as a path: it was looked up as a center's name ("unknown center '/dev/zero'")
    ["advise", "-N", "1", "-n", "1", "--bytes-per-rank", "1GiB", "--center", "X"],
    ["docs", "build", "-o", "{tmp}/site", "--center", "X"],
]


def _refused_quickly(args: list[str], name: str, why: str) -> None:
    rc, out, err, secs, peak = run_measured(*args, timeout=60)
    lines = err.strip().splitlines()
    assert rc == 2, (args, rc, err)
    assert len(lines) == 1 and lines[0].startswith(f"Error: {name}: ") and why in lines[0], (args, err)
    assert secs < SECONDS and peak < PEAK_MB, (args, secs, peak)


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c[:2]) + (" " + c[-2] if "X" != c[-1] else ""))
def test_a_named_pipe_without_a_writer_and_dev_zero_are_refused(tmp_path, cmd):
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    for x, why in ((str(fifo), "named pipe"), ("/dev/zero", "is a device")):
        args = [x if a == "X" else a.format(tmp=tmp_path) for a in cmd]
        if cmd[:2] == ["kb", "import"] and x == str(fifo):
            why = "a pipe: nothing was written to it"   # kb import reads pipes (<(zcat r.gz)), not as a file
        _refused_quickly(args, x, why)
    assert not (tmp_path / "wrapped.sh").exists()


def _sparse_log(path: Path) -> Path:
    """A real log's header, then nothing up to 20 GiB (no disk used)."""
    with open(path, "wb") as f:
        f.write(EXAMPLE.read_bytes()[:MIN_HEADER_BYTES])
        f.truncate(20 << 30)
    return path


def test_a_20_gib_sparse_log_is_refused_without_reading_it(tmp_path):
    log = _sparse_log(tmp_path / "sparse.darshan")
    # hashing 20 GiB took 60 s; the refusal reads the header at most
    _refused_quickly(["diagnose", str(log)], str(log), f"larger than {LOG.limit >> 30} GiB")
    _refused_quickly(["kb", "import", str(log), "--kb", str(tmp_path / "kb.sqlite")], str(log),
                     "larger than 256 MiB, more than the importer of this format reads")


def test_archive_scan_skips_pipes_devices_and_a_sparse_log_with_their_reasons(tmp_path):
    arch = tmp_path / "arch"
    arch.mkdir()
    (arch / "good.darshan").write_bytes(EXAMPLE.read_bytes())
    os.mkfifo(arch / "pipe.darshan")
    (arch / "zero.darshan").symlink_to("/dev/zero")
    (arch / "null.darshan").symlink_to("/dev/null")
    _sparse_log(arch / "sparse.darshan")
    rc, out, err, secs, peak = run_measured("archive", "scan", str(arch), "--kb", str(tmp_path / "kb.sqlite"),
                                            "--json", "-j", "2", timeout=120)
    assert rc == 0, err
    doc = json.loads(out)
    failed = {Path(f["path"]).name: f["error"] for f in doc["failed"]}
    assert set(failed) == {"pipe.darshan", "zero.darshan", "null.darshan", "sparse.darshan"}, failed
    assert "named pipe" in failed["pipe.darshan"]
    assert "is a device" in failed["zero.darshan"] and "is a device" in failed["null.darshan"]
    # over the cap, the header is looked at instead of 20 GiB being hashed
    assert failed["sparse.darshan"].startswith("larger than 2 GiB"), failed["sparse.darshan"]
    assert doc["added"]["jobs"] == 1
    assert secs < 60 and peak < PEAK_MB, (secs, peak)
