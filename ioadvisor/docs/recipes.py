"""Copy-paste recipes for one system: `lfs setstripe`, a ROMIO hints file and job-script lines, filled in from
the center description and the published comparisons (each recipe says what it rests on)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import UsageError
from ..model.units import parse_size
from ..mpiio import Plan, render


@dataclass(frozen=True)
class Recipe:
    key: str             # catalogue key of its title
    fs: str
    text: str
    basis: tuple[str, ...]   # citations (source: citation) it rests on; empty = general Lustre practice


def _size(v: Any) -> int | None:
    if v is None:
        return None
    try:
        return int(v) if isinstance(v, int) else parse_size(str(v))
    except Exception:
        return None


def _cite(c: dict[str, Any]) -> str:
    return f"{c.get('source')}: {c.get('citation')}"


# a basis entry that names a decision-guide row instead of a citation: "advice:<workload catalogue key>"
ADVICE = "advice:"
# decision-guide workloads whose advice a shared-file recipe follows, in order of preference
SHARED_WORKLOADS = ("wl_checkpoint", "wl_shared_read")


def _advised(guide: list[dict[str, Any]], fs: str) -> dict[str, Any] | None:
    """The decision-guide row for one shared file on `fs` with a stripe count, if the guide has one."""
    for key in SHARED_WORKLOADS:
        for g in guide:
            if g["key"] == key and g["filesystem"] == fs and g["layout"] == "shared" \
                    and isinstance(g.get("stripe_count"), int):
                return g
    return None


def recipes(center: dict[str, Any] | None, comparisons: list[dict[str, Any]],
            guide: list[dict[str, Any]] | None = None) -> list[Recipe]:
    """The recipes of one system. Where the decision guide advises a shared file on a file system, its shared-
    file recipe and ROMIO hints use the guide's stripe count and size, so the page never says two things."""
    out: list[Recipe] = []
    if not center:
        return out
    for fs in center["filesystems"]:
        if fs.get("type") != "lustre" or fs.get("striping") == "none":
            continue
        name = fs["name"]
        mount = (fs.get("mount") or f"/{name}/$USER").rstrip("/")
        comps = [c for c in comparisons if (c.get("filesystem") or "") == name]
        osts = fs.get("ost_count")
        # stripe count for one shared file: the count a comparison found better, else all OSTs
        counts = [(int(c["better"]), c) for c in comps if c.get("factor") == "stripe_count"
                  and c.get("op") in ("write", "read") and str(c.get("better")).lstrip("-").isdigit()]
        advised = _advised(guide or [], name)
        if advised is not None:
            n = advised["stripe_count"]
            shared_count, shared_basis = str(n), (ADVICE + advised["key"],)   # the guide's number, as it says it
        elif counts:
            n, c = max(counts, key=lambda t: t[0])
            shared_count, shared_basis = ("-1" if osts and n >= osts else str(n)), (_cite(c),)
        else:
            shared_count, shared_basis = "-1", ()
        sizes = [(_size(c["better"]), c) for c in comps if c.get("factor") == "stripe_size"]
        size = next((s for s, _ in sizes if s), None) or _size(fs.get("default_stripe_size")) or (1 << 20)
        size_basis = tuple(_cite(c) for s, c in sizes if s)
        if advised is not None and _size(advised.get("stripe_size")):
            size, size_basis = _size(advised["stripe_size"]), ()
        obj = center.get("object")
        mpi = str(center.get("mpi") or "mpich")
        version = getattr(obj, "mpi_version", None) if obj is not None and getattr(obj, "mpi", None) == mpi else None
        plan = Plan(stripe_size=size, fs_type="lustre", base=mount, mpi=mpi, mpi_version=version)
        try:
            shared = render(replace(plan, stripe_count=int(shared_count)))
            small = render(replace(plan, stripe_count=1, stripe_size=None))
        except (UsageError, ValueError):
            continue          # a size Lustre would reject, or a mount the renderer cannot write safely
        out.append(Recipe("recipe_shared", name, shared.text() + 'lfs getstripe "$IOADVISE_DIR"',
                          shared_basis + size_basis))
        small_basis = tuple(_cite(c) for c in comps if c.get("factor") == "stripe_count"
                            and str(c.get("better")) == "1")
        out.append(Recipe("recipe_small", name, small.text().rstrip("\n"), small_basis))
        hints = {"striping_factor": str(osts if shared_count == "-1" and osts else shared_count),
                 "striping_unit": str(size)}
        basis = list(shared_basis)
        for factor, hint in (("cb_write", "romio_cb_write"), ("cb_read", "romio_cb_read")):
            for c in comps:
                if c.get("factor") == factor and c.get("better") in ("enable", "disable"):
                    hints[hint] = c["better"]
                    basis.append(_cite(c))
                    break
        romio = render(replace(plan, api="MPIIO", stripe_size=None, hints=hints))
        out.append(Recipe("recipe_romio", name, romio.text().rstrip("\n"), tuple(basis)))
    lines = [f"#SBATCH {t['request']}" for t in center["tiers"] if t.get("request")]
    # `#IOADVISE key=value` lines describe the job's I/O for `ioadvise wrap`, which fills in the rest
    io = ["#IOADVISE bytes_per_rank=1GiB api=MPIIO layout=any lifetime=after-job"]
    out.append(Recipe("recipe_job", "", "#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --ntasks-per-node=8\n"
                      + "".join(ln + "\n" for ln in lines) + "\n".join(io), ()))
    return out
