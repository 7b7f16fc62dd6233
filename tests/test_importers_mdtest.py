"""mdtest importer: every summary line with a non-zero rate, its statistics, settings, detection, errors."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from ioadvisor import importers
from ioadvisor.errors import ImportFormatError
from ioadvisor.importers import ImportContext
from ioadvisor.model.stats import t95
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
MD = sorted((SAMPLES / "mdtest").glob("*.txt"))

NAMES = {"File creation": "file_create", "File stat": "file_stat", "File read": "file_read",
         "File removal": "file_remove", "Directory creation": "dir_create", "Directory stat": "dir_stat",
         "Directory rename": "dir_rename", "Directory removal": "dir_remove", "Tree creation": "tree_create",
         "Tree removal": "tree_remove"}


def _summary(path: Path) -> dict[str, list[float]]:
    """Rows of the SUMMARY rate table: op -> [max, min, mean, sd], read with a regex."""
    text = path.read_text()
    table = text[text.index("SUMMARY rate"):]
    out = {}
    for m in re.finditer(r"^\s+([A-Z][a-z]+ [a-z]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", table, re.M):
        out[NAMES[m.group(1)]] = [float(m.group(k)) for k in range(2, 6)]
    return out


def _cmd_flag(path: Path, flag: str) -> str | None:
    m = re.search(rf"'{flag}' '([^']*)'", path.read_text())
    return m.group(1) if m else None


def _parse(path: Path, **kw):
    return importers.get("mdtest").parse(path.read_bytes(), ImportContext(source=str(path), **kw))


@pytest.mark.parametrize("path", MD, ids=lambda p: p.name)
def test_rates_equal_mdtest_summary(path):
    summary = _summary(path)
    runs = _parse(path)
    expected = {op for op, vals in summary.items() if vals[2] > 0}
    assert {r.op for r in runs} == expected and len(runs) == len(expected)
    text = path.read_text()
    launch = re.search(r"launched with (\d+) total task\(s\) on (\d+) node", text)
    iterations = int(re.search(r"\(of (\d+) iterations?\)", text).group(1))
    unique = "'-u'" in text
    for run in runs:
        vmax, vmin, mean, sd = summary[run.op]
        assert run.value == mean and run.unit == "ops/s"
        assert (run.value_max, run.value_min, run.value_sd) == (vmax, vmin, sd)
        assert run.reps == iterations
        assert (run.ranks, run.nodes) == (int(launch.group(1)), int(launch.group(2)))
        assert run.layout == ("fpp" if unique else "shared")
        assert ("unique directory" in run.notes) is unique
        assert run.provenance.tool == "mdtest" and run.provenance.importer == "mdtest/1"
        assert run.provenance.command.startswith("mdtest ")
        if iterations > 1:
            # mdtest's Std Dev is already the sample deviation
            assert run.ci95_high - run.value == pytest.approx(t95(iterations - 1) * sd / math.sqrt(iterations))
        else:
            assert run.ci95_low is None


def test_items_and_sizes_from_the_command_line():
    runs = {r.op: r for r in _parse(SAMPLES / "mdtest" / "files_unique_2ranks.txt")}
    n = int(_cmd_flag(SAMPLES / "mdtest" / "files_unique_2ranks.txt", "-n"))
    assert runs["file_create"].items_per_rank == n
    assert runs["file_create"].files_per_dir == n           # flat tree, one directory per task
    tree = SAMPLES / "mdtest" / "files_tree_4k_2ranks.txt"
    runs = {r.op: r for r in _parse(tree)}
    assert runs["file_create"].file_size == int(_cmd_flag(tree, "-w"))
    assert runs["file_create"].files_per_dir == int(_cmd_flag(tree, "-I"))
    assert runs["tree_create"].file_size is None
    shared = SAMPLES / "mdtest" / "dirs_shared_2ranks.txt"
    runs = {r.op: r for r in _parse(shared)}
    n = int(_cmd_flag(shared, "-n"))
    assert runs["dir_create"].files_per_dir == n * runs["dir_create"].ranks   # one shared directory


@pytest.mark.parametrize("path", MD, ids=lambda p: p.name)
def test_detection_picks_mdtest(path):
    assert importers.detect(path.read_bytes()[: importers.SNIFF_BYTES]).name == "mdtest"


def test_sniff_rejects_foreign_files():
    from ioadvisor.importers import mdtest
    for other in list((SAMPLES / "ior").iterdir()) + list((SAMPLES / "fio").iterdir()):
        assert not mdtest.sniff(other.read_bytes())
    assert not mdtest.sniff(b"source,system,op,value,unit\nx,y,write,1,MiB/s\n")


def test_zero_rates_are_skipped():
    path = SAMPLES / "mdtest" / "files_unique_2ranks.txt"
    text = path.read_text()
    line = next(l for l in text.splitlines() if l.strip().startswith("File stat"))
    zeroed = re.sub(r"[\d.]+", "0.000", line.replace("File stat", "File xstat")).replace("File xstat", "File stat")
    runs = importers.get("mdtest").parse(text.replace(line, zeroed).encode(), ImportContext(source="z"))
    assert "file_stat" not in {r.op for r in runs} and len(runs) == len(_summary(path)) - 1


def test_truncated_before_summary():
    text = (SAMPLES / "mdtest" / "dirs_shared_2ranks.txt").read_text()
    cut = text[: text.index("SUMMARY rate")]
    with pytest.raises(ImportFormatError) as e:
        importers.get("mdtest").parse(cut.encode(), ImportContext(source="cut.txt"))
    assert e.value.line == len(cut.splitlines()) and "SUMMARY" in str(e.value)


def test_truncated_inside_summary():
    text = (SAMPLES / "mdtest" / "dirs_shared_2ranks.txt").read_text()
    cut = text[: text.index("Directory rename") + 30]
    with pytest.raises(ImportFormatError) as e:
        importers.get("mdtest").parse(cut.encode(), ImportContext(source="cut.txt"))
    assert e.value.line == len(cut.splitlines())


def test_negative_rate_names_its_line():
    text = (SAMPLES / "mdtest" / "files_unique_2ranks.txt").read_text()
    lines = text.splitlines()
    at = next(i for i, l in enumerate(lines) if l.strip().startswith("File removal"))
    lines[at] = lines[at].replace("  2", " -2", 1)
    with pytest.raises(ImportFormatError) as e:
        importers.get("mdtest").parse("\n".join(lines).encode(), ImportContext(source="neg.txt"))
    assert e.value.line == at + 1


def test_kb_import(kb_path):
    with KB.open(kb_path) as kb:
        total = sum(import_file(kb, p, system="demo").runs for p in MD)
        assert total == sum(sum(1 for v in _summary(p).values() if v[2] > 0) for p in MD)
        assert kb.count(RunFilter(system="demo", op="file_create")) == 2


def test_mdtest_1_9_summary_spelling():
    # mdtest 1.9 prints "SUMMARY: (of N iterations)" and a colon after each operation name
    path = SAMPLES / "mdtest" / "files_unique_2ranks.txt"
    text = path.read_text()
    old = re.sub(r"SUMMARY rate \(in ops/sec\): ", "SUMMARY: ", text)
    old = re.sub(r"^(   [A-Z][a-z]+ [a-z]+)(\s+)(\d)", r"\1 :\2\3", old, flags=re.M)
    assert old != text and "File creation :" in old
    runs = importers.get("mdtest").parse(old.encode(), ImportContext(source="old.txt"))
    assert {r.op: r.value for r in runs} == {op: v[2] for op, v in _summary(path).items()}


def test_single_file_runs_are_flagged_and_never_fitted(tmp_path):
    """mdtest -S (every task on one file) times the clients' attribute cache: on ARCHER's corpus runs, stats
    of one file reach 982,455 ops/s at 128 nodes where a directory per task gives 19,803. Such runs are kept and
    listed but carry the `one-file` flag, so the fits (flags IS NULL) must not see them."""
    from ioadvisor.advise.fits import load_system_runs
    from ioadvisor.center.evidence import ONE_FILE
    text = (SAMPLES / "mdtest" / "files_unique_2ranks.txt").read_text().replace("'-u'", "'-S'")
    runs = importers.get("mdtest").parse(text.encode(), ImportContext(source="s.txt"))
    assert runs and all(r.flags == (ONE_FILE,) for r in runs)
    assert all("one single file (-S)" in r.notes and "unique directory" not in r.notes for r in runs)
    plain = _parse(SAMPLES / "mdtest" / "files_unique_2ranks.txt")
    assert plain and not any(r.flags for r in plain)
    (tmp_path / "s.txt").write_text(text)
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        import_file(kb, tmp_path / "s.txt", "mdtest", system="mdsys")
        import_file(kb, SAMPLES / "mdtest" / "files_unique_2ranks.txt", "mdtest", system="mdsys")
        listed = kb.runs(RunFilter(system="mdsys"))
        assert sum(1 for r in listed if ONE_FILE in r.flags) == len(runs)
        fitted = load_system_runs(kb, "mdsys")
        assert len(fitted) == len(plain) and not any(r.flags for r in fitted)
