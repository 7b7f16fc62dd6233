"""Slurm job arrays, the one layer `archive scan --mode array` and `bench sweep --mode array` share: render the
array script, submit it with sbatch (transient controller errors retried), wait until its tasks are in.

What each task runs and how its results are taken in stay with the caller: the script's command line and a
`collect` function that takes in the results landed so far.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from typing import Callable, Iterable, Mapping

from ..errors import SlurmError
from .submit import SBATCH_ENV_KEEP, in_queue, sbatch, sbatch_value

__all__ = ["render", "submit", "submit_env", "wait"]

_OPTION = re.compile(r"^#SBATCH\s+--([A-Za-z][\w-]*)")


def render(*, name: str, tasks: int, output: str, command: str, size: Iterable[str] = (),
           options: Mapping[str, object] | None = None, raw: Iterable[str] = (), comment: str = "") -> str:
    """The array script. Pure.

    `size` are the resource lines every task asks for (`--ntasks=1`, ...); `options` long sbatch options and
    their values, a line each for those given (None or "" leaves the option out), quoted as #SBATCH needs;
    `raw` lines written as they are; `command` the shell line each task runs, `$SLURM_ARRAY_TASK_ID` telling
    it which task it is; `output` the path pattern of the tasks' job output (`%A` job, `%a` task)."""
    lines = ["#!/bin/bash", f"#SBATCH --job-name={sbatch_value(name)}", f"#SBATCH --array=0-{tasks - 1}",
             *(f"#SBATCH {s}" for s in size), f"#SBATCH --output={sbatch_value(output)}"]
    lines += [f"#SBATCH {opt}={sbatch_value(str(v))}" for opt, v in (options or {}).items() if v not in (None, "")]
    lines += [f"#SBATCH {r}" for r in raw]
    lines += [""] + ([f"# {comment}"] if comment else []) + ["set -eu", command, ""]
    return "\n".join(lines)


def submit_env(script: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """sbatch's environment for an array script: SBATCH_* variables override #SBATCH lines, so all are dropped
    except the site-wide defaults of submit.SBATCH_ENV_KEEP (a user's SBATCH_ACCOUNT or SBATCH_PARTITION is often
    the only way their jobs are accepted), and of those the ones the script sets itself are dropped too: what the
    sweep file or the command line asked for is what is submitted, the user's defaults fill in what they left
    open. The same rule for every array, whoever renders it."""
    src = os.environ if env is None else env
    set_here = {"SBATCH_" + m.group(1).upper().replace("-", "_")
                for m in (_OPTION.match(ln) for ln in script.splitlines()) if m}
    return {k: v for k, v in src.items()
            if not k.startswith("SBATCH_") or (k in SBATCH_ENV_KEEP and k not in set_here)}


def submit(script: Path, *, cwd: str | Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """Submit the array script at `script` with `sbatch --parsable`; returns the job id. A controller that times
    out or is briefly unreachable is asked again a few times (slurm.submit.sbatch)."""
    env = dict(os.environ if env is None else env)
    if shutil.which("sbatch", path=env.get("PATH")) is None:
        raise SlurmError("sbatch not found on PATH: --mode array needs Slurm")
    text = script.read_bytes().decode("utf-8", "surrogateescape")
    return sbatch(text, name=script.name, env=submit_env(text, env), cwd=cwd, retries=3)


def wait(job_id: str, collect: Callable[[], int], total: int, *, timeout: float, poll: float = 1.0) -> bool:
    """Call `collect` (it takes in the results the tasks have written so far and returns how many tasks are in)
    until all `total` are in or the job has left the queue. A task writes its results just before it leaves the
    queue, so the job counts as gone a few polls after squeue last listed it. Returns False when `timeout`
    seconds passed first."""
    deadline = time.monotonic() + timeout
    gone_since: float | None = None
    while collect() < total:
        now = time.monotonic()
        if in_queue(job_id) is False:
            gone_since = gone_since or now
            if now - gone_since > 3 * poll + 2:
                return True
        if now > deadline:
            return False
        time.sleep(poll)
    return True
