"""Array mode of `ioadvise archive scan` on the real single-node Slurm test cluster: the same KB content as a
one-node scan of the same archive, a task whose results are missing re-run alone and merged, merging twice
adding nothing."""
from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from ioadvisor.archive.array import render_script  # noqa: E402
from ioadvisor.archive.scan import scan  # noqa: E402
from ioadvisor.archive.worker import Settings  # noqa: E402
from ioadvisor.kb import KB  # noqa: E402
from tests.darshan_copies import wheel_logs, with_job  # noqa: E402
from tests.slurm_cluster import slurm_cluster  # noqa: E402,F401

ROOT = Path(__file__).resolve().parent.parent
IOADVISE = Path(sys.executable).parent / "ioadvise"


def _archive(root: Path) -> Path:
    """The wheel's logs, two job-id variants of example.darshan, a copy under another name and a log that
    crashes the Darshan library, in a YEAR/MONTH/DAY tree."""
    logs = wheel_logs()
    for i, p in enumerate(logs):
        d = root / "2026" / "11" / f"{1 + i % 3:02d}"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, d / p.name)
    ex = next(p for p in logs if p.name == "example.darshan").read_bytes()
    for jid in (11, 12):
        (root / "2026" / "11" / "01" / f"ex{jid}.darshan").write_bytes(with_job(ex, jobid=jid))
    shutil.copy(logs[0], root / "2026" / "11" / "02" / "copy-of-first.darshan")
    bad = bytearray(ex)
    bad[32] ^= 0xFF              # the name table's length (format 3.21 header): 7103 -> 7232, the library aborts
    (root / "2026" / "11" / "03" / "crashes.darshan").write_bytes(bytes(bad))
    return root


def _content(kb: Path) -> dict[str, list]:
    """Every archive table and the runs and sources, without the times of the scan. The signal the Darshan
    library dies of on the crashing log varies from one read to the next (SIGABRT or SIGSEGV, the same log in the
    same process layout), so a crash's signal name is not compared; that it crashed is."""
    c = sqlite3.connect(kb)
    logs = [(h, p, n, st, re.sub(r"\(SIG[A-Z]+\)", "(signal)", e) if e else e, sy)
            for h, p, n, st, e, sy in c.execute("SELECT hash, path, size, status, error, system FROM archive_logs")]
    return {
        "logs": sorted(logs),
        "paths": sorted(c.execute("SELECT * FROM archive_paths")),
        "jobs": sorted(c.execute("SELECT * FROM archive_jobs")),
        "findings": sorted(c.execute("SELECT * FROM archive_findings")),
        "sources": sorted(c.execute("SELECT hash, path, format, importer, n_runs FROM sources")),
        "runs": sorted(c.execute("SELECT * FROM runs")),
    }


