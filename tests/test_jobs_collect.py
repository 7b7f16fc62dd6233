"""Job records of wrapped jobs: the jobrecord importer and `ioadvise jobs collect` on directories and files
(collecting by Slurm job id runs against the real cluster in test_slurm_wrap.py)."""
from __future__ import annotations

import json
import os
import pwd

import pytest
from typer.testing import CliRunner

from ioadvisor import importers
from ioadvisor.cli import app
from ioadvisor.errors import ImportFormatError
from ioadvisor.importers import ImportContext
from ioadvisor.importers.jobrecord import PHYSICAL_MAX, parse
from ioadvisor.slurm.records import job_entries

runner = CliRunner()
ME = pwd.getpwuid(os.getuid()).pw_name
TSUBAME = ImportContext(source="ioadvise-11.json", center="tsubame3")     # a shipped center with tier beeond


def _record(job_id="11", start=100, end=110, staged=10 << 20, tier="beeond", **extra) -> bytes:
    d = {"job_id": job_id, "cluster": "tsubame3", "user": ME, "host": "n1", "start": start, "end": end, "exit_code": 0, "staged_out_bytes": staged,
         "stage_out_seconds": 1, "settings": {"tier": {"name": tier} if tier else None,
                                               "hints": {"romio_cb_write": "disable"}, "stripe_count": 4,
                                               "stripe_size": 1 << 20}}
    d.update(extra)
    return (json.dumps(d, separators=(",", ":")) + "\n").encode()


