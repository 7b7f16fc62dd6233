"""fio importer: the JSON samples, fresh fio runs on a temporary directory, detection and errors."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ioadvisor import importers
from ioadvisor.errors import ImportFormatError
from ioadvisor.importers import ImportContext
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
FIO = sorted((SAMPLES / "fio").glob("*.json"))
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def _parse(data: bytes, **kw):
    return importers.get("fio").parse(data, ImportContext(source="fio.json", **kw))


def _run_fio(tmp_path: Path, *args: str, fmt: str = "json") -> bytes:
    out = subprocess.run(["fio", f"--directory={tmp_path}", f"--output-format={fmt}", "--bs=4k", "--size=512k",
                          *args], capture_output=True, check=True, timeout=60)
    return out.stdout


def _expected(doc: dict) -> dict[tuple[str, str], tuple[float, str]]:
    """(jobname, op) -> (value, unit) as the importer should report it, from fio's own numbers."""
    exp: dict[tuple[str, str], list] = {}
    for job in doc["jobs"]:
        rw = job["job options"].get("rw", doc.get("global options", {}).get("rw", "read"))
        rnd = rw.startswith("rand")
        for d in ("read", "write"):
            if job[d]["io_bytes"] > 0:
                op = ("rand" + d) if rnd else d
                key = (job["jobname"], op)
                v = job[d]["iops"] if rnd else job[d]["bw"] / 1024
                exp[key] = [exp.get(key, [0.0])[0] + v, "ops/s" if rnd else "MiB/s"]
    return {k: (v[0], v[1]) for k, v in exp.items()}


@pytest.mark.parametrize("path", FIO, ids=lambda p: p.name)
def test_samples_equal_fio_numbers(path):
    doc = json.loads(path.read_text())
    runs = _parse(path.read_bytes())
    exp = _expected(doc)
    assert len(runs) == len(exp)
    for run in runs:
        job = doc["jobs"][0]
        opts = job["job options"]
        value, unit = exp[(opts["name"], run.op)]
        assert run.value == pytest.approx(value, rel=1e-12) and run.unit == unit
        assert run.ranks == int(opts["numjobs"])
        assert run.transfer_size == {"4k": 4096, "1m": 2**20}[opts["bs"]]
        assert run.file_size == {"32m": 32 * 2**20, "64m": 64 * 2**20}[opts["size"]]
        assert run.direct is (opts.get("direct", "0") == "1")
        assert run.layout == "fpp" and run.system == "local"
        assert run.provenance.tool_version == doc["fio version"].removeprefix("fio-")
        assert run.total_bytes == job[run.op.removeprefix("rand")]["io_bytes"]
        if run.op.startswith("rand"):
            d = job[run.op.removeprefix("rand")]
            assert run.unit_given == "IOPS" and f"{d['bw'] / 1024:.2f} MiB/s" in run.notes
            assert run.access == "random"


@pytest.mark.parametrize("path", FIO, ids=lambda p: p.name)
def test_detection_picks_fio(path):
    assert importers.detect(path.read_bytes()[: importers.SNIFF_BYTES]).name == "fio"


def test_sniff_rejects_foreign_files():
    from ioadvisor.importers import fio
    for other in list((SAMPLES / "ior").iterdir()) + list((SAMPLES / "mdtest").iterdir()):
        assert not fio.sniff(other.read_bytes())
    assert not fio.sniff(b"source,system,op,value,unit\n")


@needs_fio
def test_per_process_entries_are_summed(tmp_path):
    data = _run_fio(tmp_path, "--name=seq", "--rw=write", "--numjobs=2")
    doc = json.loads(data)
    assert len(doc["jobs"]) == 2                      # no group reporting: one entry per process
    runs = _parse(data)
    assert len(runs) == 1
    run = runs[0]
    assert run.op == "write" and run.ranks == 2 and run.layout == "fpp"
    assert run.value == pytest.approx(sum(j["write"]["bw"] for j in doc["jobs"]) / 1024)
    assert run.total_bytes == sum(j["write"]["io_bytes"] for j in doc["jobs"]) == 2 * 512 * 1024


