"""`ioadvise submit` on the real test cluster with a comment holding a line separator other than "\\n" (CR,
VT, FF, FS, GS, RS, NEL, U+2028, U+2029), wrapped and submitted unchanged after failed advice.

What must not happen: the text after the separator running as a command (the marker file it would create
must not exist after the job), or the script as slurmctld stored it (`scontrol write batch_script`) losing or
changing the separator (a CR turned into a newline)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.slurm_cluster import slurm_cluster  # noqa: F401

pytestmark = pytest.mark.slurm
IOADVISE = str(Path(sys.executable).parent / "ioadvise")
SEPARATORS = {"CR": "\r", "VT": "\x0b", "FF": "\x0c", "FS": "\x1c", "GS": "\x1d", "RS": "\x1e", "NEL": "\x85",
              "LS": "\u2028", "PS": "\u2029"}
WAYS = {"wrapped": ["--hints", "romio_cb_write=enable"], "unchanged": ["--center", "no-such-center.toml"]}
CASES = [(s, w) for s in SEPARATORS for w in WAYS]


@pytest.fixture(scope="module")
def jobs(slurm_cluster, tmp_path_factory):
    """Every case submitted first, then waited for: {(separator, way): (dir, script text, report, stored)}."""
    out = {}
    for sep, way in CASES:
        d = tmp_path_factory.mktemp(f"sep-{sep}-{way}")
        text = (f"#!/bin/bash\n#SBATCH -N 1\n#SBATCH -o {d}/out.txt\n# c{SEPARATORS[sep]}touch {d}/marker\n"
                "echo hi\n")
        (d / "j.sh").write_bytes(text.encode())
        p = subprocess.run([IOADVISE, "submit", str(d / "j.sh"), "--json", *WAYS[way]], cwd=d,
                           env=slurm_cluster.env, capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr.decode(errors="replace")
        rep = json.loads(p.stdout)
        stored = subprocess.run(["scontrol", "write", "batch_script", rep["job_id"], "-"], env=slurm_cluster.env,
                                capture_output=True, timeout=60)
        assert stored.returncode == 0, stored.stderr
        out[sep, way] = (d, text, rep, stored.stdout.decode())
    for d, _, rep, _ in out.values():
        assert slurm_cluster.wait(rep["job_id"])["ExitCode"] == "0:0"
    return out


@pytest.mark.parametrize("sep,way", CASES)
def test_a_comment_stays_a_comment(jobs, sep, way):
    d, text, rep, stored = jobs[sep, way]
    assert rep["changed"] is (way == "wrapped")
    assert (d / "out.txt").read_text().endswith("hi\n")
    assert not (d / "marker").exists(), "the text after the separator in a comment ran as a command"
    comment = f"# c{SEPARATORS[sep]}touch {d}/marker\n"
    assert comment in stored
    if way == "unchanged":
        assert stored == text   # byte for byte (the script has no #IOADVISE line: the center hook adds nothing)
    else:
        lines = stored.split("\n")
        b = next(i for i, ln in enumerate(lines) if ln.startswith("# >>> ioadvise wrap"))
        e = lines.index("# <<< ioadvise wrap")
        assert "\n".join(lines[:b] + lines[e + 1:]) == text
