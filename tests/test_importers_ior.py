"""IOR importer: the text, JSON and CSV samples, statistics, detection, errors, and the CLI end to end."""
from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ioadvisor import importers
from ioadvisor.cli import app
from ioadvisor.errors import ImportFormatError
from ioadvisor.importers import ImportContext
from ioadvisor.model.stats import ci95, t95
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
IOR = SAMPLES / "ior"
TEXTS = sorted(IOR.glob("*.txt"))
JSONS = sorted(IOR.glob("*.json"))
CSVS = sorted(IOR.glob("*.csv"))
ALL = TEXTS + JSONS + CSVS


def _parse(path: Path, **kw):
    return importers.get("ior").parse(path.read_bytes(), ImportContext(source=str(path), **kw))


def _text_summary(path: Path) -> dict[str, dict[str, str]]:
    """The 'Summary of all tests' rows, keyed by operation, read with a plain split."""
    lines = path.read_text().splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith("Summary of all tests"))
    cols = lines[at + 1].split()
    out = {}
    for line in lines[at + 2:]:
        cells = line.split()
        if not cells or cells[0] not in ("write", "read"):
            break
        row: dict[str, str] = {}
        for c, v in zip(cols, cells):
            row.setdefault(c, v)
        out[cells[0]] = row
    return out


def _option(path: Path, key: str) -> str:
    m = re.search(rf"^{re.escape(key)}\s*: (.*)$", path.read_text(), re.M)
    assert m, key
    return m.group(1).strip()


def test_t_quantiles_match_the_t_distribution():
    # integrate the t density numerically: the quantile must leave 2.5% in the upper tail
    for df in (1, 2, 3, 5, 10, 29, 30, 31, 60, 200):
        q = t95(df)
        x = np.linspace(-q, q, 400001)
        dens = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2)) * (1 + x**2 / df) ** (
            -(df + 1) / 2)
        inside = np.trapezoid(dens, x)
        assert inside == pytest.approx(0.95, abs=2e-4), df
    with pytest.raises(ValueError):
        t95(0)


def test_ci95_is_centered_and_needs_two_measurements():
    low, high = ci95(100.0, 10.0, 4)
    assert (low + high) / 2 == pytest.approx(100.0)
    # t(0.975, 3) = 3.182 as printed tables give it, to their last digit (half a unit of 3.182: 1.6e-4)
    assert high - low == pytest.approx(2 * 3.182 * 10.0 / 2, rel=1.6e-4)
    assert ci95(100.0, 10.0, 1) == (None, None)
    assert ci95(1.0, 100.0, 3)[0] == 0.0            # never negative


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_text_values_equal_ior_summary(path):
    summary = _text_summary(path)
    runs = _parse(path)
    assert len(runs) == len(summary) == 2
    random = _option(path, "ordering in a file") == "random"
    for run in runs:
        op = run.op.removeprefix("rand")
        assert run.op == ("rand" + op if random else op)
        row = summary[op]
        assert run.value == float(row["Mean(MiB)"]) and run.unit == "MiB/s"
        assert run.value_max == float(row["Max(MiB)"])
        assert run.value_min == float(row["Min(MiB)"])
        assert run.value_sd == float(row["StdDev"])
        assert run.reps == int(row["reps"]) == int(_option(path, "repetitions"))
        assert run.ranks == int(_option(path, "tasks"))
        assert run.nodes == int(_option(path, "nodes"))
        assert run.ranks_per_node == int(_option(path, "clients per node"))
        assert run.transfer_size == int(row["xsize"]) and run.block_size == int(row["blksiz"])
        assert run.segments == int(_option(path, "segments"))
        assert run.file_size == int(float(row["aggs(MiB)"]) * 2**20)
        assert run.api == _option(path, "api")
        assert run.layout == ("fpp" if _option(path, "access") == "file-per-process" else "shared")
        assert run.collective is None                       # POSIX has no collective I/O
        assert run.access == ("random" if random else "sequential")
        # the interval is computed from the sample deviation (IOR prints the population one)
        n = run.reps
        s = run.value_sd * math.sqrt(n / (n - 1))
        assert run.ci95_high - run.value == pytest.approx(t95(n - 1) * s / math.sqrt(n))
        prov = run.provenance
        assert prov.tool == "IOR" and prov.importer == "ior/1"
        assert prov.command == _option(path, "Command line")
        assert prov.tool_version == path.read_text().split(":", 1)[0].removeprefix("IOR-")
        assert run.system == "local"