def _cli(env: dict, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([str(IOADVISE), *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_array_script_slices_by_task_id_with_the_tasks_cpus(tmp_path):
    text = render_script(tmp_path / "w", 3, {"cpus_per_task": "2", "partition": "debug", "time": "00:10:00"})
    lines = text.splitlines()
    assert "#SBATCH --array=0-2" in lines and "#SBATCH --cpus-per-task=2" in lines
    assert "#SBATCH --partition=debug" in lines and "#SBATCH --time=00:10:00" in lines
    assert not any(ln.startswith("#SBATCH --account") for ln in lines)      # not given: no line
    assert lines[-1].endswith('"$SLURM_ARRAY_TASK_ID"') and "-m ioadvisor.archive.array" in lines[-1]


@pytest.mark.slurm
def test_array_mode_gives_the_kb_of_a_one_node_scan(slurm_cluster, tmp_path):
    arch = _archive(tmp_path / "archive")
    env = {**slurm_cluster.env, "PYTHONPATH": str(ROOT)}
    kb_array, kb_local = tmp_path / "array.sqlite", tmp_path / "local.sqlite"
    work = tmp_path / "work"
    # a center whose one mount, /, holds every file: the jobs that moved data through files become runs too
    center = tmp_path / "wheelbox.toml"
    center.write_text('name = "wheelbox"\n[[filesystems]]\nname = "disk"\ntype = "ext4"\nmount = "/"\n')
    p = _cli(env, "archive", "scan", str(arch), "--mode", "array", "--tasks", "3", "--work", str(work),
             "--center", str(center), "--kb", str(kb_array), "--json")
    assert p.returncode == 0, p.stderr + p.stdout
    out = json.loads(p.stdout)
    n = len(wheel_logs())
    # the wheel's logs + 2 variants + the crashing log are read; the copy under another name is not
    assert out["files"] == n + 4 and out["duplicates"] == 1 and out["to_read"] == n + 3
    assert out["job_id"].isdigit() and out["tasks"] == 3 and sorted(out["merged"]) == [0, 1, 2]
    assert out["missing"] == [] and [f["path"] for f in out["failed"]] == [str(arch / "2026/11/03/crashes.darshan")]
    assert "crashed" in out["failed"][0]["error"]
    # every task ran in the array job, as its own task id (the job's output files name both)
    assert sorted(q.name for q in work.glob("slurm-*.out")) == [f"slurm-{out['job_id']}_{k}.out" for k in range(3)]
    plan = json.loads((work / "plan.json").read_text())
    assert [len(s) for s in plan["slices"]] == [(n + 3) * (k + 1) // 3 - (n + 3) * k // 3 for k in range(3)]
    with KB.open(kb_local) as kb:
        from ioadvisor.center import load_center
        scan([arch], kb, Settings(system="wheelbox", center=str(center)), workers=2, center=load_center(center))
    a, b = _content(kb_array), _content(kb_local)
    assert a == b
    assert len(a["jobs"]) == n + 2 and len(a["logs"]) == n + 3 and len(a["paths"]) == n + 4 and a["runs"]

    # a task whose results are lost: merge lists it with the command that re-runs it alone
    again = tmp_path / "again.sqlite"
    lost = work / "task-1.jsonl"
    kept = lost.read_text()
    lost.unlink()
    p = _cli(env, "archive", "merge", str(work), "--kb", str(again), "--json")
    assert p.returncode == 0, p.stderr
    m = json.loads(p.stdout)
    assert sorted(m["merged"]) == [0, 2] and [x["task"] for x in m["missing"]] == [1]
    assert m["missing"][0]["rerun"] == f"sbatch --array=1 {work / 'archive.sbatch'}"
    assert len(_content(again)["jobs"]) < n + 2
    # re-run task 1 alone in the cluster, then merge: the KB is complete and the same again
    sub = slurm_cluster.run(["sbatch", "--parsable", "--array=1", str(work / "archive.sbatch")], env=env)
    assert sub.returncode == 0, sub.stderr
    info = slurm_cluster.wait(sub.stdout.strip().split(";")[0], timeout=180)
    assert info.get("JobState") == "COMPLETED", info
    assert lost.exists() and sorted(lost.read_text().splitlines()) == sorted(kept.splitlines())
    p = _cli(env, "archive", "merge", str(work), "--kb", str(again), "--json")
    assert p.returncode == 0, p.stderr
    m2 = json.loads(p.stdout)
    assert sorted(m2["merged"]) == [0, 1, 2] and m2["missing"] == []
    # what this merge added is exactly task 1's readable logs
    assert m2["added"]["jobs"] == sum(json.loads(ln)["status"] == "ok" for ln in kept.splitlines()) > 0
    assert _content(again) == a
    # merging everything once more adds nothing
    p = _cli(env, "archive", "merge", str(work), "--kb", str(again), "--json")
    assert json.loads(p.stdout)["added"] == {"logs": 0, "failed": 0, "jobs": 0, "measured": 0, "findings": 0,
                                             "runs": 0}
    assert _content(again) == a


def test_array_mode_refuses_a_used_work_directory(tmp_path):
    work = tmp_path / "w"
    work.mkdir()
    (work / "something").write_text("x")
    arch = tmp_path / "a"
    arch.mkdir()
    from typer.testing import CliRunner

    from ioadvisor.cli import app
    r = CliRunner().invoke(app, ["archive", "scan", str(arch), "--mode", "array", "--work", str(work),
                                 "--kb", str(tmp_path / "kb.sqlite")])
    assert r.exit_code == 2 and "must be new or empty" in r.output
    r = CliRunner().invoke(app, ["archive", "merge", str(arch), "--kb", str(tmp_path / "kb.sqlite")])
    assert r.exit_code == 2 and "not the work directory of an array scan" in r.output


def test_a_folder_named_ioadvisor_in_the_tasks_directory_does_not_shadow_the_package(tmp_path):
    """A task re-run alone (`sbatch --array=K WORK/archive.sbatch`, the command merge prints) runs in the
    directory sbatch was called from, which may hold a folder named `ioadvisor`: a checkout's own package (another
    version than the one installed), or the checkout itself seen from its parent. `python -m
    ioadvisor.archive.array` put the current directory first on sys.path, so the task imported that folder, not
    the installed package. Here the folder is a package that cannot be imported: the script's own command line,
    run there as the task would, still writes the task's results."""
    from ioadvisor.archive.array import PLAN, RESULT, plan_array
    arch = tmp_path / "arch"
    arch.mkdir()
    ex = next(p for p in wheel_logs() if p.name == "example.darshan").read_bytes()
    (arch / "j1.darshan").write_bytes(with_job(ex, jobid=71))
    with KB.open(tmp_path / "kb.sqlite") as kb:
        plan_array([arch], kb, Settings(system="s"), tasks=1, work=tmp_path / "work")
    here = tmp_path / "parent"
    here.mkdir()
    (here / "ioadvisor").mkdir()
    (here / "ioadvisor" / "__init__.py").write_text('raise ImportError("the folder, not the installed package")\n')
    command = (tmp_path / "work" / "archive.sbatch").read_text().splitlines()[-1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    p = subprocess.run(["bash", "-c", command], cwd=here, capture_output=True, text=True, timeout=240,
                       env={**env, "SLURM_ARRAY_TASK_ID": "0", "SLURM_CPUS_PER_TASK": "1"})
    assert p.returncode == 0 and "the folder" not in p.stderr, p.stderr
    assert " -P -m ioadvisor.archive.array " in command
    recs = [json.loads(x) for x in (tmp_path / "work" / RESULT.format(k=0)).read_text().splitlines()]
    assert [(Path(r["path"]).name, r["status"]) for r in recs] == [("j1.darshan", "ok")]
    assert json.loads((tmp_path / "work" / PLAN).read_text())["slices"][0][0][0] == str(arch / "j1.darshan")
