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

Flagged runs stay in the KB and in listings; `RunFilter(flagged=False)` leaves them out of a query (for
fits), and the guide marks them.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

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


def flags_of(run: Run, *, node_memory: int | None = None, center: Center | None = None) -> tuple[str, ...]:
    """The evidence flags of one run (its existing flags kept)."""
    out = list(run.flags)
    if run.op not in WRITE_OPS + READ_OPS:
        return tuple(out)
    memory = node_memory or (center.node_memory if center is not None else None)
    if memory and not run.direct and CACHE_SIZED not in out:
        per_node = bytes_per_node(run)
        if per_node is not None and per_node <= memory:
            out.append(CACHE_SIZED)
    fs = center.filesystem(run.filesystem) if center is not None and run.filesystem else None
    if fs is not None and run.is_bandwidth and ABOVE_PEAK not in out:
        peak = fs.rated_write_bandwidth if run.op in WRITE_OPS else fs.rated_read_bandwidth
        if peak and run.value * (1 << 20) > peak:
            out.append(ABOVE_PEAK)
    return tuple(out)


def flag_runs(runs: Iterable[Run], *, node_memory: int | None = None, center: Center | None = None) -> list[Run]:
    """The runs with their evidence flags set; runs that gain no flag are returned as they are."""
    out = []
    for r in runs:
        f = flags_of(r, node_memory=node_memory, center=center)
        out.append(r if f == r.flags else replace(r, flags=f))
    return out


def explain(flag: str) -> str:
    """One sentence for a flag, as the guide and `kb show` print it."""
    return {CACHE_SIZED: "the data fit in the client's memory: the value may measure the page cache",
            ABOVE_PEAK: "faster than the file system's rated peak: not a measurement of the storage",
            ONE_FILE: "every rank worked on one file (mdtest -S): the clients' cache, not the metadata server"}.get(flag, flag)
