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
