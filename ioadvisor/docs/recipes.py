"""Copy-paste recipes for one system, generated from the decision guide's advice: for each typical workload
whose advice has something to set, the commands `ioadvise advise` prints for that workload (`lfs setstripe`,
the ROMIO hints file with each hint explained, HDF5 calls, staging), and job-script lines for the checkpoint
workload that `ioadvise wrap` turns into the same settings. A recipe never says anything the advice does not."""
from __future__ import annotations

from typing import Any

from ..frozen import frozen
from ..model.types import Center, Workload

# a basis entry that names a decision-guide row: "advice:<workload catalogue key>"
ADVICE = "advice:"
JOB_WORKLOAD = "wl_checkpoint"


@frozen
class Recipe:
    key: str             # catalogue key of its title
    fs: str              # where the advice puts the data (file system, or tier)
    text: str
    basis: tuple[str, ...]   # what it rests on: "advice:<workload key>"
    workload: str = ""   # catalogue key of the decision-guide workload it comes from
    hints: tuple[tuple[str, str], ...] = ()   # the MPI-IO hints it sets (explained in the page's language)


def size_word(n: int) -> str:
    """Bytes as an #IOADVISE size (`1GiB`, `64MiB`, `4096`)."""
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def ioadvise_line(w: Workload) -> str:
    """The `#IOADVISE` line describing a workload as `ioadvise wrap` reads it."""
    items = [f"bytes_per_rank={size_word(w.bytes_per_rank)}", f"api={w.api}", f"layout={w.layout}", f"op={w.op}"]
    if w.access != "sequential":
        items.append(f"pattern={w.access}")
    if w.access_size:
        items.append(f"access_size={size_word(w.access_size)}")
    if w.files_per_rank != 1:
        items.append(f"files={w.files_per_rank}")
    return "#IOADVISE " + " ".join(items + [f"lifetime={w.lifetime}"])


def recipes(center: Center | None, guide: list[dict[str, Any]] | None = None) -> list[Recipe]:
    """The recipes of one system: one per decision-guide row whose advice has commands (the advice's own
    `commands.text`, as `advise --json` gives it for that workload), then the job-script lines."""
    out: list[Recipe] = []
    if not center:
        return out
    rows = [g for g in guide or () if g.get("commands")]
    for g in rows:
        text = (g["commands"].get("text") or "").rstrip("\n")
        if text:
            where = g["tier"] if g["tier"] != "-" else g["filesystem"]
            hints = tuple(g["commands"].get("hints_applied", {}).items())
            out.append(Recipe("recipe_advice", where, text, (ADVICE + g["key"],), g["key"], hints))
    job = next((g for g in rows if g["key"] == JOB_WORKLOAD), None)
    if job is not None:
        w: Workload = job["workload"]
        request = job["commands"].get("request")
        lines = ["#!/bin/bash", f"#SBATCH --nodes={w.nodes}", f"#SBATCH --ntasks-per-node={w.ranks_per_node}",
                 *([request] if request else []), ioadvise_line(w), "srun ./app",
                 f"# ioadvise wrap job.sh -o job.wrapped.sh --center {center.name}: applies this advice"]
        where = job["tier"] if job["tier"] != "-" else job["filesystem"]
        out.append(Recipe("recipe_job", where, "\n".join(lines), (ADVICE + job["key"],), job["key"]))
    return out
