"""Runs are filed under the names the center gives them, whichever path creates them: `bench run`, `bench md`,
`bench sweep`, `jobs collect` and `kb import`.

A center file in the test's directory has two file systems mounted below it (one with a `$USER` pattern) and
a per-job tier. Every run these commands create must land under the center's system name and one of its file
system names; none may be filed under a mount point such as `/`, the host name, or `unknown`.
"""
from __future__ import annotations

import json
import os
import pwd
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.kb import KB, RunFilter

runner = CliRunner()
SAMPLES = Path(__file__).resolve().parent / "data" / "samples"


def _center(tmp_path: Path) -> Path:
    c = tmp_path / "center.toml"
    c.write_text(f'''name = "naming-test"
[[filesystems]]
name = "scratch"
type = "lustre"
mount = "{tmp_path}/lustre/$USER"
[[filesystems]]
name = "work"
type = "nfs"
mount = "{tmp_path}/work"
[[filesystems]]
name = "localnvme"
type = "xfs"
mount = "{tmp_path}/nvme"
persistent = false
[[tiers]]
name = "nvme"
filesystem = "localnvme"
request = "--constraint=BEEOND"
mount = "{tmp_path}/nvme/job$SLURM_JOB_ID"
''')
    return c


def _record(job_id: str, tier: str) -> bytes:
    d = {"job_id": job_id, "user": pwd.getpwuid(os.getuid()).pw_name, "host": "n1", "start": 100, "end": 110, "exit_code": 0, "staged_out_bytes": 10 << 20,
         "stage_out_seconds": 1, "settings": {"tier": {"name": tier}, "hints": {}}}
    return (json.dumps(d, separators=(",", ":")) + "\n").encode()