def test_a_staged_record_is_one_production_write_run():
    data = _record()
    assert importers.detect(data).name == "jobrecord"
    (run,) = parse(data, TSUBAME)
    assert run.op == "write" and run.tier == "beeond" and run.filesystem == "beeond"
    assert run.system == "TSUBAME3.0"
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
    assert len(parse(_record(stage_out_status=0), TSUBAME)) == 1
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
    res = runner.invoke(app, ["jobs", "collect", str(tmp_path), "--kb", kb, "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["job_id"]: r for r in json.loads(res.stdout)}
    assert rows["11"]["status"] == "imported" and rows["11"]["runs"] == 1
    assert rows["12"]["status"].startswith("no staged volume") and rows["12"]["runs"] == 0
    again = json.loads(runner.invoke(app, ["jobs", "collect", str(tmp_path), "--kb", kb, "--json"]).stdout)
    assert {r["job_id"]: r["status"] for r in again}["11"] == "already in the KB"
    runs = json.loads(runner.invoke(app, ["kb", "list", "--kb", kb, "--kind", "production", "--json"]).stdout)
    # filed under the system the record's cluster names (no --system, --center or $SLURM_CLUSTER_NAME needed)
    assert [(r["system"], r["provenance"]["job_id"]) for r in runs] == [("TSUBAME3.0", "11")]


def _collect(path, kb, *more):
    res = runner.invoke(app, ["jobs", "collect", str(path), "--kb", str(kb), "--json", *more])
    assert "Traceback" not in res.output
    return res, {r["job_id"]: r for r in json.loads(res.stdout)}


def _production(kb):
    return json.loads(runner.invoke(app, ["kb", "list", "--kb", str(kb), "--kind", "production", "--json"]).stdout)


def test_one_bad_record_fails_alone(tmp_path):
    """A record that cannot be read (end before start) or is unfinished is listed with its reason and adds
    nothing; the good record beside it is imported all the same; the exit code says something failed."""
    (tmp_path / "ioadvise-11.json").write_bytes(_record())
    (tmp_path / "ioadvise-14.json").write_bytes(_record(job_id="14", end=None))
    (tmp_path / "ioadvise-15.json").write_bytes(_record(job_id="15", start=200, end=100))
    kb = tmp_path / "kb.sqlite"
    res, rows = _collect(tmp_path, kb)
    assert res.exit_code == 2
    assert rows["11"]["status"] == "imported" and rows["11"]["runs"] == 1
    assert rows["14"]["status"] == "refused" and "has not finished" in rows["14"]["error"]
    assert rows[None]["path"].endswith("ioadvise-15.json") and "before start" in rows[None]["error"]
    assert [r["provenance"]["job_id"] for r in _production(kb)] == ["11"]
    res = runner.invoke(app, ["jobs", "collect", str(tmp_path / "nothing-here"), "--kb", str(kb)])
    assert res.exit_code == 2 and "not a Slurm job id" in res.output


def test_a_record_must_belong_to_the_job_and_user_it_is_found_for(tmp_path):
    """ioadvise-5.json claiming job 12345, a record naming another user than the file's owner: neither is
    imported. A record that names no user (an older wrap's) stands for its file's owner."""
    (tmp_path / "ioadvise-5.json").write_bytes(_record(job_id="12345", staged=1 << 50, end=102))
    (tmp_path / "ioadvise-6.json").write_bytes(_record(job_id="6", user="someone-else"))
    (tmp_path / "ioadvise-7.json").write_bytes(_record(job_id="7", user=None, cluster=None))
    kb = tmp_path / "kb.sqlite"
    res, rows = _collect(tmp_path, kb, "--center", "tsubame3")
    assert res.exit_code == 2
    assert rows["12345"]["status"] == rows["6"]["status"] == "refused"
    assert "claims job 12345, but its file is named for job 5" in rows["12345"]["error"]
    assert f"names user someone-else, but the file belongs to {ME}" in rows["6"]["error"]
    assert rows["7"]["status"] == "imported"
    assert [r["provenance"]["job_id"] for r in _production(kb)] == ["7"]


def test_a_record_imported_under_another_system_says_so(tmp_path):
    (tmp_path / "ioadvise-11.json").write_bytes(_record())
    kb = tmp_path / "kb.sqlite"
    assert _collect(tmp_path, kb, "--system", "tsubame3")[0].exit_code == 0
    res = runner.invoke(app, ["jobs", "collect", str(tmp_path), "--kb", str(kb), "--system", "TSUBAME3.0"])
    assert res.exit_code == 0 and "already in the KB as system tsubame3" in res.output


def test_a_record_from_another_cluster_is_refused(tmp_path):
    (tmp_path / "ioadvise-11.json").write_bytes(_record(cluster="othercluster"))
    res, rows = _collect(tmp_path, tmp_path / "kb.sqlite", "--center", "tsubame3")
    assert res.exit_code == 2 and "from cluster othercluster, not TSUBAME3.0" in rows["11"]["error"]
    assert _production(tmp_path / "kb.sqlite") == []


def test_a_tier_no_center_describes_is_refused(tmp_path):
    """The record's tier name must not become a file system of the KB (advise would offer it): refused when the
    center has no such tier, and when no center file is known at all."""
    (tmp_path / "ioadvise-11.json").write_bytes(_record(tier="madeup"))
    (tmp_path / "ioadvise-12.json").write_bytes(_record(job_id="12", cluster="nowhere"))
    res, rows = _collect(tmp_path, tmp_path / "kb.sqlite")
    assert res.exit_code == 2
    assert "tier 'madeup' is not a tier of center TSUBAME3.0 (its tiers: beeond)" in rows["11"]["error"]
    assert "tier 'beeond' is described by no center file" in rows["12"]["error"]
    assert _production(tmp_path / "kb.sqlite") == []


def test_bandwidth_above_the_rated_peak_or_a_physical_bound_is_refused(tmp_path):
    """1 PiB in 2 s is 512 TiB/s: above PHYSICAL_MAX (100 TiB/s) where the center rates nothing; 10 GiB in 1 s is
    10 GiB/s, above a center's rated 8 GiB/s; 10 MiB in 10 s stays under both."""
    assert (1 << 50) / 2 > PHYSICAL_MAX > (10 << 20) / 10
    (tmp_path / "ioadvise-11.json").write_bytes(_record(staged=1 << 50, end=102))
    res, rows = _collect(tmp_path, tmp_path / "kb.sqlite")
    assert res.exit_code == 2 and "above any file system's" in rows["11"]["error"]
    center = tmp_path / "c.toml"
    center.write_text('name = "tsubame3"\n[[filesystems]]\nname = "bo"\ntype = "beegfs"\npersistent = false\n'
                      'rated_write_bandwidth = "8GiB/s"\n[[tiers]]\nname = "beeond"\nfilesystem = "bo"\n')
    (tmp_path / "ioadvise-11.json").write_bytes(_record(staged=10 << 30, start=100, end=101))
    res, rows = _collect(tmp_path, tmp_path / "kb.sqlite", "--center", str(center))
    assert res.exit_code == 2 and "above the rated write peak of bo (8 GiB/s)" in rows["11"]["error"]
    assert _production(tmp_path / "kb.sqlite") == []
    (tmp_path / "ioadvise-11.json").write_bytes(_record())
    res, rows = _collect(tmp_path, tmp_path / "kb.sqlite", "--center", str(center))
    assert res.exit_code == 0 and rows["11"]["filesystem"] == "bo" and rows["11"]["status"] == "imported"


def test_scontrol_output_split_by_a_job_name_with_a_line_break():
    """`scontrol show job -o` prints a job name's line break as it is: the rest of the line must stay with its
    job, and a forged `JobId=` line inside the name must not become a job."""
    text = ("JobId=5 JobName=evil\nJobId=999 UserId=root(0) WorkDir=/forged\nmore UserId=me(1000) GroupId=me(1000) "
            "WorkDir=/home/me/run StdOut=/home/me/run/out.txt\n"
            "JobId=6 ArrayJobId=5 ArrayTaskId=1 JobName=ok UserId=me(1000) WorkDir=/home/me/b\n")
    entries = job_entries(text, "5")
    assert [e.split()[0] for e in entries] == ["JobId=5", "JobId=6"]
    assert "WorkDir=/home/me/run" in entries[0] and "JobId=999" in entries[0]
