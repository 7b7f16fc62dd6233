"""The job-array layer archive scans and sweeps share: which SBATCH_* variables reach sbatch (a real sbatch on the
test cluster decides), and the script it renders."""
from __future__ import annotations

import pytest

from ioadvisor.errors import SlurmError
from ioadvisor.slurm.array import render, submit, submit_env
from tests.slurm_cluster import slurm_cluster  # noqa: F401


def _script(tmp_path, **kw) -> str:
    return render(name="t", tasks=2, output=str(tmp_path / "o-%A_%a.out"), command="exec true", **kw)


def test_the_script_wins_over_sbatch_variables_and_site_defaults_fill_the_rest(tmp_path):
    text = _script(tmp_path, options={"--partition": "debug", "--account": None})
    env = submit_env(text, {"SBATCH_PARTITION": "batch", "SBATCH_ACCOUNT": "proj1", "SBATCH_CONSTRAINT": "x",
                            "SBATCH_TIMELIMIT": "1", "PATH": "/bin"})
    # the script sets --partition: the user's default must not replace it; --account it leaves open: kept;
    # a constraint or time limit from the environment would silently change the sweep: dropped
    assert env == {"SBATCH_ACCOUNT": "proj1", "PATH": "/bin"}


def test_render_writes_only_the_options_given(tmp_path):
    text = _script(tmp_path, size=("--ntasks=2",), options={"--time": "00:05:00", "--qos": "", "--mem": None},
                   raw=("--exclusive",))
    lines = text.splitlines()
    assert lines[:4] == ["#!/bin/bash", "#SBATCH --job-name=t", "#SBATCH --array=0-1", "#SBATCH --ntasks=2"]
    assert "#SBATCH --time=00:05:00" in lines and "#SBATCH --exclusive" in lines
    assert not any("--qos" in ln or "--mem" in ln for ln in lines)
    assert lines[-2:] == ["set -eu", "exec true"] and text.endswith("exec true\n")


@pytest.mark.slurm
def test_submitted_array_keeps_its_partition_under_a_users_sbatch_partition(slurm_cluster, tmp_path):
    script = tmp_path / "a.sbatch"
    script.write_text(_script(tmp_path, options={"--partition": "debug"}, raw=("--hold",)))
    env = {**slurm_cluster.env, "SBATCH_PARTITION": "nosuchpartition", "SBATCH_CONSTRAINT": "nosuchfeature"}
    job = submit(script, cwd=tmp_path, env=env)
    try:
        assert slurm_cluster.job(job)["Partition"] == "debug"
    finally:
        slurm_cluster.run(["scancel", job])
    # without a partition of its own, the user's SBATCH_PARTITION is what sbatch uses (here: refused, named)
    script.write_text(_script(tmp_path, raw=("--hold",)))
    with pytest.raises(SlurmError, match="nosuchpartition|[Ii]nvalid partition"):
        submit(script, cwd=tmp_path, env=env)
