"""Array mode of `bench sweep` against the real single-node Slurm test cluster: one job array, one task per
config, each task reading its config from the plan by SLURM_ARRAY_TASK_ID, results imported as they land."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ioadvisor.kb import KB, RunFilter
from tests.slurm_cluster import slurm_cluster  # noqa: F401

IOADVISE = Path(sys.executable).parent / "ioadvise"


@pytest.mark.slurm
@pytest.mark.mpi
def test_array_mode_runs_each_config_as_a_task_and_imports_once(slurm_cluster, tmp_path, kb_path):
    sweep = tmp_path / "arr.toml"
    sweep.write_text(f"""
name = "arr"
[base]
block_size = "64KiB"
ranks = 2
dir = "{tmp_path / 'data'}"
system = "arraybox"
[vary]
api = ["posix", "mpiio"]
layout = ["fpp", "shared"]
collective = [false, true]
transfer_size = ["32KiB", "64KiB"]
[[exclude]]
api = "posix"
collective = true
[[include]]
api = "mpiio"
hints = "cb_buffer_size=4194304"
[slurm]
time = "00:05:00"
""")
    res = tmp_path / "res"
    env = {**slurm_cluster.env, "IOADVISE_KB": str(kb_path)}
    p = subprocess.run([str(IOADVISE), "bench", "sweep", str(sweep), "--mode", "array", "--results", str(res),
                        "--json", "--timeout", "120"], capture_output=True, text=True, env=env, timeout=180)
    assert p.returncode == 0, p.stderr + p.stdout
    summary = json.loads(p.stdout)
    # POSIX/MPI-IO x FPP/shared x collective on/off (no collective POSIX) x 2 transfer sizes = 12 configs
    assert summary["job_id"].isdigit() and summary["failed"] == [] and summary["kb_runs"] == 24
    docs = [json.loads(Path(f).read_text()) for f in summary["results"]]
    # every task ran inside the array job, as its own task id, and did the config of that index
    assert {d["effective"]["slurm_array_job_id"] for d in docs} == {summary["job_id"]}
    assert sorted(int(d["effective"]["slurm_array_task_id"]) for d in docs) == list(range(12))
    assert all(int(d["effective"]["slurm_array_task_id"]) == d["sweep"]["index"] for d in docs)
    mpi_docs = [d for d in docs if d["params"]["api"] == "mpiio"]
    assert len(mpi_docs) == 8 and all(d["effective"]["hints_source"] == "MPI_File_get_info" for d in mpi_docs)
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="arraybox"))
    assert len(runs) == 24
    assert {r.provenance.job_id for r in runs} == {f"{summary['job_id']}_{i}" for i in range(12)}
    settings = {(r.api, r.layout, r.collective, r.transfer_size) for r in runs}
    assert len(settings) == 12
    mpiio = [r for r in runs if r.api == "MPIIO"]
    assert len(mpiio) == 16 and {r.collective for r in mpiio} == {True, False}
    assert all(r.hints["cb_buffer_size"] == "4194304" for r in mpiio)   # as MPI_File_get_info reported it
    # importing the results directory again adds nothing
    again = subprocess.run([str(IOADVISE), "kb", "import", str(res), "--json"], capture_output=True, text=True,
                           env=env, timeout=60)
    assert again.returncode == 0, again.stderr
    assert [r["skipped"] for r in json.loads(again.stdout)] == [True] * 12


def _two_rank_sweep(tmp_path: Path, launcher: str) -> Path:
    """Three configs of two ranks each (FPP and shared POSIX, shared MPI-IO): every rank writes its own file or
    its own blocks, so ranks that do not know each other would all be rank 0 and write the same ones."""
    sweep = tmp_path / "two.toml"
    sweep.write_text(f"""
