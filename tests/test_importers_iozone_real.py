"""The IOzone importer against output the real `iozone` printed on this machine, not hand-made fixtures.

IOzone runs here in four ways: auto mode with the `-R` report (its Excel block repeats every table value, a
second copy the importer does not read), auto mode with only some tests selected (blank columns), the N-to-N
sequential throughput runs of published sweeps (`-i 0|1 -c -e -w -t N -+n`) and throughput mode in ops/s
(`-O`). Every imported value is compared with the number IOzone printed, found by a parser written here
independently of the importer. Throughput mode waits about 10 s per invocation inside IOzone, so the
invocations run side by side in one module fixture.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ioadvisor import importers
from ioadvisor.importers import ImportContext
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter

IOZONE = shutil.which("iozone")
pytestmark = pytest.mark.skipif(IOZONE is None, reason="iozone is not installed (scripts/setup.sh installs iozone3)")

TABLE_OPS = ("write", "rewrite", "read", "reread", "randread", "randwrite")
EXCEL_OPS = {"Writer report": "write", "Re-writer report": "rewrite", "Reader report": "read",
             "Re-Reader report": "reread", "Random read report": "randread", "Random write report": "randwrite"}
CHILD_OPS = {"initial writers": "write", "rewriters": "rewrite", "readers": "read", "re-readers": "reread",
             "random readers": "randread", "random writers": "randwrite"}


def _cmds(d: Path) -> dict[str, list[str]]:
    files = lambda tag, n: ["-F", *(str(d / f"{tag}{i}") for i in range(n))]  # noqa: E731
    return {
        # auto mode, write/read/random tests, 1 MiB file, records 64-256 KiB, with the -R report
        "auto_report": [IOZONE, "-R", "-a", "-s", "1m", "-y", "64k", "-q", "256k", "-i", "0", "-i", "1", "-i", "2",
                        "-f", str(d / "auto")],
        # only write and random tests: the read/reread columns stay blank
        "auto_blank": [IOZONE, "-a", "-s", "512k", "-y", "128k", "-q", "256k", "-i", "0", "-i", "2",
                       "-f", str(d / "blank")],
        # N-to-N sequential write then read, as the published sweeps ran it (-c -e -w, no retests with -+n)
        "nn_write": [IOZONE, "-i", "0", "-c", "-e", "-w", "-r", "64k", "-s", "1m", "-t", "2", "-+n",
                     *files("nn", 2)],
        # throughput mode in operations per second
        "ops": [IOZONE, "-O", "-i", "0", "-i", "2", "-r", "4k", "-s", "512k", "-t", "2", "-+n", *files("ops", 2)],
    }


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("iozone")
    cmds = _cmds(d)
    procs = {k: subprocess.Popen(c, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for k, c in cmds.items()}
    out: dict[str, Path] = {}

    def collect(k: str) -> None:
        text, _ = procs[k].communicate(timeout=120)
        assert procs[k].returncode == 0, f"{cmds[k]} failed: {text.decode()[-500:]}"
        out[k] = d / f"{k}.txt"
        out[k].write_bytes(text)
    # the read phase reads the files nn_write left behind (-w): started as soon as they are there, beside the
    # throughput-mode run in ops/s (about 14 s of waiting inside IOzone) instead of after it
    collect("nn_write")
    cmds["nn_read"] = [IOZONE, "-i", "1", "-c", "-e", "-w", "-r", "64k", "-s", "1m", "-t", "2", "-+n",
                       "-F", str(d / "nn0"), str(d / "nn1")]
    procs["nn_read"] = subprocess.Popen(cmds["nn_read"], cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for k in procs:
        if k not in out:
            collect(k)
    return out


def _parse(path: Path):
    data = path.read_bytes()
    assert importers.detect(data[:importers.SNIFF_BYTES], str(path)).name == "iozone"
    return importers.get("iozone").parse(data, ImportContext(source=path.name, system="here"))


def _printed_table(text: str) -> list[tuple[int, int, dict[str, int]]]:
    """(kB, reclen, {op: value}) per table row, cells assigned to columns by where IOzone printed them."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["kB", "reclen"])
    # the second header line names every column by its last word (random read -> read); IOzone right-aligns
    col_ends = [m.end() for m in re.finditer(r"\S+", lines[at])]
    names = ["kB", "reclen", "write", "rewrite", "read", "reread", "randread", "randwrite"]
    rows = []
    for line in lines[at + 1:]:
        if not line.strip():
            break
        cells = {}
        for m in re.finditer(r"\S+", line):
            k = min(range(len(col_ends)), key=lambda c: abs(col_ends[c] - m.end()))
            if k < len(names):
                cells[names[k]] = int(m.group(0))
        rows.append((cells.pop("kB"), cells.pop("reclen"), cells))
    return rows


