"""`ioadvise center check`: load a center file the way every command will, then report what it lacks.

Errors (a wrong type or unit, a stripe size Lustre refuses, a tier on a file system that does not exist, an
MPI flavour ioadvisor cannot render, a tier request or mount the wrap block and the hooks cannot use) stop
the load with one line naming the file, the line and the key. Warnings are facts the file leaves out that
some command will miss; the file still works.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..lustre import constraint_of
from ..model.types import Center
from . import load_center_file
from .schema import FS_TYPES

# the shipped cli_filter.lua marks only this feature as a per-job tier request
HOOK_FEATURE = "BEEOND"


def warnings_for(c: Center) -> list[str]:
    """What the center file leaves out, each as one sentence naming the key."""
    out: list[str] = []
    for i, fs in enumerate(c.filesystems):
        at = f"filesystems[{i}] ({fs.name})"
        if fs.type not in FS_TYPES:
            out.append(f"{at}.type {fs.type!r} is not one ioadvisor models ({', '.join(FS_TYPES)}); it is "
                       f"advised like a file system without striping")
        if fs.type in ("lustre", "beegfs") and fs.ost_count is None:
            out.append(f"{at}.ost_count is not set: stripe counts are advised from the runs alone")
        if fs.mount is None:
            out.append(f"{at}.mount is not set: `bench` cannot file runs under this file system by path "
                       f"(give --filesystem {fs.name})")
        if fs.rated_write_bandwidth is None and fs.rated_read_bandwidth is None:
            out.append(f"{at}: no rated_write_bandwidth or rated_read_bandwidth: runs above the rated peak "
                       f"cannot be flagged")
    mounts = [fs.mount for fs in c.filesystems if fs.mount]
    for m in sorted({m for m in mounts if mounts.count(m) > 1}):
        out.append(f"mount {m!r} is given for more than one file system: runs made there go to the first")
    if c.node_memory is None:
        out.append("node_memory is not set: runs small enough to be served from the page cache cannot be flagged")
    for i, t in enumerate(c.tiers):
        features = constraint_of(t.request)
        if features is not None and HOOK_FEATURE not in re.split(r"[&|,]", features):
            out.append(f"tiers[{i}] ({t.name}).request {t.request!r}: the shipped cli_filter.lua marks only "
                       f"--constraint={HOOK_FEATURE} jobs; `ioadvise wrap` and job_submit.lua work with any feature")
        if t.request is None and t.kind == "per-job":
            out.append(f"tiers[{i}] ({t.name}).request is not set: wrapped jobs cannot ask Slurm for this tier")
        if t.mount is None:
            out.append(f"tiers[{i}] ({t.name}).mount is not set: wrapped jobs cannot stage data to this tier")
    return out


def check_center(path: str | Path) -> dict[str, Any]:
    """The check report of one center file (ConfigError/UsageError when it does not load)."""
    c = load_center_file(path)
    return {
        "file": str(path), "ok": True, "name": c.name, "mpi": c.mpi, "mpi_version": c.mpi_version,
        "node_memory": c.node_memory, "ranks_per_node": c.ranks_per_node,
        "filesystems": [{"name": f.name, "type": f.type, "mount": f.mount, "ost_count": f.ost_count,
                         "stripable": f.stripable, "persistent": f.persistent,
                         "rated_write_bandwidth": f.rated_write_bandwidth,
                         "rated_read_bandwidth": f.rated_read_bandwidth} for f in c.filesystems],
        "tiers": [{"name": t.name, "filesystem": t.filesystem, "kind": t.kind, "request": t.request,
                   "mount": t.mount} for t in c.tiers],
        "warnings": warnings_for(c),
    }
