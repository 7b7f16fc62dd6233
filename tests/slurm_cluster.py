"""A real single-node Slurm cluster for the tests (slurm/testcluster/start.sh), one per test session.

Use it with `from tests.slurm_cluster import slurm_cluster  # noqa: F401` in a test module. The cluster must
start: a failure to start is a test error, never a skip.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTCLUSTER = ROOT / "slurm" / "testcluster"


@dataclass(frozen=True)
class Cluster:
    """A running test cluster: its state dir and the environment for Slurm clients."""

    dir: Path
    env: dict

    @property
    def odfs(self) -> Path:
        """Where the Prolog creates the per-job BeeOND stand-in directories."""
        return self.dir / "odfs"

    @property
    def center(self) -> Path:
        return self.dir / "center.toml"

    def run(self, args: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(args, env=kw.pop("env", self.env), capture_output=True, text=True,
                              timeout=kw.pop("timeout", 60), **kw)

    def sbatch(self, script: Path, *opts: str) -> str:
        p = self.run(["sbatch", "--parsable", *opts, str(script)])
        assert p.returncode == 0, f"sbatch failed: {p.stderr}"
        return p.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> dict:
        """`scontrol show job -o` as a dict (the last value wins for repeated keys)."""
        p = self.run(["scontrol", "show", "job", "-o", job_id])
        assert p.returncode == 0, p.stderr
        return dict(re.findall(r"(\w+)=(\S*)", p.stdout))

    def wait(self, job_id: str, timeout: float = 900) -> dict:
        """Poll until the job has left the queue for good and its Epilog has removed its BeeOND stand-in
        directory; return its record. The waits end on states: `timeout` (long, for a loaded machine whose
        queue moves slowly) only stops a test that would otherwise wait for ever."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.job(job_id)
            if info.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
                # the epilog runs after the state change
                while (self.odfs / job_id).exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                return info
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} still {info.get('JobState')} after {timeout}s")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory) -> Cluster:
    d = tmp_path_factory.mktemp("slurmtc")
    # the watchdog started with our pid stops the daemons even if this process is killed outright
    p = subprocess.run([str(TESTCLUSTER / "start.sh"), str(d), str(os.getpid())], capture_output=True, text=True,
                       timeout=90)
    if p.returncode != 0:
        subprocess.run([str(TESTCLUSTER / "stop.sh"), str(d)], capture_output=True, timeout=30)
        pytest.fail(f"the Slurm test cluster did not start:\n{p.stdout}\n{p.stderr}", pytrace=False)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SBATCH_", "SLURM_"))}
    env["SLURM_CONF"] = str(d / "etc" / "slurm.conf")
    # the same KB default and cache as conftest's _isolated_home (this fixture is made before that one patches
    # os.environ): commands run with this environment never read or write the user's own KB
    base = tmp_path_factory.getbasetemp()
    env["XDG_DATA_HOME"] = str(base / "home" / "data")
    env["XDG_CACHE_HOME"] = str(base / "cache")
    env.pop("IOADVISE_KB", None)
    previous = signal.getsignal(signal.SIGTERM)

    def _interrupt(signum, frame):   # SIGTERM (e.g. from `timeout`) runs the teardown below
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield Cluster(dir=d, env=env)
    finally:
        signal.signal(signal.SIGTERM, previous)
        subprocess.run([str(TESTCLUSTER / "stop.sh"), str(d)], capture_output=True, timeout=30)