name = "two"
launcher = "{launcher}"
[base]
block_size = "64KiB"
transfer_size = "32KiB"
ranks = 2
dir = "{tmp_path / 'data'}"
system = "arraybox"
[vary]
api = ["posix", "mpiio"]
layout = ["fpp", "shared"]
[[exclude]]
api = "mpiio"
layout = "fpp"
[slurm]
time = "00:05:00"
""")
    return sweep


def _sweep(env: dict, sweep: Path, res: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(IOADVISE), "bench", "sweep", str(sweep), "--mode", "array", "--results", str(res),
                           "--json", "--timeout", "120"], capture_output=True, text=True, env=env, timeout=180)


@pytest.mark.slurm
@pytest.mark.mpi
def test_srun_sweep_runs_every_config_on_the_ranks_asked(slurm_cluster, tmp_path, kb_path):
    """The test cluster has no MpiDefault: `srun --mpi=pmi2` makes the two ranks one MPI job, and every result
    (and every run in the KB) reports 2 ranks on 1 node, each written by its own array task."""
    env = {**slurm_cluster.env, "IOADVISE_KB": str(kb_path)}
    p = _sweep(env, _two_rank_sweep(tmp_path, "srun --mpi=pmi2"), tmp_path / "res")
    assert p.returncode == 0, p.stderr + p.stdout
    summary = json.loads(p.stdout)
    assert summary["failed"] == [] and len(summary["results"]) == 3
    docs = [json.loads(Path(f).read_text()) for f in summary["results"]]
    assert [(d["effective"]["ranks"], d["effective"]["nodes"]) for d in docs] == [(2, 1)] * 3
    assert sorted(d["sweep"]["index"] for d in docs) == [0, 1, 2]
    assert all(d["effective"]["slurm_array_task_id"] == str(d["sweep"]["index"]) for d in docs)
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="arraybox"))
    assert len(runs) == 6 and {r.ranks for r in runs} == {2}        # 3 configs x (write, read)


@pytest.mark.slurm
def test_srun_without_an_mpi_plugin_is_refused_with_the_fix(slurm_cluster, tmp_path, kb_path):
    """`scontrol show config` of the test cluster says MpiDefault = none: plain srun would start two one-rank
    programs, so the sweep is refused (exit 2) before anything is submitted, naming the fix."""
    res = tmp_path / "res"
    env = {**slurm_cluster.env, "IOADVISE_KB": str(kb_path)}
    p = _sweep(env, _two_rank_sweep(tmp_path, "srun"), res)
    assert p.returncode == 2, p.stderr + p.stdout
    assert "MpiDefault" in p.stderr and 'launcher = "srun --mpi=pmi2"' in p.stderr and "Traceback" not in p.stderr
    assert not res.exists()
    q = subprocess.run([str(IOADVISE), "bench", "sweep", str(_two_rank_sweep(tmp_path, "srun --mpi=none")), "--mode",
                        "allocation", "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert q.returncode == 2 and "--mpi is none" in q.stderr, q.stderr


@pytest.mark.slurm
@pytest.mark.mpi
def test_ranks_that_are_not_one_mpi_job_fail_the_sweep_and_name_the_task(slurm_cluster, tmp_path, kb_path):
    """A plugin this MPICH does not speak (cray_shasta) passes the check of the launcher but still starts two
    one-rank programs: each task refuses before touching a file, the sweep exits 1 naming every task and quoting
    its error, and nothing reaches the KB."""
    env = {**slurm_cluster.env, "IOADVISE_KB": str(kb_path)}
    p = _sweep(env, _two_rank_sweep(tmp_path, "srun --mpi=cray_shasta"), tmp_path / "res")
    assert p.returncode == 1, p.stderr + p.stdout
    summary = json.loads(p.stdout)
    assert summary["results"] == [] and summary["kb_runs"] == 0
    assert [f["task"] for f in summary["failed"]] == [f"{summary['job_id']}_{i}" for i in range(3)]
    assert all("asked for 2 ranks but its MPI job has 1" in f["error"] for f in summary["failed"]), summary
    assert not (tmp_path / "data").exists()          # refused before any rank made a directory or file
    with KB.open(kb_path) as kb:
        assert kb.runs(RunFilter(system="arraybox")) == []
