"""The stripe count the advice decides for a shared file a log shows (LUS001 advises it): the file's workload on
the center, asked of `ioadvise advise` (`advise.advise`, which calls `engine.assess` -> `policy.decide`), so a
diagnosis never advises a count of its own choosing where the center's measured runs decide one."""
from __future__ import annotations

import math
import os
import shlex
from pathlib import Path

from ..darshanlog.summary import FileSummary, LogSummary, job_nodes, to_workload
from ..frozen import replace
from ..model.types import Center, Workload
from .rules import AdvisedStripes


def file_workload(s: LogSummary, f: FileSummary, center: Center, ranks_per_node: int | None) -> Workload:
    """The job's workload (as `diagnose` derives it: the log's node count, else `ranks_per_node`, else the
    center's) with the shared file as its one file: its direction, its bytes over the job's ranks."""
    nodes, _ = job_nodes(s.nodes, s.nprocs, ranks_per_node, center.ranks_per_node)
    w = to_workload(s, math.ceil(max(1, s.nprocs) / nodes) if nodes else None)
    written = max(f.bytes_written, f.mpiio_write.bytes if f.mpiio_write else 0)
    read = max(f.bytes_read, f.mpiio_read.bytes if f.mpiio_read else 0)
    op = "write" if written >= read else "read"
    ranks = max(1, w.nodes * w.ranks_per_node)
    return replace(w, layout="shared", op=op, bytes_per_rank=max(1, (written if op == "write" else read)
                                                                             // ranks),
                               files_per_rank=1, files_created=None)


def _place(f: FileSummary, center: Center) -> str | None:
    """The center's Lustre file system that holds the file: the one whose mount holds the file's path (the
    center's own mounts, templates and tiers: `place_of_path`), else the one mounted where the log says, else the
    only one; None where that cannot be told."""
    from ..center import place_of_path
    lustre = [fs for fs in center.filesystems if fs.type == "lustre"]
    held = place_of_path(center, f.path) if f.path.startswith("/") else None
    if held is not None and any(fs.name == held[0] for fs in lustre):
        return held[0]
    mount = (f.mount or "").rstrip("/")
    same = [fs for fs in lustre if fs.mount and fs.mount.rstrip("/") == mount]
    if len(same) == 1:
        return same[0].name
    return lustre[0].name if len(lustre) == 1 else None


def center_argument(center: Center, spec: str | Path | None) -> str:
    """What to pass as `--center` to name `center` as the user did: a center given as a file (`spec` a path) by
    that file's absolute path (its name alone finds no file), else by its name."""
    from ..center import is_center_file
    if spec is not None and is_center_file(str(spec)):
        return os.path.abspath(spec)
    return center.name


def advise_command(center: str, kb: str | Path | None, w: Workload, place: str) -> str:
    """The `ioadvise advise` command line that asks for `w` on `place` of `center` (a `--center` argument) with
    the KB at `kb` (None: the default one): what the finding quotes, quoted for a POSIX shell."""
    args = ["ioadvise advise", f"--center {shlex.quote(center)}"]
    if kb is not None:
        args.append(f"--kb {shlex.quote(os.path.abspath(kb))}")
    args += [f"--nodes {w.nodes}", f"--ranks-per-node {w.ranks_per_node}",
            f"--bytes-per-rank {w.bytes_per_rank}", f"--api {w.api.lower()}", "--layout shared", f"--op {w.op}"]
    if w.access_size:
        args.append(f"--access-size {w.access_size}")
    if w.access == "random":
        args.append("--random")
    args.append(f"--tier {shlex.quote(place)}")
    return " ".join(args)


def advised_stripes(s: LogSummary, center: Center, kb: str | Path | None, ranks_per_node: int | None,
                    f: FileSummary, *, center_spec: str | Path | None = None) -> AdvisedStripes | str:
    """The advice's stripe count for shared file `f` of the job on `center` (`center_spec`: how the user named
    it, a file or a name), from the KB at `kb` (None: the default KB); a str saying why there is none."""
    from ..advise import advise
    from ..errors import IOAdvisorError
    from ..kb.store import KB
    place = _place(f, center)
    if place is None:
        return (f"{center.name} has no single Lustre file system mounted at {f.mount or 'the file'}'s mount to ask "
                f"`ioadvise advise` about")
    w = file_workload(s, f, center, ranks_per_node)
    try:
        with KB.open(kb, create=False) as store:
            a = advise(w, store, center, pins={"tier": place})
    except IOAdvisorError as e:
        return f"`ioadvise advise` has no answer for the file's workload on {center.name}: {e}"
    count = a.recommendation.config.stripe_count
    if not count:
        return f"`ioadvise advise` sets no stripe count for the file's workload on {center.name}'s {place}"
    return AdvisedStripes(count, advise_command(center_argument(center, center_spec), kb, w, place), a,
                          measured=a.recommendation.prediction.value is not None)
