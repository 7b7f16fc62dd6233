"""`ioadvise submit` fails open on the real test cluster: a broken center file, KB or advice submits the
original script unchanged (what slurmctld stored is byte-for-byte the user's script as the center's
job_submit.lua hook leaves it, computed by running that hook in Lua 5.1), says why on stderr and exits 0; a failing sbatch gives sbatch's own status. A newline in a center, sweep or option value never
reaches a shell: the marker file the injected text would create must not exist."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from tests.slurm_cluster import slurm_cluster  # noqa: F401
from tests.test_slurm_hook_lua import hook

pytestmark = pytest.mark.slurm
IOADVISE = str(Path(sys.executable).parent / "ioadvise")


def _script(d: Path) -> tuple[Path, str]:
    out = d / "out.txt"
    text = (f"#!/bin/bash\n#SBATCH -o {out}\n#IOADVISE api=MPIIO layout=shared bytes_per_rank=1GiB\n"
            'echo "ran HINTS=${IOADVISE_HINTS:-none}"\n')
    script = d / "job.sh"
    script.write_text(text)
    return script, text


def _centers(d: Path, cluster) -> dict[str, Path]:
    good = cluster.center.read_text()
    bad = {
        "missing": d / "no-such-center.toml",
        "binary": d / "binary.toml",
        "broken_toml": d / "broken.toml",
        "newline_in_request": d / "inject.toml",
    }
    bad["binary"].write_bytes(bytes(range(256)) * 4)
    bad["broken_toml"].write_text("[[tiers]\nname = 'x'\n")
    bad["newline_in_request"].write_text(good.replace('request = "--constraint=BEEOND"',
                                                      f'request = "--constraint=BEEOND\\ntouch {d / "pwned"}"'))
    assert bad["newline_in_request"].read_text() != good
    return bad


@pytest.mark.parametrize("case", ["missing", "binary", "broken_toml", "newline_in_request"])
def test_broken_center_submits_the_original_script(slurm_cluster, tmp_path, case):
    script, text = _script(tmp_path)
    center = _centers(tmp_path, slurm_cluster)[case]
    args = [IOADVISE, "submit", str(script), "--center", str(center), "--json"]
    if case == "newline_in_request":
        args += ["--tier", "beeond"]
    p = subprocess.run(args, cwd=tmp_path, env=slurm_cluster.env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert "submitted unchanged" in p.stderr
    rep = json.loads(p.stdout)
    assert rep["changed"] is False and rep["job_id"]
    stored = slurm_cluster.run(["scontrol", "write", "batch_script", rep["job_id"], "-"])
    assert stored.returncode == 0, stored.stderr
    # the user's script with only the center hook's block in it: nothing of a wrap
    assert stored.stdout == hook(tmp_path, text)[0] and "ioadvise wrap" not in stored.stdout
    assert slurm_cluster.wait(rep["job_id"])["ExitCode"] == "0:0"
    assert (tmp_path / "out.txt").read_text() == "ran HINTS=romio_cb_write=enable,romio_ds_write=disable\n"
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("spec", ["nonexist", "no-such-center.toml"])
def test_a_center_that_is_not_there_is_warned_about_loudly(slurm_cluster, tmp_path, spec):
    """A mistyped --center still submits the job as written (fail open), but says so before and after the
    submission, naming the center, the known centers and how to list them; before, one line said 'unknown
    center' among the summary's notes."""
    script, text = _script(tmp_path)
    p = subprocess.run([IOADVISE, "submit", str(script), "--center", spec], cwd=tmp_path, env=slurm_cluster.env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    jid = p.stdout.strip().splitlines()[-1].removeprefix("Submitted batch job ")
    assert jid.isdigit(), p.stdout
    first, *rest = [line for line in p.stderr.splitlines() if line.startswith("warning:")]
    assert f"--center {spec!r} names no center (known: " in first and "TSUBAME3.0" in first
    assert "`ioadvise systems` lists them" in first and "NO I/O settings are applied" in first
    assert rest[-1] == f"warning: job {jid} was submitted without I/O settings: --center {spec!r} is no center"
    stored = slurm_cluster.run(["scontrol", "write", "batch_script", jid, "-"])
    assert stored.stdout == hook(tmp_path, text)[0]


def test_broken_kb_submits_the_original_script(slurm_cluster, tmp_path):
    script, text = _script(tmp_path)
    kb = tmp_path / "kb.sqlite"
    kb.write_bytes(b"this is not a database" * 100)
    p = subprocess.run([IOADVISE, "submit", str(script), "--center", str(slurm_cluster.center), "--kb", str(kb),
                        "--json"], cwd=tmp_path, env=slurm_cluster.env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "submitted unchanged" in p.stderr and "Traceback" not in p.stderr
    jid = json.loads(p.stdout)["job_id"]
    assert slurm_cluster.run(["scontrol", "write", "batch_script", jid, "-"]).stdout == hook(tmp_path, text)[0]
    assert kb.read_bytes() == b"this is not a database" * 100   # the broken KB is not touched either


def test_failing_sbatch_gives_its_own_status(slurm_cluster, tmp_path):
    script, _ = _script(tmp_path)
    plain = slurm_cluster.run(["sbatch", "--partition=nosuchpartition", str(script)])
    assert plain.returncode != 0
    p = subprocess.run([IOADVISE, "submit", str(script), "--hints", "a=b", "--partition=nosuchpartition"],
                       cwd=tmp_path, env=slurm_cluster.env, capture_output=True, text=True, timeout=120)
    assert p.returncode == plain.returncode
    assert "nosuchpartition" in p.stderr or "partition" in p.stderr.lower()
    assert "Traceback" not in p.stderr


def test_newline_in_a_tier_request_never_reaches_wrap_output(slurm_cluster, tmp_path):
    script, _ = _script(tmp_path)
    center = _centers(tmp_path, slurm_cluster)["newline_in_request"]
    out = tmp_path / "wrapped.sh"
    res = CliRunner().invoke(app, ["wrap", str(script), "-o", str(out), "--center", str(center), "--tier", "beeond"])
    # the center loader or the rewrite refuses it, naming the request
    assert res.exit_code == 2 and "request" in res.output and "Traceback" not in res.output
    assert not out.exists()


@pytest.mark.parametrize("slurm_toml", [
    'partition = "debug\\ntouch {m}"',
    'time = "10\\u2028touch {m}"',
    'options = ["--exclusive\\ntouch {m}"]',
    'constraint = "nvme\\"\\ntouch {m}"',
])
def test_newline_in_sweep_slurm_settings_is_rejected(tmp_path, slurm_toml):
    marker = tmp_path / "pwned"
    f = tmp_path / "sweep.toml"
    f.write_text(f'name = "s"\n[base]\nranks = 1\ndir = "{tmp_path / "d"}"\n'
                 f'[slurm]\n{slurm_toml.format(m=marker)}\n')
    res = CliRunner().invoke(app, ["bench", "sweep", str(f), "--mode", "array", "--results", str(tmp_path / "r")])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert "sweep.toml" in res.output
    assert not (tmp_path / "r").exists() and not marker.exists()
