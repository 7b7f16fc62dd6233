"""What one Darshan log may cost to read: a log of 1,000,000 POSIX records deflates to 5.6 MB (every record a copy
of one, under its own id) and took 2.9 GB in `diagnose` (MemoryError at a 3 GB cap), and an archive worker
3.75 GB, with no limit. The reader refuses a log of more than MAX_RECORDS records in one line, and each archive
worker runs under an address-space limit (--worker-memory): a log that needs more fails alone."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from typer.testing import CliRunner  # noqa: E402

from ioadvisor.cli import app  # noqa: E402
from ioadvisor.darshanlog import derive  # noqa: E402
from tests.darshan_copies import wheel_logs, with_records  # noqa: E402

runner = CliRunner()
# one POSIX record of the library's current layout, no other I/O module read
SRC = next(p for p in wheel_logs() if p.name.startswith("pq_app_read_id71317"))
IOADVISE = Path(sys.executable).parent / "ioadvise"


def test_a_million_records_is_refused_in_one_line(tmp_path):
    """The issue's log: 1,000,000 POSIX records in 5.6 MB. diagnose stops at record 200,001 and says so, exit 2."""
    log = tmp_path / "million.darshan"
    log.write_bytes(with_records(SRC, "POSIX", 1_000_000))
    assert log.stat().st_size < 6_000_000
    r = runner.invoke(app, ["diagnose", str(log), "--json"])
    assert r.exit_code == 2 and "Traceback" not in r.output and "MemoryError" not in r.output, r.output
    assert r.output.strip() == (f"Error: {log}: the log holds more than 200,000 records (of POSIX and the modules "
                                f"before it): more than one log may take to read (about 4 KB of memory each); "
                                f"refused")


def test_the_record_cap_counts_every_record_and_no_more(tmp_path, monkeypatch):
    """At a cap of 50 (the forked reader inherits it): 50 POSIX records are read, 51 refused; the pq log's one
    STDIO record is read after POSIX, so 49 POSIX records + 1 STDIO fit and 50 + 1 do not."""
    monkeypatch.setattr(derive, "MAX_RECORDS", 50)
    for n, ok in ((49, True), (50, False), (51, False)):
        log = tmp_path / f"n{n}.darshan"
        log.write_bytes(with_records(SRC, "POSIX", n))
        r = runner.invoke(app, ["diagnose", str(log), "--json"])
        if ok:
            assert r.exit_code == 0 and json.loads(r.stdout)["job"]["files"] >= n, r.output
        else:
            assert r.exit_code == 2 and "more than 50 records" in r.output, (n, r.output)


def test_a_worker_over_its_memory_limit_fails_that_log_alone(tmp_path):
    """190,000 records (just under the reader's cap of 200,000) take between 400 and 600 MiB of address space to
    read in a worker (which loads no numpy); under --worker-memory 300MiB the worker reading them gets
    MemoryError, the log is listed as failed with the limit, the worker is replaced, and the small log of the same
    scan is read. (Without the limit the worker took what the log asked for.)"""
    arch = tmp_path / "arch"
    arch.mkdir()
    (arch / "big.darshan").write_bytes(with_records(SRC, "POSIX", 190_000))
    (arch / "small.darshan").write_bytes(SRC.read_bytes())
    r = subprocess.run([str(IOADVISE), "archive", "scan", str(arch), "--kb", str(tmp_path / "kb.sqlite"), "-j", "1",
                        "--worker-memory", "300MiB", "--timeout", "600", "--json"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    assert doc["added"]["jobs"] == 1
    assert [(Path(f["path"]).name, f["error"]) for f in doc["failed"]] == [
        ("big.darshan", "reading the log needs more memory than the reader's limit of 300 MiB; refused")]
