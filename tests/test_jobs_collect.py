"""Job records of wrapped jobs: the jobrecord importer and `ioadvise jobs collect` on directories and files
(collecting by Slurm job id runs against the real cluster in test_slurm_wrap.py)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ioadvisor import importers
from ioadvisor.cli import app
from ioadvisor.errors import ImportFormatError
from ioadvisor.importers import ImportContext
from ioadvisor.importers.jobrecord import parse

runner = CliRunner()


def _record(job_id="11", start=100, end=110, staged=10 << 20, tier="beeond", **extra) -> bytes:
    d = {"job_id": job_id, "host": "n1", "start": start, "end": end, "exit_code": 0, "staged_out_bytes": staged,
         "stage_out_seconds": 1, "settings": {"tier": {"name": tier} if tier else None,
                                               "hints": {"romio_cb_write": "disable"}, "stripe_count": 4,
                                               "stripe_size": 1 << 20}}
    d.update(extra)
    return (json.dumps(d, separators=(",", ":")) + "\n").encode()


def test_a_staged_record_is_one_production_write_run():
    data = _record()
    assert importers.detect(data).name == "jobrecord"
    (run,) = parse(data, ImportContext(source="ioadvise-11.json", system="mycluster"))
    assert run.op == "write" and run.tier == "beeond" and run.filesystem == "beeond"
    assert run.value_given == (10 << 20) / 10 and run.unit_given == "B/s"
    assert run.provenance.kind == "production" and run.provenance.job_id == "11"
    assert run.hints == {"romio_cb_write": "disable"} and run.stripe_count == 4 and run.total_bytes == 10 << 20


def test_records_without_a_measurement_or_unfinished_or_broken():
    assert parse(_record(staged=None, tier=None), ImportContext()) == []
    with pytest.raises(ImportFormatError, match="has not finished"):
        parse(_record(end=None), ImportContext(source="r.json"))
    with pytest.raises(ImportFormatError, match="staged_out_bytes must be a non-negative integer"):
        parse(_record(staged=-5), ImportContext(source="r.json"))
    with pytest.raises(ImportFormatError) as e:
        parse(b'{"job_id":"1",\n"settings":{}\n', ImportContext(source="r.json"))
    assert str(e.value).startswith("r.json:3: invalid or truncated job record JSON")


def test_a_failed_stage_out_is_not_a_measurement(tmp_path):
    """stage_out_status 1: some copy back failed, so staged_out_bytes counts what was on the tier, not what came
    back; 10 MiB / 10 s must not enter the KB as 1 MiB/s written."""
    assert parse(_record(stage_out_status=1), ImportContext()) == []
    assert len(parse(_record(stage_out_status=0), ImportContext())) == 1
    with pytest.raises(ImportFormatError, match="stage_out_status must be a non-negative integer"):
        parse(_record(stage_out_status="x"), ImportContext(source="r.json"))
    (tmp_path / "ioadvise-11.json").write_bytes(_record(stage_out_status=1))
    res = runner.invoke(app, ["jobs", "collect", str(tmp_path), "--kb", str(tmp_path / "kb.sqlite"), "--json"])
    assert res.exit_code == 0, res.output
    (row,) = json.loads(res.stdout)
    assert row["runs"] == 0 and row["status"] == "stage-out failed: nothing measured"


def test_collect_directory_imports_once_and_lists_records_without_data(tmp_path):
    (tmp_path / "ioadvise-11.json").write_bytes(_record())
    (tmp_path / "ioadvise-12.json").write_bytes(_record(job_id="12", staged=None, tier=None))
    (tmp_path / "ioadvise-13.json.tmp").write_bytes(b"{")           # a record being written is not read
    kb = str(tmp_path / "kb.sqlite")
    res = runner.invoke(app, ["jobs", "collect", str(tmp_path), "--kb", kb, "--json", "--system", "c1"])
    assert res.exit_code == 0, res.output
    rows = {r["job_id"]: r for r in json.loads(res.stdout)}
    assert rows["11"]["status"] == "imported" and rows["11"]["runs"] == 1
    assert rows["12"]["status"].startswith("no staged volume") and rows["12"]["runs"] == 0
    again = json.loads(runner.invoke(app, ["jobs", "collect", str(tmp_path), "--kb", kb, "--json"]).stdout)
    assert {r["job_id"]: r["status"] for r in again}["11"] == "already in the KB"
    runs = json.loads(runner.invoke(app, ["kb", "list", "--kb", kb, "--kind", "production", "--json"]).stdout)
    assert [(r["system"], r["provenance"]["job_id"]) for r in runs] == [("c1", "11")]


def test_collect_checks_every_record_before_importing_any(tmp_path):
    (tmp_path / "ioadvise-11.json").write_bytes(_record())
    bad = tmp_path / "ioadvise-14.json"
    bad.write_bytes(_record(job_id="14", end=None))
    kb = str(tmp_path / "kb.sqlite")
    res = runner.invoke(app, ["jobs", "collect", str(tmp_path), "--kb", kb])
    assert res.exit_code == 2 and "ioadvise-14.json" in res.output and "has not finished" in res.output
    assert "Traceback" not in res.output
    assert json.loads(runner.invoke(app, ["kb", "list", "--kb", kb, "--kind", "production", "--json"]).stdout) == []
    res = runner.invoke(app, ["jobs", "collect", str(tmp_path / "nothing-here"), "--kb", kb])
    assert res.exit_code == 2 and "not a Slurm job id" in res.output
