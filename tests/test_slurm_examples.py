"""The example Prolog and Epilog for a per-job scratch tier (slurm/examples), run as slurmd would run them: with
the job's id, user and constraints in the environment, against a scratch mount root."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "slurm" / "examples"


def _run(script: str, root: Path, **env: str) -> None:
    base = {"PATH": os.environ["PATH"], "MOUNT_ROOT": str(root), "SLURM_JOB_UID": str(os.getuid())}
    p = subprocess.run(["bash", str(EXAMPLES / script)], env={**base, **env}, capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("constraints", ["BEEOND", "nvme&BEEOND", "[BEEOND|nvme]", "BEEOND*2&nvme"])
def test_a_job_asking_for_the_feature_gets_its_own_directory_and_loses_it_after(tmp_path, constraints):
    root = tmp_path / "odfs"
    root.mkdir(mode=0o755)
    _run("prolog-beeond.sh", root, SLURM_JOB_ID="4242", SLURM_JOB_CONSTRAINTS=constraints)
    d = root / "4242"
    assert d.is_dir() and (d.stat().st_mode & 0o777) == 0o700
    _run("epilog-beeond.sh", root, SLURM_JOB_ID="4242")
    assert not d.exists()


@pytest.mark.parametrize("job_id,constraints", [("", "BEEOND"), ("../x", "BEEOND"), ("4242", "NOBEEOND"),
                                                ("4242", "BEEOND_OLD&nvme"), ("4242", "nvme")])
def test_no_directory_without_a_job_id_or_the_feature_itself(tmp_path, job_id, constraints):
    """Not: the mount root itself made the job user's (an empty job id), a path outside it, or a directory for a
    feature that only contains the name (NOBEEOND, BEEOND_OLD)."""
    root = tmp_path / "odfs"
    root.mkdir(mode=0o755)
    before = root.stat()
    _run("prolog-beeond.sh", root, SLURM_JOB_ID=job_id, SLURM_JOB_CONSTRAINTS=constraints)
    assert list(root.iterdir()) == [] and not (tmp_path / "x").exists()
    after = root.stat()
    assert (after.st_mode, after.st_uid) == (before.st_mode, before.st_uid)
