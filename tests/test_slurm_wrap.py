"""`ioadvise submit` on the real test cluster: MPI hints reach MPI_File_get_info, exit codes survive, the
BeeOND stand-in tier is staged in and out, striping is applied only where `lfs` says Lustre.

All jobs are submitted at once by one module fixture and checked by the tests below, to keep the time small.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.slurm_cluster import slurm_cluster  # noqa: F401

IOADVISE = str(Path(sys.executable).parent / "ioadvise")
VENV_BIN = str(Path(sys.executable).parent)

MPI_PROGRAM = """
import json, sys
from mpi4py import MPI
fh = MPI.File.Open(MPI.COMM_WORLD, "mpiio.dat", MPI.MODE_CREATE | MPI.MODE_WRONLY)
info = fh.Get_info()
hints = {info.Get_nthkey(i): info.Get(info.Get_nthkey(i)) for i in range(info.Get_nkeys())}
fh.Close()
if MPI.COMM_WORLD.Get_rank() == 0:
    json.dump({"size": MPI.COMM_WORLD.Get_size(), "hints": hints}, open("mpi_hints.json", "w"))
"""

# A stand-in for Lustre's `lfs` (there is no Lustre here): it records its arguments and answers
# `getstripe` with success when FAKE_LFS_IS_LUSTRE=1, the way lfs does on a Lustre directory.
FAKE_LFS = """#!/bin/sh
# fake_lfs: test stand-in for lfs; records calls, claims Lustre when FAKE_LFS_IS_LUSTRE=1
printf '%s\\n' "$*" >> "$FAKE_LFS_LOG"
case "$1" in
  getstripe) [ "${FAKE_LFS_IS_LUSTRE:-0}" = 1 ] && { echo "stripe_count:  1 stripe_size:   1048576"; exit 0; }
             echo "lfs getstripe: not a Lustre file system" >&2; exit 2;;
  setstripe) exit 0;;
