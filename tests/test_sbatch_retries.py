"""sbatch's transient controller errors are retried, and only those: a stand-in `sbatch` on PATH (a test double,
never shipped) fails a set number of times with a given message, then prints a job id, and counts its calls."""
from __future__ import annotations

import os
import stat

import pytest

from ioadvisor.errors import SlurmError
from ioadvisor.slurm.submit import sbatch


def _stand_in(tmp_path, fails: int, message: str) -> tuple[dict, object]:
    bindir, count = tmp_path / "bin", tmp_path / "calls"
    bindir.mkdir()
    exe = bindir / "sbatch"
    exe.write_text(f"""#!/bin/sh
n=$(cat {count} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {count}
if [ $n -le {fails} ]; then echo "sbatch: error: {message}" >&2; exit 1; fi
echo "4242;cluster"
""")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    return env, lambda: int(count.read_text())


def test_a_controller_that_times_out_twice_is_tried_a_third_time(tmp_path):
    env, calls = _stand_in(tmp_path, 2, "Batch job submission failed: Socket timed out on send/recv operation")
    assert sbatch("#!/bin/sh\ntrue\n", env=env, retries=2) == "4242"
    assert calls() == 3


def test_retries_end_and_the_last_error_is_told(tmp_path):
    env, calls = _stand_in(tmp_path, 5, "Unable to contact slurm controller (connect failure)")
    with pytest.raises(SlurmError, match="Unable to contact slurm controller"):
        sbatch("#!/bin/sh\ntrue\n", env=env, retries=1)
    assert calls() == 2          # the first try and one retry, not five


def test_an_error_of_the_job_itself_is_not_retried(tmp_path):
    """Forbidden: submitting a job the controller refused (a wrong partition) again; it would be refused again."""
    env, calls = _stand_in(tmp_path, 5, "Batch job submission failed: Invalid partition name specified")
    with pytest.raises(SlurmError, match="Invalid partition"):
        sbatch("#!/bin/sh\ntrue\n", env=env, retries=3)
    assert calls() == 1
