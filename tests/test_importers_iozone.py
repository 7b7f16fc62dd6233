"""IOzone importer: automatic-mode tables (including blank columns), throughput mode, detection, errors."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ioadvisor import importers
from ioadvisor.errors import ImportFormatError
from ioadvisor.importers import ImportContext
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter

DATA = Path(__file__).resolve().parent / "data"
IOZ = DATA / "iozone"
SAMPLES = DATA / "samples"
ALL = sorted(IOZ.glob("*.txt"))


def _parse(path_or_text, **kw):
    data = path_or_text.read_bytes() if isinstance(path_or_text, Path) else path_or_text.encode()
    return importers.get("iozone").parse(data, ImportContext(source="iozone.txt", **kw))


def _table_rows(path: Path) -> list[list[int]]:
    lines = path.read_text().splitlines()
    at = next(i for i, l in enumerate(lines) if l.split()[:2] == ["kB", "reclen"])
    rows = []
    for line in lines[at + 1:]:
        if not line.strip():
            break
        rows.append([int(x) for x in line.split()])
    return rows


def _children(path: Path) -> dict[str, tuple[int, float, str]]:
    out = {}
    for m in re.finditer(r"Children see throughput for\s+(\d+) ([a-z -]+?)\s+=\s+([\d.]+) (\S+)", path.read_text()):
        out[m.group(2)] = (int(m.group(1)), float(m.group(3)), m.group(4))
    return out


def test_full_auto_table_equals_the_printed_numbers():
    path = IOZ / "auto_direct_64m.txt"
    rows = _table_rows(path)
    runs = _parse(path)
    ops = ["write", "rewrite", "read", "reread", "randread", "randwrite"]
    assert len(runs) == len(rows) * len(ops)
    it = iter(runs)
    for row in rows:
        for op, kib_s in zip(ops, row[2:8]):
            run = next(it)
            assert run.op == op and run.value_given == kib_s and run.unit_given == "KiB/s"
            assert run.value == kib_s / 1024 and run.unit == "MiB/s"
            assert run.file_size == row[0] * 1024 and run.transfer_size == row[1] * 1024
            assert run.ranks == 1 and run.direct is True        # -I
            assert run.provenance.tool == "IOzone" and run.provenance.tool_version == "3.506"
            assert run.provenance.command.startswith("iozone -e -I -a")
            assert run.access == ("random" if op.startswith("rand") else "sequential")


def test_blank_columns_are_matched_by_position():
    path = IOZ / "auto_write_random_only.txt"
    (row,) = _table_rows(path)                  # kB reclen write rewrite randread randwrite
    runs = _parse(path)
    assert [r.op for r in runs] == ["write", "rewrite", "randread", "randwrite"]
    assert [r.value_given for r in runs] == row[2:]


def test_throughput_mode_kb():
    path = IOZ / "throughput_4procs.txt"
    kids = _children(path)
    runs = {r.op: r for r in _parse(path, system="c1")}
    names = {"write": "initial writers", "rewrite": "rewriters", "read": "readers", "reread": "re-readers"}
    assert set(runs) == set(names)
    each = re.search(r"writes a (\d+) kByte file in (\d+) kByte", path.read_text())
    for op, name in names.items():
        n, value, unit = kids[name]
        run = runs[op]
        assert unit == "kB/sec" and run.value_given == value and run.value == value / 1024
        assert run.ranks == n and run.layout == "fpp" and run.system == "c1"
        assert run.file_size == int(each.group(1)) * 1024 and run.transfer_size == int(each.group(2)) * 1024
        parent = re.search(rf"Parent sees throughput for\s+{n} {name}\s+=\s+([\d.]+)", path.read_text()).group(1)
        assert f"parent sees {parent}" in run.notes


def test_throughput_mode_ops():
    path = IOZ / "throughput_ops_random.txt"
    kids = _children(path)
    runs = {r.op: r for r in _parse(path)}
    assert runs["randread"].value == kids["random readers"][1] and runs["randread"].unit == "ops/s"
    assert runs["randwrite"].value == kids["random writers"][1]
    assert runs["write"].value == kids["initial writers"][1]
    assert all(r.ranks == 2 and r.transfer_size == 4096 for r in runs.values())


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_detection_picks_iozone(path):
    assert importers.detect(path.read_bytes()[: importers.SNIFF_BYTES]).name == "iozone"


def test_bare_table_excerpt_is_detected_and_parsed():
    path = IOZ / "auto_direct_64m.txt"
    lines = path.read_text().splitlines()
    at = next(i for i, l in enumerate(lines) if l.split()[:2] == ["kB", "reclen"])
    excerpt = "\n".join(lines[at - 1: at + 3]) + "\n"
    assert importers.detect(excerpt.encode()).name == "iozone"
    assert len(_parse(excerpt)) == 12


def test_sniff_rejects_foreign_files():
    from ioadvisor.importers import iozone
    for other in [p for d in ("ior", "mdtest", "fio") for p in (SAMPLES / d).iterdir()]:
        assert not iozone.sniff(other.read_bytes())
    assert not iozone.sniff(b"source,system,op,value,unit\n")


def test_truncated_output():
    text = (IOZ / "throughput_4procs.txt").read_text()
    cut = text[: text.index("Children see throughput for  4 readers") + 70]
    with pytest.raises(ImportFormatError) as e:
        _parse(cut)
    assert e.value.line is not None


def test_misaligned_cell_and_negative_value():
    path = IOZ / "auto_direct_64m.txt"
    text = path.read_text()
    row = _table_rows(path)[0]
    line = next(l for l in text.splitlines() if l.split()[:2] == [str(row[0]), str(row[1])])
    lineno = text.splitlines().index(line) + 1
    with pytest.raises(ImportFormatError) as e:
        _parse(text.replace(line, line + "   77"))   # ends between two columns
    assert e.value.line == lineno
    neg = line.replace(f" {row[2]}", f"-{row[2]}", 1)
    with pytest.raises(ImportFormatError, match="negative") as e:
        _parse(text.replace(line, neg))
    assert e.value.line == lineno


def test_kb_import(kb_path):
    with KB.open(kb_path) as kb:
        for p in ALL:
            assert import_file(kb, p, system="demo").format == "iozone"
        assert kb.count(RunFilter(system="demo", op="randwrite")) == 4
