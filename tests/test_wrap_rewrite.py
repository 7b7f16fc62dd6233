"""Rewriting job scripts (pure) and running the result with a local shell (no Slurm needed)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from ioadvisor.errors import UsageError
from ioadvisor.slurm.jobscript import parse_jobscript
from ioadvisor.slurm.rewrite import BEGIN, END, TierSpec, WrapSettings, strip_wrap, wrap

BASIC = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH -C nvme\n\nset -euo pipefail\necho hi\n"


def _run(script: str, tmp: Path, job_id: str = "42", env: dict | None = None) -> subprocess.CompletedProcess:
    path = tmp / "wrapped.sh"
    path.write_text(script)
    e = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": job_id, "HOME": str(tmp)}
    e.update(env or {})
    return subprocess.run(["bash", str(path)], cwd=tmp, env=e, capture_output=True, text=True, timeout=30)


def test_block_is_inserted_after_sbatch_lines_and_commands_follow_unchanged():
    out = wrap(BASIC, WrapSettings(hints={"romio_cb_write": "enable"}))
    lines = out.splitlines()
    b, e = lines.index(BEGIN), lines.index(END)
    assert lines[:b] == ["#!/bin/bash", "#SBATCH -N 1", "#SBATCH -C nvme", ""]
    assert lines[e + 1:] == ["set -euo pipefail", "echo hi"]
    assert strip_wrap(out) == BASIC


def test_tier_request_goes_into_the_sbatch_block_and_merges_constraints():
    tier = TierSpec(name="beeond", request="--constraint=BEEOND", mount="/mnt/odfs/$SLURM_JOB_ID")
    out = wrap(BASIC, WrapSettings(tier=tier))
    js = parse_jobscript(out)
    assert js.option("constraint") == "nvme&BEEOND"       # sbatch takes the last directive
    assert js.option("nodes") == "1"
    # already requested: nothing added
    out2 = wrap(BASIC.replace("-C nvme", "-C BEEOND"), WrapSettings(tier=tier))
    assert "#SBATCH --constraint" not in out2


def test_wrap_is_idempotent():
    s = WrapSettings(stripe_count=4, stripe_size=1 << 20, hints={"cb_buffer_size": "8388608"},
                     tier=TierSpec(name="b", request="--constraint=BEEOND", mount="/x/$SLURM_JOB_ID"))
    once = wrap(BASIC, s)
    assert wrap(once, s) == once
    # a different setting replaces the block instead of stacking a second one
    other = wrap(once, WrapSettings(hints={"romio_cb_write": "disable"}))
    assert other.count(BEGIN) == 1 and "cb_buffer_size" not in other


def test_not_a_shell_script_or_no_shebang_is_a_usage_error():
    with pytest.raises(UsageError):
        wrap("#!/usr/bin/env python3\nprint(1)\n", WrapSettings())
    with pytest.raises(UsageError):
        wrap("echo hi\n", WrapSettings())


@pytest.mark.parametrize("hints", [{"a b": "1"}, {"k": "x;touch /tmp/p"}, {"k": "$(id)"}, {"k": "a`b`"}])
def test_unsafe_hints_are_rejected(hints):
    with pytest.raises(UsageError):
        wrap(BASIC, WrapSettings(hints=hints))


def test_mount_pattern_allows_only_known_variables():
    with pytest.raises(UsageError):
        wrap(BASIC, WrapSettings(tier=TierSpec(name="t", mount="/x/$(id)/$PATH")))


def test_exit_code_and_record_local_run(tmp_path):
    script = "#!/bin/bash\n#SBATCH -N 1\nset -euo pipefail\necho body\nfalse\necho never\n"
    out = wrap(script, WrapSettings(hints={"romio_cb_write": "disable", "cb_buffer_size": "8388608"}))
    p = _run(out, tmp_path)
    assert p.returncode == 1 and "body" in p.stdout and "never" not in p.stdout
    rec = json.loads((tmp_path / "ioadvise-42.json").read_text())
    assert rec["exit_code"] == 1 and rec["job_id"] == "42" and rec["end"] >= rec["start"]
    assert rec["settings"]["hints"] == {"romio_cb_write": "disable", "cb_buffer_size": "8388608"}
    # the hints file is job-private and absolute: <outdir>/ioadvise-JOBID/romio-hints
    assert (tmp_path / "ioadvise-42" / "romio-hints").read_text() == "romio_cb_write disable\ncb_buffer_size 8388608\n"
    assert f"ioadvise: hints: romio_cb_write=disable,cb_buffer_size=8388608 for MPICH: " \
           f"ROMIO_HINTS={tmp_path}/ioadvise-42/romio-hints" in p.stderr
    assert "ioadvise: staging: none (no scratch tier)" in p.stderr


@pytest.mark.parametrize("output", ["/dev/null", "/dev/stdout"])
def test_output_to_a_device_keeps_the_record_in_the_results_directory(tmp_path, output):
    """`#SBATCH -o /dev/null` is common; /dev is not where results go (a user cannot write there, so the record
    was lost): the record must go to the outdir, and nothing named ioadvise-* may appear in /dev."""
    script = f"#!/bin/bash\n#SBATCH -o {output}\necho body\n"
    job = f"9{os.getpid()}"
    p = _run(wrap(script, WrapSettings(hints={"romio_cb_write": "disable"}, outdir="res")), tmp_path, job_id=job)
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "res" / f"ioadvise-{job}.json").read_text())["exit_code"] == 0
    assert not list(Path("/dev").glob(f"ioadvise-{job}*"))


def test_hostile_values_are_quoted_not_run(tmp_path):
    marker = tmp_path / "pwned"
    evil = f"$(touch {marker})`touch {marker}`;touch {marker}"
    script = f"#!/bin/bash\n#IOADVISE outdir=x\necho ok\n"
    s = WrapSettings(outdir=f"out {evil}", stage_in=(f"in {evil}",),
                     tier=TierSpec(name=f"t{evil}", mount=str(tmp_path / "scratch") + "/$SLURM_JOB_ID"))
    (tmp_path / "scratch" / "7").mkdir(parents=True)
    p = _run(wrap(script, s), tmp_path, job_id="7")
    assert p.returncode == 0, p.stderr
    assert not marker.exists()
    assert (tmp_path / f"out {evil}" / "ioadvise-7.json").exists()


def test_no_striping_on_a_local_file_system(tmp_path):
    out = wrap(BASIC, WrapSettings(stripe_count=4, stripe_size=1 << 20))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # no lfs on PATH and ext4/tmpfs underneath: the striping branch must not run
    p = _run(out, tmp_path, env={"PATH": f"{bindir}:{os.environ['PATH']}"})
    assert p.returncode == 0 and "setstripe" not in p.stderr


scripts = st.builds(
    lambda head, body: "#!/bin/bash\n" + "\n".join(head) + "\n" + "\n".join(body) + "\n",
    st.lists(st.sampled_from(["#SBATCH -N 2", "#SBATCH --constraint=nvme", "", "# note", "#IOADVISE api=MPIIO",
                              '#SBATCH --output="/a b/%j.out"']), max_size=5),
    st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=30), max_size=5),
)


@settings(max_examples=60, deadline=None)
@given(scripts, st.sampled_from([None, "--constraint=BEEOND"]))
def test_wrap_twice_equals_once_and_strip_restores(script, request):
    tier = TierSpec(name="b", request=request, mount="/s/$SLURM_JOB_ID") if request else None
    s = WrapSettings(hints={"romio_cb_write": "enable"}, tier=tier)
    once = wrap(script, s)
    assert wrap(once, s) == once
    assert strip_wrap(once) == script or strip_wrap(once) == script + "\n"


def test_posix_sh_script_with_tier_staging(tmp_path):
    """/bin/sh (dash on Debian) runs the block too: stage in, run in scratch, stage out on failure."""
    scratch = tmp_path / "scratch" / "5"
    scratch.mkdir(parents=True)
    (tmp_path / "in.txt").write_text("in\n")
    script = "#!/bin/sh\nset -eu\ncat in.txt > out.txt\npwd > where.txt\nexit 4\n"
    s = WrapSettings(tier=TierSpec(name="t", mount=str(tmp_path / "scratch") + "/${SLURM_JOB_ID}"),
                     stage_in=("in.txt",), outdir="results")
    path = tmp_path / "w.sh"
    path.write_text(wrap(script, s))
    p = subprocess.run(["/bin/sh", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ["PATH"], "SLURM_JOB_ID": "5"})
    assert p.returncode == 4, p.stderr
    res = tmp_path / "results"
    assert (res / "out.txt").read_text() == "in\n"
    assert (res / "where.txt").read_text().strip() == str(scratch)
    assert not (res / "in.txt").exists()          # staged-in inputs are not copied back
    assert json.loads((res / "ioadvise-5.json").read_text())["exit_code"] == 4


def _tier_job(tmp_path: Path, shell: str, body: str, job_id: str = "7") -> tuple[Path, Path, Path]:
    """A wrapped script staging through a scratch dir; returns (script, scratch, results dir)."""
    scratch = tmp_path / "scratch" / job_id
    scratch.mkdir(parents=True)
    s = WrapSettings(tier=TierSpec(name="t", mount=str(tmp_path / "scratch") + "/${SLURM_JOB_ID}"), outdir="res")
    path = tmp_path / "w.sh"
    path.write_text(wrap(f"#!/bin/{shell}\n{body}", s))
    return path, scratch, tmp_path / "res"


@pytest.mark.parametrize("shell", ["bash", "sh"])
@pytest.mark.parametrize("body, rc, user_trap", [
    ("trap 'echo mine > mine.txt' EXIT\necho r > result.txt\nexit 3\n", 3, True),   # the user's own EXIT trap
    ("echo r > result.txt\ntrap - EXIT\nexit 0\n", 0, False),                       # clearing traps
    ("echo r > result.txt\nexec sh -c 'exit 5'\n", 5, False),                       # exec replaces the shell
])
def test_user_traps_and_exec_cannot_skip_the_stage_out(tmp_path, shell, body, rc, user_trap):
    path, scratch, res = _tier_job(tmp_path, shell, body)
    p = subprocess.run([f"/bin/{shell}", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ["PATH"], "SLURM_JOB_ID": "7"})
    assert p.returncode == rc, p.stderr
    assert (res / "result.txt").read_text() == "r\n"
    assert (res / "mine.txt").exists() == user_trap
    rec = json.loads((res / "ioadvise-7.json").read_text())
    assert rec["exit_code"] == rc and rec["end"] is not None


def test_sigterm_still_stages_out_and_records_143(tmp_path):
    import signal
    import time
    path, scratch, res = _tier_job(tmp_path, "bash", "echo r > result.txt\nsleep 600\n")
    p = subprocess.Popen(["/bin/bash", str(path)], cwd=tmp_path, env={"PATH": os.environ["PATH"], "SLURM_JOB_ID": "7"},
                         start_new_session=True)
    while not (scratch / "result.txt").exists():       # waits on the job's state, however loaded the machine
        assert p.poll() is None, "the job ended before it wrote its result"
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGTERM)          # as Slurm signals every process of a cancelled job
    assert p.wait(timeout=600) == 143
    assert (res / "result.txt").read_text() == "r\n"
    assert json.loads((res / "ioadvise-7.json").read_text())["exit_code"] == 143


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_a_signal_inside_the_exit_trap_does_not_cut_the_stage_out_short(tmp_path, shell):
    """A cancelled job's SIGTERM reaches every process at once, so the batch shell can take its own SIGTERM
    while its EXIT trap already stages out (its child died of the same signal): the trap's `exit 143` then left
    with nothing copied back and no end record (a cancelled job lost its results under load). Here a `cp` on
    PATH sends the batch shell SIGTERM from inside the stage-out, then copies."""
    path, scratch, res = _tier_job(tmp_path, shell, "echo r > result.txt\nexit 3\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "cp").write_text(f'#!/bin/sh\nkill -TERM "$PPID"\nexec {shutil.which("cp")} "$@"\n')
    (bindir / "cp").chmod(0o755)
    p = subprocess.run([f"/bin/{shell}", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={"PATH": f"{bindir}:{os.environ['PATH']}", "SLURM_JOB_ID": "7"})
    assert p.returncode == 3, p.stderr
    assert (res / "result.txt").read_text() == "r\n"
    rec = json.loads((res / "ioadvise-7.json").read_text())
    assert (rec["exit_code"], rec["staged_out_bytes"], rec["stage_out_status"]) == (3, 2, 0)
    assert rec["end"] is not None


def test_record_counts_the_bytes_staged_out_and_not_the_inputs(tmp_path):
    body = "head -c 3000 /dev/zero > a.bin\nmkdir d\nhead -c 500 /dev/zero > d/b.bin\n"
    path, scratch, res = _tier_job(tmp_path, "sh", body)
    p = subprocess.run(["/bin/sh", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ["PATH"], "SLURM_JOB_ID": "7"})
    assert p.returncode == 0, p.stderr
    expected = sum(int(subprocess.run(["du", "-sb", str(scratch / n)], capture_output=True, text=True)
                       .stdout.split()[0]) for n in ("a.bin", "d"))
    rec = json.loads((res / "ioadvise-7.json").read_text())
    assert rec["staged_out_bytes"] == expected and expected >= 3500
    assert isinstance(rec["stage_out_seconds"], int)


def test_marker_from_the_environment_does_not_skip_the_block_and_stdin_scripts_still_run(tmp_path):
    out = wrap("#!/bin/bash\necho ran > ran.txt\n", WrapSettings(hints={"romio_cb_write": "enable"}))
    path = tmp_path / "w.sh"
    path.write_text(out)
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": "8", "_ioadv_parent": "1"}   # e.g. inherited from a job
    p = subprocess.run(["bash", str(path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and (tmp_path / "ran.txt").exists()
    assert json.loads((tmp_path / "ioadvise-8.json").read_text())["exit_code"] == 0
    (tmp_path / "ran.txt").unlink()
    p = subprocess.run(["bash"], input=out, cwd=tmp_path, env={**env, "SLURM_JOB_ID": "9"}, capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 0 and (tmp_path / "ran.txt").exists()   # no file to rerun: commands run in place
    assert json.loads((tmp_path / "ioadvise-9.json").read_text())["exit_code"] == 0
