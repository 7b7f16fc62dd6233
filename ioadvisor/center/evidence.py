"""Evidence flags: runs that measured something other than the storage, found at import.

- `cache-sized`: a buffered (not O_DIRECT) data run that moved no more bytes per client node than the node
  has memory; its reads (and writes that were not synced) can have been served from the page cache, so the
  value says more about memory than about the file system. The node's memory comes from the center file
  (`node_memory`) or, for `ioadvise bench` results, from the MemTotal the benchmark recorded.
- `above-peak`: a bandwidth above the rated peak the center file gives for that file system and direction
  (`rated_write_bandwidth`, `rated_read_bandwidth`): a measurement error or a cache, not the storage.
- `one-file`: a metadata run in which every rank worked on one single file (mdtest `-S`): the clients answer
  from their cache of that file's attributes (a million stats a second), not the metadata server. Set by the
  mdtest importer.

Every road into the KB (`kb import`, `bench run/sweep --kb`, `diagnose`, `jobs`, `archive`) flags runs with
`flags_of` against the center given, else the center named like the runs' system; `kb check` judges the runs of
a KB against a center file again at any time (flags added and removed). Flagged runs stay in the KB and in
listings (`kb list`, `kb show` mark them); `RunFilter(flagged=False)` leaves them out of a query (for fits),
and the guide marks them.
"""
from __future__ import annotations

from typing import Iterable

from ..frozen import replace
from ..model.run import READ_OPS, WRITE_OPS, Run, bytes_moved
from ..model.types import Center

CACHE_SIZED = "cache-sized"
ABOVE_PEAK = "above-peak"
ONE_FILE = "one-file"
FLAGS = (CACHE_SIZED, ABOVE_PEAK, ONE_FILE)


def bytes_per_node(run: Run) -> float | None:
    """The bytes a data run moved per client node, from what the run states; None when it does not say."""
    ranks = run.ranks or 1
    total = bytes_moved(run)
    if total is None:
        return None
    nodes = run.nodes or (max(1, ranks // run.ranks_per_node) if run.ranks_per_node else 1)
    return total / nodes


BENCH_TOOL = "ioadvise-bench"


def judges(run: Run, center: Center | None) -> tuple[str, ...]:
    """The flags `center` has the facts to decide for this run, set or cleared: `cache-sized` when it states
    node_memory (except for `ioadvise bench` runs, whose flag the benchmark's own record of the node's memory and
    of its fsync settles at import), `above-peak` when it rates the run's file system in the run's direction.
    Other flags (`one-file`) come from the run's own record and stay as they are."""
    if center is None or run.op not in WRITE_OPS + READ_OPS:
        return ()
    out = []
    if center.node_memory and run.provenance.tool != BENCH_TOOL:
        out.append(CACHE_SIZED)
    fs = center.filesystem(run.filesystem) if run.filesystem else None
    if fs is not None and run.is_bandwidth and _peak(run, fs):
        out.append(ABOVE_PEAK)
    return tuple(out)


def _peak(run: Run, fs) -> float | None:
    return fs.rated_write_bandwidth if run.op in WRITE_OPS else fs.rated_read_bandwidth


def flags_of(run: Run, *, node_memory: int | None = None, center: Center | None = None,
             synced: bool = False) -> tuple[str, ...]:
    """The evidence flags of one run: the flags `center` judges (`judges`) decided afresh, the others kept,
    and `cache-sized` added when `node_memory` (the memory the benchmark recorded on the node, at import) says
    so. `synced`: the writes were flushed to the storage before the close (ioadvise bench), so only reads can
    have come from the page cache. Every road into the KB, and `kb check`, flags runs with this function."""
    judged = judges(run, center)
    out = [f for f in run.flags if f not in judged]
    if run.op not in WRITE_OPS + READ_OPS:
        return tuple(out)
    memory = node_memory or (center.node_memory if CACHE_SIZED in judged else None)
    if memory and not run.direct and not (synced and run.op in WRITE_OPS) and CACHE_SIZED not in out:
        per_node = bytes_per_node(run)
        if per_node is not None and per_node <= memory:
            out.append(CACHE_SIZED)
    if ABOVE_PEAK in judged:
        fs = center.filesystem(run.filesystem)
        if run.value * (1 << 20) > _peak(run, fs):
            out.append(ABOVE_PEAK)
    return tuple(f for f in FLAGS if f in out) + tuple(f for f in out if f not in FLAGS)


def flag_runs(runs: Iterable[Run], *, node_memory: int | None = None, center: Center | None = None,
              synced: bool = False) -> list[Run]:
    """The runs with their evidence flags set (`flags_of`); runs whose flags do not change are returned as
    they are."""
    out = []
    for r in runs:
        f = flags_of(r, node_memory=node_memory, center=center, synced=synced)
        out.append(r if f == r.flags else replace(r, flags=f))
    return out


def useful(center: Center | None) -> bool:
    """Whether the center states a fact a flag is judged by (node memory or a rated peak)."""
    return center is not None and (center.node_memory is not None or any(
        f.rated_write_bandwidth or f.rated_read_bandwidth for f in center.filesystems))


def explain(flag: str) -> str:
    """One sentence for a flag, as the guide and `kb show` print it."""
    return {CACHE_SIZED: "the data fit in the client's memory: the value may measure the page cache",
            ABOVE_PEAK: "faster than the file system's rated peak: not a measurement of the storage",
            ONE_FILE: "every rank worked on one file (mdtest -S): the clients' cache, not the metadata server"}.get(flag, flag)