def _ok(args: list[str], **env: str) -> dict:
    res = runner.invoke(app, args + ["--json"], env=env or None)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_every_creating_path_files_runs_under_the_centers_names(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_CLUSTER_NAME", raising=False)
    center = _center(tmp_path)
    kb = str(tmp_path / "kb.sqlite")
    scratch = tmp_path / "lustre" / "alice" / "run1"      # below /lustre/$USER
    scratch.mkdir(parents=True)
    (tmp_path / "work").mkdir()
    (tmp_path / "nvme" / "job77").mkdir(parents=True)
    small = ["-t", "4KiB", "-b", "16KiB", "--result-dir", str(tmp_path / "res"), "--kb", kb]

    doc = _ok(["bench", "run", "--dir", str(scratch), "--center", str(center), *small])
    assert (doc["system"], doc["filesystem"], doc["tier"]) == ("naming-test", "scratch", None)
    assert not any("mount point" in w for w in doc["warnings"])
    doc = _ok(["bench", "run", "--dir", str(tmp_path / "nvme" / "job77"), "--center", str(center), *small])
    assert (doc["filesystem"], doc["tier"]) == ("localnvme", "nvme")
    doc = _ok(["bench", "md", "--files-per-dir", "5", "--dir", str(tmp_path / "work"), "--center", str(center),
               "--result-dir", str(tmp_path / "res"), "--kb", kb])
    assert doc["filesystem"] == "work"
    # --filesystem overrides the mount mapping
    doc = _ok(["bench", "run", "--dir", str(scratch), "--center", str(center), "--filesystem", "work", *small])
    assert doc["filesystem"] == "work"

    recs = tmp_path / "records"
    recs.mkdir()
    (recs / "ioadvise-77.json").write_bytes(_record("77", "nvme"))
    rows = _ok(["jobs", "collect", str(recs), "--center", str(center), "--kb", kb])
    assert [(r["system"], r["filesystem"], r["runs"]) for r in rows] == [("naming-test", "localnvme", 1)]

    res = runner.invoke(app, ["kb", "import", str(SAMPLES / "fio" / "seqwrite_1m_2jobs.json"), "--system",
                              "naming-test", "--filesystem", "scratch", "--kb", kb])
    assert res.exit_code == 0, res.output

    with KB.open(kb) as store:
        mine = store.runs(RunFilter(origin="user"))
        named = store.runs(RunFilter(system="naming-test"))
    # bench run: 3 results x 2 ops; bench md: 4 ops (create, stat, read, remove); collect: 1; fio: 1 or more
    assert len(mine) == len(named) >= 6 + 4 + 1 + 1
    assert {r.filesystem for r in mine} == {"scratch", "work", "localnvme"}
    forbidden = {"/", str(tmp_path), "unknown", None}
    assert not [r for r in mine if r.filesystem in forbidden or r.system in ("unknown", socket.gethostname())]
    assert {r.tier for r in mine if r.filesystem == "localnvme"} == {"nvme"}


def test_without_a_center_the_mount_point_is_named_and_warned_about(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CLUSTER_NAME", "clusterx")          # names the system, maps no file system
    doc = _ok(["bench", "run", "--dir", str(tmp_path), "-t", "4KiB", "-b", "16KiB",
               "--result-dir", str(tmp_path / "res")])
    assert doc["system"] == "clusterx" and doc["filesystem"] is None
    assert any("give --filesystem NAME or --center FILE" in w for w in doc["warnings"])


def test_jobs_collect_takes_the_system_from_slurm_cluster_name(tmp_path, monkeypatch):
    """A record that names no cluster (a job run outside Slurm) is filed under $SLURM_CLUSTER_NAME, with the
    tiers of the site's center of that name."""
    monkeypatch.setenv("SLURM_CLUSTER_NAME", "clusterx")
    site = tmp_path / "centers"
    site.mkdir()
    (site / "clusterx.toml").write_text('name = "clusterx"\n[[filesystems]]\nname = "bo"\ntype = "beegfs"\n'
                                        'persistent = false\n[[tiers]]\nname = "beeond"\nfilesystem = "bo"\n')
    monkeypatch.setenv("IOADVISE_CENTERS", str(site))
    (tmp_path / "ioadvise-5.json").write_bytes(_record("5", "beeond"))
    rows = _ok(["jobs", "collect", str(tmp_path), "--kb", str(tmp_path / "kb.sqlite")])
    assert [(r["system"], r["filesystem"]) for r in rows] == [("clusterx", "bo")]
    with KB.open(tmp_path / "kb.sqlite") as store:
        assert store.count(RunFilter(system="unknown")) == 0
        assert store.count(RunFilter(system="clusterx", filesystem="bo")) == 1


def test_a_bad_center_stops_the_benchmark_before_it_runs(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text('name = "x"\n[[filesystems]]\nname = "l"\ntype = "lustre"\ndefault_stripe_size = 1000\n')
    res = runner.invoke(app, ["bench", "run", "--dir", str(tmp_path / "d"), "--center", str(bad)])
    assert res.exit_code == 2 and f"{bad}:5:" in res.output and "default_stripe_size" in res.output
    assert not (tmp_path / "d").exists()


@pytest.mark.mpi
def test_sweep_files_every_config_under_the_center(tmp_path, kb_path, monkeypatch):
    monkeypatch.delenv("SLURM_CLUSTER_NAME", raising=False)
    center = _center(tmp_path)
    (tmp_path / "work").mkdir()
    f = tmp_path / "s.toml"
    f.write_text(f'name = "n"\n[base]\ntransfer_size = "4KiB"\nblock_size = "16KiB"\nranks = 1\n'
                 f'dir = "{tmp_path / "work"}"\n[vary]\nlayout = ["fpp", "shared"]\n')
    out = _ok(["bench", "sweep", str(f), "--center", str(center), "--results", str(tmp_path / "r"),
               "--kb", str(kb_path)])
    assert out["kb_runs"] == 4 and not out["failed"]
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(origin="user"))
    assert {(r.system, r.filesystem) for r in runs} == {("naming-test", "work")} and len(runs) == 4