esac
exit 0
"""

HINTS = {"romio_cb_write": "disable", "cb_buffer_size": "8388608"}


def _submit(cluster, workdir: Path, script: Path, *args: str, env_extra: dict | None = None) -> tuple[str, dict]:
    env = dict(cluster.env)
    env["PATH"] = f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(env_extra or {})
    p = subprocess.run([IOADVISE, "submit", str(script), "--json", *args], cwd=workdir, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["job_id"], report
    return report["job_id"], report


@pytest.fixture(scope="module")
def jobs(slurm_cluster, tmp_path_factory):
    """Submit every job, wait for all of them; return {name: (job_id, workdir, slurm record, report)}."""
    base = tmp_path_factory.mktemp("wrapjobs")
    center = str(slurm_cluster.center)
    out: dict[str, tuple] = {}

    def mk(name: str, body: str) -> tuple[Path, Path]:
        d = base / name
        d.mkdir(parents=True)
        s = d / "job.sh"
        s.write_text(body)
        return d, s

    # 1. MPI job: hints through ROMIO_HINTS into MPI_File_get_info
    d, s = mk("mpi", "#!/bin/bash\n#SBATCH -n 2\n#SBATCH -o out.txt\nset -euo pipefail\n"
              f"cat > prog.py <<'PY'\n{MPI_PROGRAM}PY\nmpiexec -n 2 {sys.executable} prog.py\n")
    out["mpi"] = (*_submit(slurm_cluster, d, s, "--hints", ",".join(f"{k}={v}" for k, v in HINTS.items())), d)

    # 2. BeeOND tier, user command fails with 3: results still come back
    d, s = mk("beeond", "#!/bin/bash\n#SBATCH -o out.txt\nset -euo pipefail\n"
              "pwd > where.txt\ncat input.dat > copied.txt\necho result > result.txt\nexit 3\n")
    (d / "input.dat").write_text("input-data\n")
    out["beeond"] = (*_submit(slurm_cluster, d, s, "--center", center, "--tier", "beeond",
                              "--stage-in", "input.dat"), d)

    # 3./4. striping with the lfs stand-in: "Lustre" gets setstripe, "not Lustre" (ext4) does not
    for name, lustre in (("lustre", "1"), ("ext4", "0")):
        d, s = mk(name, "#!/bin/bash\n#SBATCH -o out.txt\necho ran\n")
        fake = d / "bin"
        fake.mkdir()
        (fake / "lfs").write_text(FAKE_LFS)
        (fake / "lfs").chmod(0o755)
        out[name] = (*_submit(slurm_cluster, d, s, "--stripe-count", "4", "--stripe-size", "1MiB",
                              env_extra={"PATH": f"{fake}:{VENV_BIN}:/usr/bin:/bin", "FAKE_LFS_LOG": str(d / "lfs.log"),
                                         "FAKE_LFS_IS_LUSTRE": lustre}), d)

    # 5. awkward script: path with spaces and quotes, heredoc, strict mode, no #SBATCH lines at all
    d, s = mk("it's a \"dir\" with spaces", "#!/bin/bash\nset -euo pipefail\n"
              "cat > 'my file.txt' <<'EOF'\n$HOME stays literal `here`\nEOF\nexit 0\n")
    out["awkward"] = (*_submit(slurm_cluster, d, s, "--hints", "romio_cb_write=enable",
                               "--outdir", "results 'x' \"y\""), d)

    # 6. BeeOND tier, the user's script sets its own EXIT trap and ends with exec: results still come back
    d, s = mk("exec", "#!/bin/bash\n#SBATCH -o out.txt\ntrap 'echo mine > mine.txt' EXIT\necho r > result.txt\n"
              "exec sh -c 'echo late > late.txt; exit 6'\n")
    out["exec"] = (*_submit(slurm_cluster, d, s, "--center", center, "--tier", "beeond"), d)

    # 7. BeeOND tier, the job is cancelled while it runs: scancel's SIGTERM still stages results out
    d, s = mk("cancel", "#!/bin/bash\n#SBATCH -o out.txt\necho r > result.txt\nsleep 120\n")
    jid, report = _submit(slurm_cluster, d, s, "--center", center, "--tier", "beeond")
    _wait_until_running_with(slurm_cluster, jid, slurm_cluster.odfs / jid / "result.txt")
    slurm_cluster.run(["scancel", jid], check=True)
    out["cancel"] = (jid, report, d)

    # 8. BeeOND tier, no --output: the record goes to the #IOADVISE outdir below the start directory
    d, s = mk("outdir", "#!/bin/bash\n#IOADVISE outdir=results\necho r > result.txt\n")
    out["outdir"] = (*_submit(slurm_cluster, d, s, "--center", center, "--tier", "beeond"), d)

    # 9. the script says -o logs/out.txt (logs/ does not exist), the command line says -o out.txt, which wins
    d, s = mk("cli_output", "#!/bin/bash\n#SBATCH -o logs/out.txt\necho r\n")
    (d / "run").mkdir()
    out["cli_output"] = (*_submit(slurm_cluster, d, s, "--hints", "romio_cb_write=enable", "-o", "run/out.txt"), d)

    # 10. BeeOND tier, a job name with a line break that forges a second job in `scontrol show job -o`
    d, s = mk("newline", "#!/bin/bash\n#SBATCH -o out.txt\necho r > result.txt\n")
    out["newline"] = (*_submit(slurm_cluster, d, s, "--center", center, "--tier", "beeond",
                               "-J", "evil\nJobId=999999 UserId=nobody(65534) WorkDir=/tmp"), d)

    records = {}
    for name, (jid, report, d) in out.items():
        records[name] = (jid, d, slurm_cluster.wait(jid, timeout=LONG), report)
    return records


# how long a job may take to get through a loaded machine's queue: the waits below end on a job's state, this
# only stops a test that would otherwise wait for ever
LONG = 1800


def _wait_until_running_with(cluster, jid: str, path: Path) -> None:
    """Wait until the job runs and `path` exists: on a loaded machine the job may wait in the queue behind the
    others for minutes, and a job cancelled before it ran has nothing to stage out."""
    deadline = time.monotonic() + LONG
    while not path.exists():
        state = cluster.job(jid).get("JobState")
        assert state in ("PENDING", "CONFIGURING", "RUNNING") and time.monotonic() < deadline, \
            f"job {jid} is {state} and never wrote {path.name}"
        time.sleep(0.2)


def _wait_for_end_record(d: Path, jid: str) -> dict:
    """The job's record once its EXIT trap has written the end: after a cancel, Slurm shows CANCELLED while the
    batch shell may still stage out."""
    rec = d / f"ioadvise-{jid}.json"
    deadline = time.monotonic() + LONG
    while not (rec.exists() and json.loads(rec.read_text())["end"] is not None):
        assert time.monotonic() < deadline, f"job {jid} never wrote its end record"
        time.sleep(0.1)
    return json.loads(rec.read_text())


def test_mpi_hints_reach_mpi_file_get_info(jobs):
    jid, d, info, report = jobs["mpi"]
    assert info["ExitCode"] == "0:0", (d / "out.txt").read_text()
    got = json.loads((d / "mpi_hints.json").read_text())
    assert got["size"] == 2
    for k, v in HINTS.items():
        assert got["hints"].get(k) == v, (k, got["hints"])
    assert report["settings"]["hints"] == HINTS


def test_exit_code_preserved_and_tier_staged_back(jobs, slurm_cluster):
    jid, d, info, report = jobs["beeond"]
    assert info["ExitCode"] == "3:0"
    assert "BEEOND" in info.get("Features", "")
    where = (d / "where.txt").read_text().strip()
    assert where == str(slurm_cluster.odfs / jid)                # the job ran in the per-job dir
    assert (d / "result.txt").read_text() == "result\n"          # written there, staged back after failure
    assert (d / "copied.txt").read_text() == "input-data\n"      # staged in
    assert not (slurm_cluster.odfs / jid).exists()               # the Epilog removed the scratch dir
    rec = json.loads((d / f"ioadvise-{jid}.json").read_text())
    assert rec["exit_code"] == 3 and rec["job_id"] == jid and rec["settings"]["tier"]["name"] == "beeond"


def test_lfs_stand_in_claiming_lustre_gets_setstripe(jobs):
    jid, d, info, _ = jobs["lustre"]
    assert info["ExitCode"] == "0:0"
    calls = (d / "lfs.log").read_text().splitlines()
    # striping goes on a new job-specific directory, never on the start directory itself; -S in lfs grammar
    assert f"setstripe -c 4 -S 1M {d}/ioadvise-{jid}" in calls
    assert not any(c.startswith("setstripe") and c.endswith(str(d)) for c in calls)
    assert f"ioadvise: striping: -c 4 -S 1M set on {d}/ioadvise-{jid}" in (d / "out.txt").read_text()


def test_no_striping_when_not_lustre(jobs):
    jid, d, info, _ = jobs["ext4"]
    assert info["ExitCode"] == "0:0"
    calls = (d / "lfs.log").read_text().splitlines()
    assert calls and all(c.startswith("getstripe") for c in calls)


def test_awkward_script_runs_unchanged(jobs):
    jid, d, info, _ = jobs["awkward"]
    assert info["ExitCode"] == "0:0"
    assert (d / "my file.txt").read_text() == "$HOME stays literal `here`\n"
    outdir = d / "results 'x' \"y\""
    rec = json.loads((outdir / f"ioadvise-{jid}.json").read_text())
    assert rec["exit_code"] == 0
    assert (outdir / f"ioadvise-{jid}" / "romio-hints").read_text() == "romio_cb_write enable\n"


def test_user_exit_trap_and_exec_cannot_skip_the_stage_out(jobs, slurm_cluster):
    jid, d, info, _ = jobs["exec"]
    assert info["ExitCode"] == "6:0", (d / "out.txt").read_text()
    assert (d / "result.txt").read_text() == "r\n" and (d / "late.txt").read_text() == "late\n"
    assert not (d / "mine.txt").exists()          # exec drops the user's own trap, as bash does
    rec = json.loads((d / f"ioadvise-{jid}.json").read_text())
    assert rec["exit_code"] == 6 and rec["staged_out_bytes"] == len("r\n") + len("late\n")


def test_cancelled_job_is_staged_out(jobs, slurm_cluster):
    jid, d, info, _ = jobs["cancel"]
    assert info["JobState"] == "CANCELLED"
    rec = _wait_for_end_record(d, jid)
    assert (d / "result.txt").read_text() == "r\n"
    assert rec["exit_code"] == 143


def test_jobs_collect_by_job_id_brings_the_record_into_the_kb(jobs, slurm_cluster, tmp_path):
    jid, d, info, _ = jobs["exec"]
    env = {**slurm_cluster.env, "PATH": f"{VENV_BIN}:{slurm_cluster.env.get('PATH', '/usr/bin:/bin')}"}
    kb = str(tmp_path / "kb.sqlite")
    p = subprocess.run([IOADVISE, "jobs", "collect", jid, "--kb", kb, "--center", str(slurm_cluster.center),
                        "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)
    assert row["job_id"] == jid and row["status"] == "imported" and row["exit_code"] == 6
    rec = json.loads((d / f"ioadvise-{jid}.json").read_text())
    assert (rec["cluster"], rec["user"]) == ("testcluster", slurm_cluster.job(jid)["UserId"].split("(")[0])
    assert row["path"] == str(d / f"ioadvise-{jid}.json")
    listed = subprocess.run([IOADVISE, "kb", "list", "--kb", kb, "--kind", "production", "--json"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert [(r["system"], r["tier"], r["op"], r["provenance"]["job_id"]) for r in runs] == \
        [("testcluster", "beeond", "write", jid)]
    assert runs[0]["total_bytes"] == len("r\n") + len("late\n")
    p = subprocess.run([IOADVISE, "jobs", "collect", "999999", "--kb", kb], env=env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "999999" in p.stderr and "Traceback" not in p.stderr


def test_jobs_collect_by_job_id_finds_the_record_in_the_outdir(jobs, slurm_cluster, tmp_path):
    """A job without --output writes its record to its outdir; collecting it by job id must not fail with
    "no ioadvise-JOBID.json" (Slurm names only the start directory and the output file's)."""
    env = {**slurm_cluster.env, "PATH": f"{VENV_BIN}:{slurm_cluster.env.get('PATH', '/usr/bin:/bin')}"}
    for name, outdir in (("outdir", "results"), ("awkward", "results 'x' \"y\"")):
        jid, d, _, _ = jobs[name]
        rec = d / outdir / f"ioadvise-{jid}.json"
        assert rec.is_file(), sorted(p.name for p in d.iterdir())
        p = subprocess.run([IOADVISE, "jobs", "collect", jid, "--kb", str(tmp_path / "kb.sqlite"), "--center",
                            str(slurm_cluster.center), "--json"], env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        (row,) = json.loads(p.stdout)
        assert row["path"] == str(rec) and row["job_id"] == jid
    assert json.loads(p.stdout)[0]["status"] != "imported"        # the awkward job staged nothing


def test_jobs_collect_by_job_id_ties_the_record_to_the_job(jobs, slurm_cluster, tmp_path):
    """A job name with a line break splits `scontrol show job -o`'s line: the job is still found whole (its
    record in its working directory), and the forged JobId=999999 in the name is no job. A record in the job's
    directory that claims another job (1 PiB staged in 2 s) is refused, and adds nothing to the KB."""
    jid, d, info, _ = jobs["newline"]
    assert info["JobState"] == "COMPLETED"
    env = {**slurm_cluster.env, "PATH": f"{VENV_BIN}:{slurm_cluster.env.get('PATH', '/usr/bin:/bin')}"}
    kb = str(tmp_path / "kb.sqlite")
    cmd = [IOADVISE, "jobs", "collect", jid, "--kb", kb, "--center", str(slurm_cluster.center), "--json"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)
    assert (row["job_id"], row["status"], row["system"]) == (jid, "imported", "testcluster")
    record = d / f"ioadvise-{jid}.json"
    forged = {**json.loads(record.read_text()), "job_id": "12345", "start": 100, "end": 102,
              "staged_out_bytes": 1 << 50}
    record.write_text(json.dumps(forged))
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"the record claims job 12345, but it was found for job {jid}" in p.stderr
    listed = subprocess.run([IOADVISE, "kb", "list", "--kb", kb, "--kind", "production", "--json"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert [r["provenance"]["job_id"] for r in json.loads(listed.stdout)] == [jid]


def test_output_given_to_submit_decides_where_the_record_goes(jobs):
    """sbatch's -o replaces the script's #SBATCH -o: the record must go next to the output sbatch writes, not
    to the script's logs/ (which does not exist, so the record was lost and `jobs collect` found nothing)."""
    jid, d, info, _ = jobs["cli_output"]
    assert info["JobState"] == "COMPLETED", (d / "run" / "out.txt").read_text()
    assert not (d / "logs").exists()
    assert "No such file" not in (d / "run" / "out.txt").read_text()
    rec = json.loads((d / "run" / f"ioadvise-{jid}.json").read_text())
    assert rec["job_id"] == jid and rec["exit_code"] == 0 and rec["end"] >= rec["start"]
