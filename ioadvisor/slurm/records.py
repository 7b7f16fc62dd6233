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

_JOB_ID = re.compile(r"^\d+(?:_\d+)?$")
_FIELD_START = re.compile(r" +(?=[A-Za-z][A-Za-z0-9_:/]*=)")
# the wrapped block's record directory lines (ioadvisor/slurm/rewrite.py)
_BLOCK_DIR = re.compile(r"^\s*(_ioadv_out|_ioadv_rec_dir)=(.*)$")


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
    with blanks (WorkDir=/home/me/my run) stays whole."""
    return dict(f.split("=", 1) for f in _FIELD_START.split(line.strip()) if "=" in f)


def job_dirs(job_id: str, env: Mapping[str, str] | None = None) -> dict[str, list[Path]]:
    """{job id: directories its record may be in} from `scontrol show job -o` (an array job gives one entry per
    task): the record directory its wrapped script names (its outdir), the directory of its standard output,
    then its working directory."""
    exe = shutil.which("scontrol", path=(env or os.environ).get("PATH"))
    if exe is None:
        raise SlurmError("scontrol not found on PATH: pass the directory that holds the job's record instead")
    p = subprocess.run([exe, "show", "job", "-o", job_id], env=dict(env) if env else None, capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        raise UsageError(f"job {job_id}: {p.stderr.strip() or 'unknown to Slurm'} (a job leaves slurmctld's memory "
                         f"some minutes after it ends: pass the directory that holds {record_name(job_id)} instead)")
    out: dict[str, list[Path]] = {}
    for line in p.stdout.splitlines():
        fields = _fields(line)
        jid = fields.get("JobId")
        if not jid:
            continue
        dirs = []
        std = fields.get("StdOut", "")
        if std.startswith("/") and "%" not in std:
            dirs.append(Path(std).parent)
        if fields.get("WorkDir", "").startswith("/"):
            dirs = _script_dir(exe, jid, Path(fields["WorkDir"]), env) + dirs + [Path(fields["WorkDir"])]
        out[jid] = list(dict.fromkeys(dirs))
    return out


def find_records(targets: list[str], env: Mapping[str, str] | None = None) -> list[Path]:
    """Record files for targets that are record files, directories of records or Slurm job ids."""
    found: list[Path] = []
    for t in targets:
        p = Path(t)
        if p.is_dir():
            recs = records_in(p)
            if not recs:
                raise UsageError(f"{p}: no job records (ioadvise-JOBID.json) in this directory")
            found += recs
        elif p.is_file():
            found.append(p)
        elif p.exists():
            from ..inputs import RECORD, check_input
            check_input(p, RECORD)              # says what it is instead (a named pipe, a device)
        elif is_job_id(t):
            for jid, dirs in job_dirs(t, env).items():
                hit = next((d / record_name(jid) for d in dirs if (d / record_name(jid)).is_file()), None)
                if hit is None:
                    where = ", ".join(str(d) for d in dirs) or "no directory Slurm reports"
                    raise UsageError(f"job {jid}: no {record_name(jid)} in {where} (was the job wrapped, and did "
                                     f"it write its record elsewhere? pass that directory)")
                found.append(hit)
        else:
            raise UsageError(f"{t}: no such file or directory, and not a Slurm job id")
    return list(dict.fromkeys(found))
