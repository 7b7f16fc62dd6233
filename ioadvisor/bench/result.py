"""The result file: one JSON document per run, written atomically, marked with `"ioadvisor_bench": 1`."""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shlex
import socket
import sys
from pathlib import Path
from typing import Any

from ..util import atomic_write
from . import FORMAT_MARKER, FORMAT_VERSION


def default_system() -> str:
    """The system name a result is filed under: $SLURM_CLUSTER_NAME, else the short host name."""
    return os.environ.get("SLURM_CLUSTER_NAME") or socket.gethostname().split(".")[0] or "localhost"


def document(result: dict[str, Any], *, system: str | None = None, command: list[str] | str | None = None,
             tool_version: str | None = None) -> dict[str, Any]:
    """The complete result document: the format marker first, then what was asked and what was in effect."""
    if command is None:
        from .params import DataParams, MdParams, data_command, md_command
        ranks = int(result.get("effective", {}).get("ranks") or 1)
        fields = result.get("params", {})
        command = (data_command(DataParams(**{**fields, "ops": tuple(fields.get("ops", ("write", "read")))}), ranks)
                   if result.get("kind") == "data" else md_command(MdParams(**fields), ranks))
    elif not isinstance(command, str):
        command = shlex.join(str(c) for c in command)
    if tool_version is None:
        from importlib.metadata import PackageNotFoundError, version
        try:
            tool_version = version("ioadvisor")
        except PackageNotFoundError:
            tool_version = None
    params = result.get("params", {})
    name, fs, tier, warning = naming(params, result.get("effective", {}), system or params.get("system"))
    if warning:
        result = {**result, "warnings": list(result.get("warnings") or []) + [warning]}
    return {FORMAT_MARKER: FORMAT_VERSION, "tool": "ioadvise-bench", "tool_version": tool_version,
            "system": name, "filesystem": fs, "tier": tier,
            "command": command, "argv": shlex.join(sys.argv),
            "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **result}


def naming(params: dict[str, Any], effective: dict[str, Any],
           system: str | None) -> tuple[str, str | None, str | None, str | None]:
    """(system, file system, tier, warning) the runs are filed under.

    The system: `system`, else the center's name, else $SLURM_CLUSTER_NAME, else the host name. The file
    system: `filesystem`, else the center file system (or tier) whose mount holds the test directory; the
    center is `center` or, without one, the shipped center named like the system. Without either the runs
    keep the mount point as their file system and the warning says how to name it."""
    from ..center import center_for, default_system_name, place_of_path
    center = center_for(params.get("center"), system or os.environ.get("SLURM_CLUSTER_NAME"))
    name = default_system_name(center, system) or default_system()
    fs, tier = params.get("filesystem"), None
    if center is not None and params.get("dir"):
        d = os.path.abspath(str(params["dir"]))
        place = place_of_path(center, d) or place_of_path(center, os.path.realpath(d))
        if place is not None:
            tier = place[1]
            fs = fs or place[0]
    warning = None
    if fs is None:
        where = effective.get("mount_point") or params.get("dir")
        hint = (f"center {center.name} has no mount holding {params.get('dir')}" if center is not None
                else "no center file")
        warning = (f"no file system name ({hint}): the runs are filed under the mount point {where!r}; "
                   f"give --filesystem NAME or --center FILE")
    return name, fs, tier, warning


def result_name(doc: dict[str, Any]) -> str:
    """A file name that says what ran: kind, api, layout, when, and the Slurm job/task where there is one."""
    eff = doc.get("effective", {})
    stamp = re.sub(r"[^0-9T]", "", doc.get("finished", ""))[:15]
    parts = ["bench", doc.get("kind", "data")]
    if doc.get("kind") == "data":
        parts += [str(eff.get("api")), str(eff.get("layout")), "coll" if eff.get("collective") else "indep"]
    parts.append(stamp)
    if eff.get("slurm_array_job_id"):
        parts.append(f"j{eff['slurm_array_job_id']}_{eff.get('slurm_array_task_id')}")
    elif eff.get("slurm_job_id"):
        parts.append(f"j{eff['slurm_job_id']}")
    parts.append(f"p{os.getpid()}")
    return "-".join(parts) + ".json"


def write(doc: dict[str, Any], directory: str | Path | None = None, path: str | Path | None = None) -> Path:
    """Write the document atomically, to `path` or to a new file in `directory`; returns the path."""
    target = Path(path) if path is not None else Path(directory or ".") / result_name(doc)
    atomic_write(target, json.dumps(doc, indent=2) + "\n")
    return target
