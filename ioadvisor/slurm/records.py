"""Finding the JSON records wrapped jobs write (`ioadvise-<jobid>.json`), by directory or by Slurm job id."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Mapping

from ..errors import SlurmError, UsageError
from ..frozen import frozen

_JOB_ID = re.compile(r"^\d+(?:_\d+)?$")
# the start of one job in `scontrol show job -o` output: its ids (digits only), then its name; the name and every
# later value are the user's and may hold a line break
_JOB_START = re.compile(r"^JobId=(\d+) ((?:(?:ArrayJobId|ArrayTaskId|HetJobId|HetJobOffset)=\S+ )*)JobName=")
_FIELD_START = re.compile(r" +(?=[A-Za-z][A-Za-z0-9_:/]*=)")
# the wrapped block's record directory lines (ioadvisor/slurm/rewrite.py)
_BLOCK_DIR = re.compile(r"^\s*(_ioadv_out|_ioadv_rec_dir)=(.*)$")


@frozen
class Found:
    """A record file to collect and, when it was found through Slurm, the job it must belong to."""

    path: Path
    job_id: str | None = None           # the job Slurm reported it for
    user: str | None = None             # that job's user, as Slurm reports it
    cluster: str | None = None          # the cluster Slurm runs (ClusterName)


@frozen
class JobFacts:
    job_id: str
    user: str | None
    dirs: list[Path]


def record_name(job_id: str) -> str:
    return f"ioadvise-{job_id}.json"


def records_in(directory: Path) -> list[Path]:
    """The job records directly in `directory`, in name order (half-written `.tmp` files are not records)."""
    return sorted(p for p in directory.glob("ioadvise-*.json") if p.is_file())


def is_job_id(text: str) -> bool:
    return bool(_JOB_ID.match(text))


def _block_dir(script: str, workdir: Path) -> Path | None:
    """The directory a wrapped batch script writes its record to, read from its block's `_ioadv_out=` and
    `_ioadv_rec_dir=` lines (values written with shlex.quote; relative ones are below the start directory)."""
    values: dict[str, str] = {}
    for line in script.splitlines():
        m = _BLOCK_DIR.match(line)
        if m and m.group(1) not in values:
            try:
                (values[m.group(1)],) = shlex.split(m.group(2))
            except ValueError:
                return None
    d = values.get("_ioadv_rec_dir")
    if d == "$_ioadv_out":
        d = values.get("_ioadv_out")
    if d is None or d == "$PWD":
        return None
    return workdir / d


def _script_dir(exe: str, job_id: str, workdir: Path, env: Mapping[str, str] | None) -> list[Path]:
    """[the record directory the job's wrapped script names], or [] when Slurm cannot show the script."""
    p = subprocess.run([exe, "write", "batch_script", job_id, "-"], env=dict(env) if env else None,
                       capture_output=True, text=True, errors="replace", timeout=60)
    d = _block_dir(p.stdout, workdir) if p.returncode == 0 else None
    return [d] if d is not None else []


def _fields(line: str) -> dict[str, str]:
    """`scontrol show job -o`'s KEY=VALUE fields; a value runs to the next blank that starts a KEY=, so a path
    with blanks (WorkDir=/home/me/my run) stays whole. A key met twice keeps its last value: a job name can
    hold `UserId=...`, but Slurm's own field comes after the name."""
    return dict(f.split("=", 1) for f in _FIELD_START.split(line.strip()) if "=" in f)


def job_entries(text: str, job_id: str) -> list[str]:
    """`scontrol show job -o JOB_ID`'s output split into its jobs (an array job has one per task). A line starts a
    job only where it starts like one, is the job asked for or one of its tasks, and names a job not met yet:
    any other line is the rest of a value that held a line break (a job name `a\nJobId=999 ...`)."""
    base = job_id.split("_")[0]
    out: list[str] = []
    seen: set[str] = set()
    for line in text.split("\n"):
        m = _JOB_START.match(line)
        ids = dict(f.split("=", 1) for f in m.group(2).split()) if m else {}
        if m and m.group(1) not in seen and base in (m.group(1), ids.get("ArrayJobId"), ids.get("HetJobId")):
            seen.add(m.group(1))
            out.append(line)
        elif out:
            out[-1] += "\n" + line
    return out


def _user(value: str) -> str | None:
    """The name in scontrol's `UserId=name(uid)`."""
    m = re.fullmatch(r"(.*)\((\d+)\)", value)
    return (m.group(1) or m.group(2)) if m else None


def job_facts(job_id: str, env: Mapping[str, str] | None = None) -> list[JobFacts]:
    """The jobs `job_id` names (an array job gives one per task), from `scontrol show job -o`: each with its user
    and the directories its record may be in: the record directory its wrapped script names (its outdir), the
    directory of its standard output, then its working directory."""
    exe = _scontrol(env)
    p = subprocess.run([exe, "show", "job", "-o", job_id], env=dict(env) if env else None, capture_output=True,
                       text=True, errors="replace", timeout=60)
    if p.returncode != 0:
        raise UsageError(f"job {job_id}: {p.stderr.strip() or 'unknown to Slurm'} (a job leaves slurmctld's memory "
                         f"some minutes after it ends: pass the directory that holds {record_name(job_id)} instead)")
    out: list[JobFacts] = []
    for entry in job_entries(p.stdout, job_id):
        fields = _fields(entry)
        jid = fields["JobId"]
        dirs = []
        std = fields.get("StdOut", "")
        if std.startswith("/") and "%" not in std and "\n" not in std:
            dirs.append(Path(std).parent)
        workdir = fields.get("WorkDir", "")
        if workdir.startswith("/") and "\n" not in workdir:
            dirs = _script_dir(exe, jid, Path(workdir), env) + dirs + [Path(workdir)]
        out.append(JobFacts(jid, _user(fields.get("UserId", "")), list(dict.fromkeys(dirs))))
    return out


def job_dirs(job_id: str, env: Mapping[str, str] | None = None) -> dict[str, list[Path]]:
    """{job id: directories its record may be in} (`job_facts`)."""
    return {f.job_id: f.dirs for f in job_facts(job_id, env)}


def _scontrol(env: Mapping[str, str] | None) -> str:
    exe = shutil.which("scontrol", path=(env or os.environ).get("PATH"))
    if exe is None:
        raise SlurmError("scontrol not found on PATH: pass the directory that holds the job's record instead")
    return exe


def cluster_name(env: Mapping[str, str] | None = None) -> str | None:
    """The ClusterName of the Slurm that `scontrol` talks to, or None when it does not say."""
    p = subprocess.run([_scontrol(env), "show", "config"], env=dict(env) if env else None, capture_output=True,
                       text=True, errors="replace", timeout=60)
    m = re.search(r"^ClusterName\s*=\s*(\S+)\s*$", p.stdout, re.M) if p.returncode == 0 else None
    return m.group(1) if m else None


def find_records(targets: list[str], env: Mapping[str, str] | None = None) -> list[Found]:
    """Record files for targets that are record files, directories of records or Slurm job ids (each then tied to
    the job, its user and the cluster that Slurm reports)."""
    found: list[Found] = []
    cluster: list[str | None] = []
    for t in targets:
        p = Path(t)
        if p.is_dir():
            recs = records_in(p)
            if not recs:
                raise UsageError(f"{p}: no job records (ioadvise-JOBID.json) in this directory")
            found += [Found(r) for r in recs]
        elif p.is_file():
            found.append(Found(p))
        elif p.exists():
            from ..inputs import RECORD, check_input
            check_input(p, RECORD)              # says what it is instead (a named pipe, a device)
        elif is_job_id(t):
            for job in job_facts(t, env):
                hit = next((d / record_name(job.job_id) for d in job.dirs if (d / record_name(job.job_id)).is_file()),
                           None)
                if hit is None:
                    where = ", ".join(str(d) for d in job.dirs) or "no directory Slurm reports"
                    raise UsageError(f"job {job.job_id}: no {record_name(job.job_id)} in {where} (was the job "
                                     f"wrapped, and did it write its record elsewhere? pass that directory)")
                cluster = cluster or [cluster_name(env)]
                found.append(Found(hit, job.job_id, job.user, cluster[0]))
        else:
            raise UsageError(f"{t}: no such file or directory, and not a Slurm job id")
    seen: set[Path] = set()
    return [f for f in found if not (f.path in seen or seen.add(f.path))]


def tie_problem(found: Found, job_id: str, user: str | None, cluster: str | None) -> str | None:
    """Why a record (claiming `job_id`, `user`, `cluster`) cannot be the one of the job it was found for, or None.
    Found through Slurm: the job id, user and cluster must be the job's. Found as a file: its name's job id and
    its owner must be the record's. A record that names no user (an older `ioadvise wrap`'s) stands for its
    file's owner."""
    # a record written by an older `ioadvise wrap` names no user: the file's owner stands for it
    user = user or _owner(found.path)
    if found.job_id is not None:
        if job_id != found.job_id:
            return f"the record claims job {job_id}, but it was found for job {found.job_id}"
        if user != found.user:
            return f"the record names user {user}, but job {found.job_id} is {found.user}'s"
        if found.cluster and cluster != found.cluster:
            return f"the record names cluster {cluster or 'none'}, but Slurm here runs {found.cluster}"
        return None
    m = re.fullmatch(r"ioadvise-(.*)\.json", found.path.name)
    if m and m.group(1) != job_id:
        return f"the record claims job {job_id}, but its file is named for job {m.group(1)}"
    owner = _owner(found.path)
    if user != owner:
        return f"the record names user {user}, but the file belongs to {owner}"
    return None


def _owner(path: Path) -> str:
    import pwd
    uid = path.stat().st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