def _excel(text: str) -> dict[tuple[str, int, int], int]:
    """The -R report: {(op, kB, reclen): value}."""
    out = {}
    blocks = re.findall(r'^"([^"]+ report)"\n\s+((?:"\d+"\s*)+)\n((?:"\d+"[ \d]+\n)+)', text, re.M)
    for title, head, body in blocks:
        recs = [int(x) for x in re.findall(r'"(\d+)"', head)]
        for row in body.strip().splitlines():
            kb = int(re.match(r'"(\d+)"', row).group(1))
            vals = [int(x) for x in row.split()[1:]]
            for rec, v in zip(recs, vals):
                out[(EXCEL_OPS[title], kb, rec)] = v
    return out


def _children(text: str) -> dict[str, tuple[int, float, float]]:
    """{op: (processes, children-see value, parent-sees value)}."""
    out = {}
    for m in re.finditer(r"Children see throughput for\s+(\d+) ([a-z -]+?)\s+=\s+([\d.]+) \S+\n"
                         r"\s*Parent sees throughput for\s+\d+ [a-z -]+?\s+=\s+([\d.]+)", text):
        out[CHILD_OPS[m.group(2)]] = (int(m.group(1)), float(m.group(3)), float(m.group(4)))
    return out


def test_auto_mode_values_equal_the_printed_table_and_the_excel_report(outputs):
    text = outputs["auto_report"].read_text()
    rows = _printed_table(text)
    excel = _excel(text)
    runs = _parse(outputs["auto_report"])
    # 1 MiB file, records 64, 128, 256 KiB: 3 rows x 6 selected tests; bkwd/stride/f* columns give no run
    assert [(kb, rec) for kb, rec, _ in rows] == [(1024, 64), (1024, 128), (1024, 256)]
    assert len(runs) == 3 * 6 == len(excel)
    got = {(r.op, r.file_size // 1024, r.transfer_size // 1024): r for r in runs}
    assert len(got) == len(runs)                                   # no row or column imported twice
    for kb, rec, cells in rows:
        assert sorted(cells) == sorted(TABLE_OPS)
        for op, value in cells.items():
            run = got[(op, kb, rec)]
            assert run.value_given == value == excel[(op, kb, rec)]
            assert run.unit_given == "KiB/s" and run.value == value / 1024 and run.unit == "MiB/s"
            assert run.ranks == 1 and run.system == "here"
            assert run.provenance.tool == "IOzone" and run.provenance.tool_version == "3.489"
            assert run.provenance.command.startswith(f"{IOZONE} -R -a -s 1m")
    assert {r.access for r in runs if r.op.startswith("rand")} == {"random"}
    assert not any(r.direct for r in runs)                         # no -I given


def test_auto_mode_blank_columns_are_not_shifted(outputs):
    text = outputs["auto_blank"].read_text()
    rows = _printed_table(text)
    runs = _parse(outputs["auto_blank"])
    assert [(kb, rec) for kb, rec, _ in rows] == [(512, 128), (512, 256)]
    for kb, rec, cells in rows:
        # IOzone printed write, rewrite, random read, random write and left read/reread blank
        assert sorted(cells) == ["randread", "randwrite", "rewrite", "write"]
    assert len(runs) == 2 * 4
    for r in runs:
        cells = next(c for kb, rec, c in rows if (kb, rec) == (r.file_size // 1024, r.transfer_size // 1024))
        assert r.value_given == cells[r.op]
    assert not [r for r in runs if r.op in ("read", "reread")]     # a blank column must not become a run


@pytest.mark.parametrize("name, ops", [("nn_write", ["write"]), ("nn_read", ["read"])])
def test_n_to_n_throughput_runs_equal_children_see(outputs, name, ops):
    text = outputs[name].read_text()
    printed = _children(text)
    runs = _parse(outputs[name])
    assert [r.op for r in runs] == ops == list(printed)            # -+n: no rewriters/re-readers
    for r in runs:
        n, children, parent = printed[r.op]
        assert n == 2 and r.ranks == 2 and r.layout == "fpp"
        assert r.value_given == children and r.unit_given == "KiB/s"
        assert r.value != parent / 1024 or children == parent          # filed as children-see, not parent-sees
        assert f"parent sees {parent:.2f}" in r.notes
        assert r.file_size == 1 << 20 and r.transfer_size == 64 << 10   # "Each process writes a 1024 kByte file"
        assert r.nodes == 1 and r.ranks_per_node == 2


def test_throughput_ops_mode(outputs):
    printed = _children(outputs["ops"].read_text())
    runs = _parse(outputs["ops"])
    assert sorted(r.op for r in runs) == sorted(printed) == ["randread", "randwrite", "write"]
    for r in runs:
        assert r.unit == "ops/s" and r.value == printed[r.op][1]
        assert r.transfer_size == 4096


def test_kb_import_of_real_output(outputs, kb_path):
    with KB.open(kb_path) as kb:
        total = 0
        for name in ("auto_report", "auto_blank", "nn_write", "nn_read", "ops"):
            res = import_file(kb, outputs[name], system="here")
            assert res.format == "iozone" and not res.skipped
            total += res.runs
        # 18 + 8 + 1 + 1 + 3 runs; a second import adds nothing
        assert total == 31 == kb.count(RunFilter(system="here"))
        assert import_file(kb, outputs["auto_report"], system="here").skipped
        assert kb.count(RunFilter(system="here")) == 31