@needs_fio
def test_randrw_gives_iops_for_both_directions_json_plus(tmp_path):
    data = _run_fio(tmp_path, "--name=mix", "--rw=randrw", "--group_reporting", "--numjobs=2", fmt="json+")
    doc = json.loads(data)
    runs = {r.op: r for r in _parse(data, system="box", filesystem="tmp")}
    assert set(runs) == {"randread", "randwrite"}
    for op, run in runs.items():
        d = doc["jobs"][0][op.removeprefix("rand")]
        assert run.value == pytest.approx(d["iops"]) and run.unit == "ops/s"
        assert run.ranks == 2 and run.system == "box" and run.filesystem == "tmp"


@needs_fio
def test_shared_filename_is_shared_layout(tmp_path):
    data = _run_fio(tmp_path, "--name=sh", "--rw=read", "--filename=one.dat", "--numjobs=2", "--group_reporting")
    runs = _parse(data)
    assert [r.op for r in runs] == ["read"] and runs[0].layout == "shared"
    doc = json.loads(data)
    assert runs[0].value == pytest.approx(doc["jobs"][0]["read"]["bw"] / 1024)


def test_text_before_the_json_is_skipped_and_lines_count():
    text = FIO[0].read_text()
    prefixed = "fio: some warning printed first\n\n" + text
    assert len(_parse(prefixed.encode())) == len(_parse(text.encode()))
    assert importers.detect(prefixed.encode()).name == "fio"
    cut = prefixed[: len(prefixed) // 2]
    with pytest.raises(ImportFormatError) as e:
        _parse(cut.encode())
    assert e.value.line >= len(cut.splitlines()) - 1


def test_negative_bandwidth_is_an_error():
    doc = json.loads(FIO[1].read_text())
    doc["jobs"][0]["write"]["bw"] = -5
    with pytest.raises(ImportFormatError, match="negative"):
        _parse(json.dumps(doc).encode())


def test_job_error_is_reported():
    doc = json.loads(FIO[0].read_text())
    doc["jobs"][0]["error"] = 5
    with pytest.raises(ImportFormatError, match="error"):
        _parse(json.dumps(doc).encode())


def test_kb_import(kb_path):
    with KB.open(kb_path) as kb:
        for p in FIO:
            assert import_file(kb, p, system="demo").format == "fio"
        assert kb.count(RunFilter(system="demo", op="randread")) == 1


@needs_fio
@pytest.mark.parametrize("fmt", ["normal", "terse"])
def test_plain_text_output_is_refused_with_the_option_to_use_and_nothing_imported(tmp_path, kb_path, fmt):
    """fio's default (normal) and terse outputs state neither `direct` nor `size`: a run read from them could not
    be judged cache-sized or not. `kb import` refuses such a file with exit 2 on one line that names the file and
    `--output-format=json`, and adds nothing (before, "unrecognised format" named no remedy)."""
    from typer.testing import CliRunner

    from ioadvisor.cli import app
    out = tmp_path / "fio.txt"
    out.write_bytes(_run_fio(tmp_path, "--name=seqwrite", "--rw=write", "--numjobs=2", fmt=fmt))
    assert b'"fio version"' not in out.read_bytes()
    assert importers.detect(out.read_bytes()).name == "fio"
    res = CliRunner().invoke(app, ["kb", "import", str(out), "--system", "demo", "--kb", str(kb_path)])
    assert res.exit_code == 2 and "Traceback" not in res.output, res.output
    line = res.output.strip()
    assert "\n" not in line and str(out) in line and "--output-format=json" in line, line
    assert "unrecognised" not in line
    with KB.open(kb_path) as kb:
        assert kb.count(RunFilter(system="demo")) == 0
