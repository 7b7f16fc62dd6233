"""The command examples in docs/slurm.md and docs/advise.md, run as written (on the test cluster, in a
directory holding the files they name: job.sh is the documented #IOADVISE example, site.toml the cluster's
center, my-site.toml a shipped center). None may fail or print a traceback."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.slurm_cluster import slurm_cluster  # noqa: F401

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
COMMANDS = ("advise", "wrap", "submit")


def _examples() -> list[tuple[str, str]]:
    out = []
    for doc in ("slurm.md", "advise.md"):
        for block in re.findall(r"```bash\n(.*?)```", (ROOT / "docs" / doc).read_text(), re.S):
            for line in block.splitlines():
                argv = shlex.split(line, comments=True)
                if len(argv) > 1 and argv[0] == "ioadvise" and argv[1] in COMMANDS:
                    out.append((doc, line))
    return out


def _job_example() -> str:
    text = (ROOT / "docs" / "slurm.md").read_text()
    block = next(b for b in re.findall(r"```bash\n(.*?)```", text, re.S) if b.startswith("#!") and "#IOADVISE" in b)
    return block + "echo the application runs here\n"


def test_every_documented_command_runs(slurm_cluster, tmp_path):
    examples = _examples()
    assert len(examples) >= 8
    (tmp_path / "job.sh").write_text(_job_example())
    (tmp_path / "input.dat").write_text("x\n")
    shutil.copy(slurm_cluster.center, tmp_path / "site.toml")
    shutil.copy(ROOT / "data" / "centers" / "ha8000.toml", tmp_path / "my-site.toml")
    env = {**slurm_cluster.env, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    for doc, line in examples:
        argv = shlex.split(line, comments=True)
        p = subprocess.run([str(VENV_BIN / "ioadvise"), *argv[1:]], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, f"docs/{doc}: {line}\n{p.stderr}"
        assert "Traceback" not in p.stderr
        if argv[1] == "wrap":
            script = (tmp_path / "job.io.sh").read_text()
            assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
            assert "lfs setstripe" not in script or '"$IOADVISE_DIR"' in script