def test_random_4k_keeps_bandwidth_and_states_ops_per_second():
    path = IOR / "posix_random4k_1rank.txt"
    summary = _text_summary(path)
    cols = path.read_text().splitlines()
    runs = {r.op: r for r in _parse(path)}
    assert set(runs) == {"randwrite", "randread"}
    for op, run in runs.items():
        ops_mean = summary[op.removeprefix("rand")]["Mean(OPs)"]
        assert run.unit == "MiB/s" and run.transfer_size == 4096
        assert f"{float(ops_mean):.2f} ops/s" in run.notes
    assert cols  # the file was read


@pytest.mark.parametrize("path", JSONS, ids=lambda p: p.name)
def test_json_values_equal_ior_summary(path):
    doc = json.loads(path.read_text())
    params = doc["tests"][0]["Parameters"]
    runs = _parse(path, system="mycluster", filesystem="scratch")
    assert len(runs) == len(doc["summary"])
    for run, s in zip(runs, doc["summary"]):
        assert run.op == s["operation"]
        assert run.value == s["bwMeanMIB"]
        assert (run.value_min, run.value_max, run.value_sd) == (s["bwMinMIB"], s["bwMaxMIB"], s["bwStdMIB"])
        assert run.reps == s["repetitions"] and run.ranks == s["numTasks"]
        assert run.segments == s["segmentCount"] and run.transfer_size == s["transferSize"]
        assert run.block_size == s["blockSize"]
        assert run.file_size == s["xsizeMiB"] * 2**20 == s["segmentCount"] * s["blockSize"] * s["numTasks"]
        assert run.api == "MPIIO" and run.collective is bool(params["collective"])
        assert run.layout == ("fpp" if s["filePerProc"] else "shared")
        assert run.system == "mycluster" and run.filesystem == "scratch"
        assert run.provenance.command == doc["Command line"]
        assert run.provenance.tool_version == doc["Version"]
        assert run.ci95_low < run.value < run.ci95_high


def test_csv_statistics_from_repetition_lines():
    path = CSVS[0]
    rows = list(csv.DictReader(path.open()))
    runs = _parse(path)
    assert [r.op for r in runs] == ["write", "read"]
    for run in runs:
        bws = [float(r["bw(MiB/s)"]) for r in rows if r["access"] == run.op]
        assert run.value == pytest.approx(sum(bws) / len(bws))
        assert (run.value_min, run.value_max, run.reps) == (min(bws), max(bws), len(bws))
        assert run.value_sd == pytest.approx(float(np.std(bws)))
        assert run.ranks == int(rows[0]["numTasks"])
        assert run.transfer_size == float(rows[0]["xfer(KiB)"]) * 1024
        assert run.api is None and run.layout is None and "not recorded" in run.notes


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_detection_picks_ior(path):
    assert importers.detect(path.read_bytes()[: importers.SNIFF_BYTES]).name == "ior"


def test_sniff_rejects_foreign_files():
    from ioadvisor.importers import ior
    for other in list((SAMPLES / "mdtest").iterdir()) + list((SAMPLES / "fio").iterdir()):
        assert not ior.sniff(other.read_bytes())
    assert not ior.sniff(b"source,system,op,value,unit\n")
    assert not ior.sniff(b'{"fio version": "fio-3.33", "jobs": []}')


def test_truncated_text_before_summary_names_the_line(tmp_path):
    text = (IOR / "posix_fpp_2ranks.txt").read_text()
    cut = text[: text.index("Summary of all tests")]
    with pytest.raises(ImportFormatError) as e:
        importers.get("ior").parse(cut.encode(), ImportContext(source="cut.txt"))
    assert e.value.line == len(cut.splitlines()) and "Summary" in str(e.value) and "cut.txt" in str(e.value)


def test_truncated_summary_line(tmp_path):
    text = (IOR / "posix_fpp_2ranks.txt").read_text()
    lines = text.splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith("read  "))
    lines[at] = lines[at][:40]
    with pytest.raises(ImportFormatError) as e:
        importers.get("ior").parse("\n".join(lines[: at + 1]).encode(), ImportContext(source="t.txt"))
    assert e.value.line == at + 1


def test_negative_bandwidth_is_an_error_with_its_line():
    text = (IOR / "posix_shared_2ranks.txt").read_text()
    lines = text.splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith("write  ") and len(l.split()) > 20)
    mean = _text_summary(IOR / "posix_shared_2ranks.txt")["write"]["Mean(MiB)"]
    lines[at] = lines[at].replace(f" {mean} ", f" -{mean} ", 1)
    with pytest.raises(ImportFormatError) as e:
        importers.get("ior").parse("\n".join(lines).encode(), ImportContext(source="neg.txt"))
    assert e.value.line == at + 1 and "negative" in str(e.value)


