"""A signal that stops `ioadvise submit` while sbatch runs, on the real test cluster: sbatch must neither be
killed halfway (the user would not know whether the job exists) nor outlive ioadvise unnoticed (it went on and
submitted after ioadvise had died, and the user, seeing no job id, submitted again: a duplicate job). ioadvise
waits for sbatch, says which job it submitted, removes its temporary directory and exits 128 + the signal.

The real sbatch does the submission; on PATH before it sits a small wrapper that holds it until the test has
sent the signal (the wrapper says it started, waits for a go file, runs sbatch, then leaves a done file).
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.slurm_cluster import slurm_cluster  # noqa: F401

pytestmark = pytest.mark.slurm
IOADVISE = str(Path(sys.executable).parent / "ioadvise")
GUARD = 600          # stops a test that would otherwise wait for ever; every wait ends on a state


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + GUARD
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)


@pytest.mark.parametrize("signum,group", [(signal.SIGTERM, False), (signal.SIGINT, True), (signal.SIGHUP, False)],
                         ids=["SIGTERM", "Ctrl-C to the terminal's process group", "SIGHUP"])
def test_a_signal_during_sbatch_waits_for_it_and_reports_its_job(slurm_cluster, tmp_path, signum, group):
    real = shutil.which("sbatch", path=slurm_cluster.env.get("PATH"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    started, go, done = tmp_path / "started", tmp_path / "go", tmp_path / "done"
    (bindir / "sbatch").write_text(
        f'#!/bin/sh\n: > "{started}"\nwhile [ ! -e "{go}" ]; do sleep 0.02; done\n'
        f'"{real}" "$@"\nrc=$?\n: > "{done}"\nexit $rc\n')
    (bindir / "sbatch").chmod(0o755)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    script = tmp_path / "job.sh"
    name = f"signalled-{signal.Signals(signum).name}"
    script.write_text(f"#!/bin/bash\n#SBATCH -o {tmp_path / 'out.txt'}\n#SBATCH -J {name}\necho ran\n")
    env = {**slurm_cluster.env, "TMPDIR": str(tmp), "PATH": f"{bindir}:{slurm_cluster.env.get('PATH', '')}"}
    p = subprocess.Popen([IOADVISE, "submit", str(script), "--hints", "romio_cb_write=enable"], cwd=tmp_path,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    _wait_for(started, p)
    assert [d.name for d in tmp.iterdir() if d.name.startswith("ioadvise-")], "sbatch runs from a temp dir"
    if group:
        os.killpg(p.pid, signum)            # the terminal's Ctrl-C reaches the whole foreground group
    else:
        p.send_signal(signum)
    # ioadvise now waits for sbatch; let sbatch go on and submit
    go.touch()
    out, err = p.communicate(timeout=GUARD)
    assert p.returncode == 128 + signum, (out, err)
    assert done.exists(), "sbatch outlived ioadvise, or was killed halfway"
    assert "Traceback" not in err
    jobs = slurm_cluster.run(["squeue", "-h", "-n", name, "-o", "%i", "-t", "all"]).stdout.split()
    (jid,) = jobs                           # exactly one job: the one sbatch submitted, said on stderr
    assert f"sbatch had already submitted the job: job {jid} is queued" in err, err
    assert list(tmp.iterdir()) == []        # the script's temporary directory is gone
    slurm_cluster.run(["scancel", jid])
