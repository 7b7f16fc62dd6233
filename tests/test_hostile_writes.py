"""Nothing lost or misread silently: a CSV that is not what it seems is refused (both readings: the importer's
and the KB's fast one), values the model's arithmetic cannot carry are refused at import and harmless when an
older version stored them, and a write that cannot be completed is an error, never exit 0."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ioadvisor.errors import ImportFormatError
from ioadvisor.importers import ImportContext
from ioadvisor.importers import csv as csvimp

from tests.test_hostile_input import DARSHAN, COLS, GOOD, GOOD_ROW, HEADER, digest, ioadvise, one_error_line, seeded_kb  # noqa: F401


def row(**changes: str) -> str:
    r = {**GOOD, **changes}
    return ",".join(r[c] for c in COLS)


def both_readings_refuse(tmp_path: Path, kb: Path, text: str, *needles: str) -> None:
    """The importer's reading (importers.csv.parse) and `kb import`'s (the KB's fast row reader) refuse `text`
    with the same line, and the KB is unchanged."""
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(ImportFormatError) as e:
        csvimp.parse(text.encode(), ImportContext(source=str(bad)))
    for n in needles:
        assert n in str(e.value), str(e.value)
    before = digest(kb)
    one_error_line(ioadvise("kb", "import", bad, "--kb", kb), *needles)
    assert digest(kb) == before


def test_an_unterminated_quote_is_refused_not_read_as_one_cell(tmp_path, seeded_kb):
    # before: exit 0, and the 3rd row's notes held the 4th and 5th rows (three runs stored as one)
    text = (HEADER + "\n" + GOOD_ROW + "\n" + row(notes='"note that never closes', nodes="2") + "\n"
            + row(nodes="3") + "\n" + row(nodes="4") + "\n")
    both_readings_refuse(tmp_path, seeded_kb, text, "bad.csv:3:", "closing quote")


def test_text_after_a_closing_quote_is_refused(tmp_path, seeded_kb):
    text = HEADER + "\n" + GOOD_ROW + "\n" + row(notes='"a"b') + "\n"
    both_readings_refuse(tmp_path, seeded_kb, text, "bad.csv:3:")


@pytest.mark.parametrize("col", ["value", "system", "notes"])
def test_a_column_named_twice_is_refused(col, tmp_path, seeded_kb):
    # before: the last of the two cells was stored, whatever the first said
    header = HEADER + "," + col
    text = header + "\n" + GOOD_ROW + ",7\n"
    both_readings_refuse(tmp_path, seeded_kb, text, "bad.csv:1:", col)


@pytest.mark.parametrize("date", ["2026-13-45", "2026-02-30", "2025-02-29", "0000-01-01", "2026-1-5", "yesterday",
                                  "2026-06-01T25:00"])
def test_an_impossible_date_is_refused(date, tmp_path, seeded_kb):
    text = HEADER + ",date\n" + GOOD_ROW + ",\n" + GOOD_ROW + f",{date}\n"
    both_readings_refuse(tmp_path, seeded_kb, text, "bad.csv:3:", "date")


@pytest.mark.parametrize("date", ["2024-02-29", "2019", "2019-05", "2026-06-01T12:30:00+02:00"])
def test_real_dates_are_kept_as_given(date, tmp_path):
    kb = tmp_path / "kb.sqlite"
    good = tmp_path / "good.csv"
    good.write_text(HEADER + ",date\n" + GOOD_ROW + f",{date}\n")
    assert ioadvise("kb", "import", good, "--kb", kb).exit_code == 0
    listed = json.loads(ioadvise("kb", "list", "--kb", kb, "--system", "sysA", "--json").stdout)
    assert [r["provenance"]["date"] for r in listed] == [date]
    (run,) = csvimp.parse(good.read_bytes(), ImportContext(source="good.csv"))
    assert run.provenance.date == date


@pytest.mark.parametrize("value,unit", [("5e-324", "MiB/s"), ("1e-300", "MiB/s"), ("1e-7", "MiB/s"),
                                        ("1e-12", "GiB/s"), ("1e-5", "ops/s")])
def test_values_below_any_measurement_are_refused(value, unit, tmp_path, seeded_kb):
    # 1e-7 MiB/s is a tenth of a byte per second; 1e-5 ops/s one operation in 28 hours
    op = "file_create" if unit == "ops/s" else "write"
    text = HEADER + "\n" + GOOD_ROW + "\n" + row(value=value, unit=unit, op=op) + "\n"
    both_readings_refuse(tmp_path, seeded_kb, text, "bad.csv:3:", "below any real measurement")


@pytest.mark.parametrize("value,unit", [("0", "MiB/s"), ("1e-6", "MiB/s"), ("0.001", "ops/s")])
def test_small_real_values_are_accepted(value, unit, tmp_path):
    kb = tmp_path / "kb.sqlite"
    good = tmp_path / "good.csv"
    op = "file_create" if unit == "ops/s" else "write"
    good.write_text(HEADER + "\n" + row(value=value, unit=unit, op=op) + "\n")
    assert ioadvise("kb", "import", good, "--kb", kb).exit_code == 0


@pytest.mark.parametrize("stored", [5e-324, 1e-300])
def test_a_stored_tiny_value_does_not_break_the_model(stored, tmp_path):
    """A value an older version let in: `advise` and `kb validate` still answer (before: OverflowError)."""
    kb = tmp_path / "kb.sqlite"
    good = tmp_path / "runs.csv"
    rows = [row(op="read", layout="shared", nodes=str(n), ranks=str(4 * n), stripe_count=str(1 + i % 4),
                value=str(100 * n)) for i, n in enumerate((1, 2, 4, 8, 16, 32))]
    rows += [row(op="read", layout=lay, nodes=str(n), ranks=str(4 * n), stripe_count="2", value="1")
             for lay, n in (("shared", 3), ("fpp", 5))]
    good.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    assert ioadvise("kb", "import", good, "--kb", kb).exit_code == 0
    with sqlite3.connect(kb) as conn:     # what an older version stored
        assert conn.execute("UPDATE runs SET value = ?, value_given = ? WHERE value = 1",
                            (stored, stored)).rowcount == 2
    conn.close()
    res = ioadvise("advise", "--kb", kb, "--system", "sysA", "--nodes", 2, "--ranks-per-node", 4,
                   "--bytes-per-rank", "1GiB", "--op", "read", "--json")
    assert res.exit_code == 0, res.output
    json.loads(res.stdout)
    # the system holding the tiny values only: a run over every system would refit the reference systems too
    # (a minute), whose values are none of this test's
    res = ioadvise("kb", "validate", "--kb", kb, "--system", "sysA", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["systems"]["sysA"]["n"] >= 1


# ---- writes that cannot complete ------------------------------------------------------------------------------
EXE = Path(sys.executable).parent / "ioadvise"
TSUBAME = Path(__file__).resolve().parent.parent / "data" / "centers" / "tsubame3.toml"


def run_cli(*args: object, stdout: Any = subprocess.PIPE, unbuffered: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([str(EXE), *map(str, args)], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=120, env=env)


def failed_in_one_line(p: subprocess.CompletedProcess, *needles: str, code: int = 1) -> None:
    assert p.returncode == code, (p.returncode, p.stderr)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@contextlib.contextmanager
def small_fs(d: Path, size: str):
    """A tmpfs of `size` mounted at `d` (skips where it cannot be mounted), unmounted afterwards."""
    d.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


@pytest.fixture
def full_dir(tmp_path: Path):
    """A 64 KiB file system already holding 32 KiB: the next 32 KiB fit, nothing beyond."""
    with small_fs(tmp_path / "full", "64k") as d:
        (d / "pad").write_bytes(b"\0" * (32 << 10))
        yield d


REPORTS = [("kb", "list", "--json", "--kb"), ("kb", "list", "--kb"), ("kb", "stats", "--json", "--kb"),
           ("kb", "stats", "--kb"), ("kb", "export", "--format", "csv", "--kb"),
           ("kb", "export", "--format", "json", "--kb"),
           ("advise", "--system", "tsubame3", "--nodes", "2", "--ranks-per-node", "4", "--bytes-per-rank", "1GiB",
            "--json", "--kb"),
           ("center", "check", str(TSUBAME), "--json"), ("diagnose", str(DARSHAN), "--json")]


@pytest.mark.parametrize("args", REPORTS, ids=lambda a: "-".join(Path(x).name for x in a[:3]))
def test_stdout_on_dev_full_is_one_line_and_exit_1(args, seeded_kb):
    # before: a 40-line traceback (OSError: No space left on device)
    args = args + ((seeded_kb,) if args[-1] == "--kb" else ())
    with open("/dev/full", "w") as full:
        p = run_cli(*args, stdout=full)
    failed_in_one_line(p, "cannot write the output", "No space left on device")


@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize("args", [("kb", "export", "--format", "csv"), ("kb", "list", "--json")])
def test_stdout_to_a_full_disk_is_an_error_not_a_short_file(args, unbuffered, full_dir, tmp_path):
    kb = tmp_path / "kb.sqlite"
    src = tmp_path / "runs.csv"   # 400 runs: about 80 KiB exported, more than the 32 KiB left
    src.write_text(HEADER + "\n" + "\n".join(row(nodes=str(n), ranks=str(4 * n)) for n in range(1, 401)) + "\n")
    assert run_cli("kb", "import", src, "--kb", kb).returncode == 0
    whole = run_cli(*args, "--kb", kb).stdout
    assert len(whole) > 40 << 10
    with open(full_dir / "out", "w") as out:
        p = run_cli(*args, "--kb", kb, stdout=out, unbuffered=unbuffered)
    # before (with PYTHONUNBUFFERED=1): exit 0 and a file cut at 32 KiB
    failed_in_one_line(p, "cannot write the output")
    assert (full_dir / "out").stat().st_size < len(whole)


def test_export_to_a_full_disk_keeps_the_previous_file(full_dir, seeded_kb):
    target = full_dir / "runs.csv"
    target.write_text("the previous export\n")
    (full_dir / "pad2").write_bytes(b"\0" * ((32 << 10) - 4096))   # what is left cannot hold the export
    p = run_cli("kb", "export", "--kb", seeded_kb, "-o", target)
    failed_in_one_line(p, "runs.csv", "No space left on device")
    assert target.read_text() == "the previous export\n"
    assert sorted(x.name for x in full_dir.iterdir()) == ["pad", "pad2", "runs.csv"]   # no temporary file left


# ---- the knowledge base failing under a command -----------------------------------------------------------------
def many_runs(path: Path, n: int, first: int = 1) -> Path:
    path.write_text(HEADER + "\n" + "\n".join(row(nodes=str(i), ranks=str(4 * i)) for i in range(first, first + n))
                    + "\n")
    return path


def test_a_full_disk_during_import_is_one_line_and_the_kb_unchanged(tmp_path):
    with small_fs(tmp_path / "fs", "1m") as d:
        kb = d / "kb.sqlite"
        assert run_cli("kb", "import", many_runs(tmp_path / "a.csv", 3), "--kb", kb).returncode == 0
        before = json.loads(run_cli("kb", "list", "--kb", kb, "--system", "sysA", "--json").stdout)
        free = os.statvfs(d).f_bavail * os.statvfs(d).f_frsize
        (d / "pad").write_bytes(b"\0" * (free - (16 << 10)))        # 16 KiB left
        p = run_cli("kb", "import", many_runs(tmp_path / "b.csv", 3000, first=10), "--kb", kb)
        # before: a traceback ending "cannot rollback - no transaction is active"
        failed_in_one_line(p)
        assert "rollback" not in p.stderr and ("full" in p.stderr or "disk" in p.stderr), p.stderr
        (d / "pad").unlink()
        assert json.loads(run_cli("kb", "list", "--kb", kb, "--system", "sysA", "--json").stdout) == before


@pytest.fixture
def read_only_kb(tmp_path: Path, seeded_kb: Path):
    """The seeded KB in a directory bind-mounted read-only."""
    d = tmp_path / "ro"
    d.mkdir()
    shutil.copy(seeded_kb, d / "kb.sqlite")
    if subprocess.run(["mount", "--bind", str(d), str(d)], capture_output=True).returncode:
        pytest.skip("cannot bind-mount here (needs root)")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(d)], capture_output=True).returncode:
            pytest.skip("cannot remount read-only here")
        yield d / "kb.sqlite"
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_a_kb_on_a_read_only_mount_is_read_and_a_write_is_one_line(read_only_kb, tmp_path):
    # before: "unable to open database file" for every command, reading ones too
    for args in (("kb", "list", "--json"), ("kb", "stats", "--json"), ("kb", "export")):
        p = run_cli(*args, "--kb", read_only_kb)
        assert p.returncode == 0 and p.stdout, p.stderr
    assert len(json.loads(run_cli("kb", "list", "--json", "--kb", read_only_kb, "--system", "sysA").stdout)) == 1
    failed_in_one_line(run_cli("kb", "import", many_runs(tmp_path / "b.csv", 2, first=5), "--kb", read_only_kb),
                       "kb.sqlite")


def test_an_immutable_kb_is_read_and_a_write_is_one_line(seeded_kb, tmp_path):
    if subprocess.run(["chattr", "+i", str(seeded_kb)], capture_output=True).returncode:
        pytest.skip("cannot make a file immutable here")
    try:
        for args in (("kb", "list", "--json"), ("kb", "stats", "--json")):
            p = run_cli(*args, "--kb", seeded_kb)
            assert p.returncode == 0 and p.stdout, p.stderr
        failed_in_one_line(run_cli("kb", "import", many_runs(tmp_path / "b.csv", 2, first=5), "--kb", seeded_kb),
                           "readonly")
    finally:
        subprocess.run(["chattr", "-i", str(seeded_kb)], capture_output=True)


def test_a_kb_with_corrupt_pages_is_one_line(seeded_kb):
    with sqlite3.connect(seeded_kb) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(seeded_kb.read_bytes())
    data[(root - 1) * page:(root - 1) * page + 100] = b"\xee" * 100   # the runs table's root page
    seeded_kb.write_bytes(bytes(data))
    for args in (("kb", "stats", "--json"), ("kb", "list", "--json"), ("kb", "list")):
        # before: a traceback ending "sqlite3.DatabaseError: database disk image is malformed"
        failed_in_one_line(run_cli(*args, "--kb", seeded_kb), "malformed")
