"""`ioadvise archive scan` on what an archive may hold besides tidy logs: file names of any bytes (a byte that is
not UTF-8, an escape character) and a second scan of the same archive into the same KB at the same time."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from typer.testing import CliRunner  # noqa: E402

from ioadvisor.cli import app  # noqa: E402
from ioadvisor.util import printable  # noqa: E402
from tests.darshan_copies import wheel_logs  # noqa: E402
from tests.test_archive import EDISON  # noqa: E402

runner = CliRunner()
LOGS = wheel_logs()
MEASURED = {"sample-badost.darshan", "sample-goodost.darshan"}     # their files lie under edison's mount


def _odd_names(root: Path) -> dict[bytes, str]:
    """Every wheel log under a name with a byte that is not UTF-8 (0xff; 0xfe and ESC for a few), the second
    named like the first but with the four characters \\xff for its byte 0xff, and an empty file: name (bytes) ->
    the name as reported and stored (each such byte and the ESC as \\xNN)."""
    root.mkdir()
    names = {}
    for i, p in enumerate(LOGS):
        odd = b"\xfe\x1b[31m" if i % 3 == 2 else b"\xff"
        name = os.fsencode(p.stem) + odd + b".darshan"
        if i == 1:        # another log, under the text that shows the first one's name
            name = os.fsencode(LOGS[0].stem) + b"\\xff.darshan"
        shutil.copy(p, os.path.join(os.fsencode(root), name))
        names[name] = printable(os.fsdecode(name))
    open(os.path.join(os.fsencode(root), b"empty\xff.darshan"), "wb").close()
    return names


def test_names_of_any_bytes_are_scanned_stored_and_reported_escaped(tmp_path):
    """Before: UnicodeEncodeError from sqlite on the first such name, no log stored. Now every log is read and
    stored once under its name with \\xNN for each byte that is not UTF-8 or a control character (whose runs a
    name with ESC lost: a run's source may hold none); a second scan finds every path
    unchanged (each name, a byte 0xff or the text \\xff, is its own path); nothing unescaped reaches the output."""
    arch, kb = tmp_path / "arch", tmp_path / "kb.sqlite"
    names = _odd_names(arch)
    center = tmp_path / "edison.toml"
    center.write_text(EDISON)
    base = ["archive", "scan", str(arch), "--kb", str(kb), "--center", str(center), "-j", "2"]
    r = runner.invoke(app, [*base, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["files"] == len(LOGS) + 1 and doc["diagnosed"] == len(LOGS)
    assert doc["added"]["jobs"] == len(LOGS) and doc["added"]["measured"] == len(MEASURED)
    assert doc["failed"] == [{"path": f"{arch}/empty\\xff.darshan", "error": "empty file (0 bytes): not a Darshan log"}]
    db = sqlite3.connect(kb)
    stored = sorted(p for (p,) in db.execute("SELECT path FROM archive_logs WHERE status = 'ok'"))
    assert stored == sorted(f"{arch}/{shown}" for shown in names.values())
    assert len(set(stored)) == len(LOGS) - 1        # the first two logs are shown alike
    sources = {s for (s,) in db.execute("SELECT DISTINCT source FROM runs")}
    assert sources == {f"{arch}/{shown}" for name, shown in names.items()
                       if any(name.startswith(os.fsencode(m[:-8])) for m in MEASURED)}
    assert db.execute("SELECT count(*) FROM archive_paths").fetchone()[0] == len(LOGS) + 1
    again = runner.invoke(app, [*base, "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["unchanged"] == len(LOGS) + 1, again.output
    # the table of a new failure: the byte and the escape character shown as \xNN, no raw ESC
    open(os.path.join(os.fsencode(arch), b"new\xfe\x1b[31m.darshan"), "wb").close()
    table = runner.invoke(app, base)
    assert table.exit_code == 0 and "\x1b" not in table.output and "new\\xfe\\x1b[31m.darshan" in table.output


def test_two_scans_of_one_archive_into_one_kb_at_once(tmp_path):
    """Two `archive scan`s of the same 120 logs into the same new KB, started together (each with two workers):
    both end with exit 0 and no error, and the KB holds each log, job and path once; what the two report as
    added sums to the archive (a log stored by both would count twice, a log lost by both not at all). The
    second waits for the first, says so, and then reads no log (without the wait, both read most of them)."""
    from tests.darshan_copies import with_job
    arch, kb = tmp_path / "arch", tmp_path / "kb.sqlite"
    arch.mkdir()
    src = [p for p in LOGS if p.read_bytes()[:4] in (b"3.10", b"3.21")]
    n = 0
    while n < 120:
        p = src[n % len(src)]
        (arch / f"{n:03d}-{p.name}").write_bytes(with_job(p.read_bytes(), jobid=5000 + n))
        n += 1
    cmd = [str(Path(sys.executable).parent / "ioadvise"), "archive", "scan", str(arch), "--kb", str(kb), "-j", "2",
           "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0 and "rror" not in err and "Traceback" not in err, err
    docs = [json.loads(out) for out, _ in outs]
    assert sorted(d["diagnosed"] for d in docs) == [0, n]
    waited = [err for (_, err), d in zip(outs, docs) if d["diagnosed"] == 0][0]
    # (on a machine so loaded that the first scan ended before the second started, there was nothing to wait for)
    assert waited.strip() in ("", f"another archive scan of {kb} is running: waiting for it to end")
    assert sum(d["added"]["logs"] for d in docs) == sum(d["added"]["jobs"] for d in docs) == n
    db = sqlite3.connect(kb)
    for table, key in (("archive_logs", "hash"), ("archive_jobs", "hash"), ("archive_paths", "path")):
        assert db.execute(f"SELECT count(*), count(DISTINCT {key}) FROM {table}").fetchone() == (n, n), table
    again = json.loads(subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout)
    assert again["unchanged"] == n and again["added"]["logs"] == 0