def test_json_cut_in_the_middle():
    text = (IOR / "mpiio_indep_2ranks.json").read_text()
    cut = text[: len(text) // 2]
    with pytest.raises(ImportFormatError) as e:
        importers.get("ior").parse(cut.encode(), ImportContext(source="half.json"))
    assert e.value.line is not None and e.value.line >= len(cut.splitlines()) - 1


def test_json_without_summary():
    doc = json.loads((IOR / "mpiio_indep_2ranks.json").read_text())
    del doc["summary"]
    with pytest.raises(ImportFormatError, match="summary"):
        importers.get("ior").parse(json.dumps(doc).encode(), ImportContext(source="x.json"))


def test_kb_import_file_and_cli_end_to_end(kb_path):
    runner = CliRunner()
    res = runner.invoke(app, ["kb", "import", *map(str, ALL), "--kb", str(kb_path), "--system", "demo",
                              "--filesystem", "ext4", "--json"])
    assert res.exit_code == 0, res.output
    results = json.loads(res.stdout)
    assert [r["format"] for r in results] == ["ior"] * len(ALL)
    assert sum(r["runs"] for r in results) == 2 * len(ALL)
    listed = json.loads(runner.invoke(app, ["kb", "list", "--kb", str(kb_path), "--system", "demo",
                                            "--json"]).stdout)
    assert len(listed) == 2 * len(ALL)
    by_source = {(Path(r["provenance"]["source"]).name, r["op"]): r for r in listed}
    fpp = _text_summary(IOR / "posix_fpp_2ranks.txt")
    assert by_source[("posix_fpp_2ranks.txt", "write")]["value"] == float(fpp["write"]["Mean(MiB)"])
    # importing again adds nothing
    with KB.open(kb_path) as kb:
        again = import_file(kb, IOR / "posix_fpp_2ranks.txt", system="demo")
        assert again.skipped
        assert kb.count(RunFilter(system="demo", layout="fpp")) == 2


def test_hints_shown_with_H_are_kept():
    path = IOR / "posix_shared_2ranks.txt"
    text = path.read_text().replace("Results: \n", "Results: \n\nhints passed to MPI_File_open() {\n"
                                    "\tromio_cb_write = enable\n\tcb_nodes = 2\n}\n"
                                    "hints returned from opened file {\n\tcb_buffer_size = 16777216\n}\n", 1)
    assert "romio_cb_write" in text
    runs = importers.get("ior").parse(text.encode(), ImportContext(source="h.txt"))
    assert all(dict(r.hints) == {"romio_cb_write": "enable", "cb_nodes": "2"} for r in runs)


def test_ior2_column_spelling_gives_the_same_values():
    path = IOR / "posix_fpp_2ranks.txt"
    text = path.read_text()
    spaced = text.replace("Max(MiB)   Min(MiB)  Mean(MiB)     StdDev", "Max (MiB)  Min (MiB) Mean (MiB)    Std Dev", 1)
    assert spaced != text
    runs = importers.get("ior").parse(spaced.encode(), ImportContext(source="old.txt"))
    assert [(r.op, r.value, r.value_sd) for r in runs] == [(r.op, r.value, r.value_sd) for r in _parse(path)]


def test_cli_reports_a_truncated_file_in_one_line(tmp_path, kb_path):
    cut = tmp_path / "cut.txt"
    text = (IOR / "posix_fpp_2ranks.txt").read_text()
    cut.write_text(text[: text.index("Results:")])
    res = CliRunner().invoke(app, ["kb", "import", str(cut), "--kb", str(kb_path)])
    assert res.exit_code == 2
    assert f"cut.txt:{len(cut.read_text().splitlines())}:" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize("command, synced", [
    ("ior -a POSIX -w -e -t 1m -b 32m", True), ("ior -a POSIX -w -Y -t 1m", True), ("ior -w -C -e -F", True),
    ("ior -a MPIIO -w -O fsync=1", True), ("ior -w -O fsyncPerWrite=1", True), ("ior -w -O fsync=0", False),
    ("ior -a POSIX -w -r -C -t 1m -b 32m", False), ("ior -w -o /scratch/e", False)])
def test_fsync_at_close_is_read_from_the_command_line(command, synced):
    from ioadvisor.importers.ior import fsync_requested
    assert fsync_requested(command) is synced
