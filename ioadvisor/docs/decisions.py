"""The decision guide: what the advice engine recommends for a few typical workloads on one system."""
from __future__ import annotations

from typing import Any

from ..advise import advise
from ..errors import IOAdvisorError
from ..kb import KB
from ..model.types import Center, Workload
from .collect import fmt_num

GIB = 1 << 30
MIB = 1 << 20

# (catalogue key, workload): typical jobs a user asks about
WORKLOADS: tuple[tuple[str, Workload], ...] = (
    ("wl_checkpoint", Workload(nodes=16, ranks_per_node=8, bytes_per_rank=GIB, api="MPIIO", layout="any",
                               op="write")),
    ("wl_shared_read", Workload(nodes=16, ranks_per_node=8, bytes_per_rank=GIB, api="MPIIO", layout="shared",
                                op="read")),
    ("wl_fpp_posix", Workload(nodes=4, ranks_per_node=8, bytes_per_rank=4 * GIB, api="POSIX", layout="fpp",
                              op="write")),
    ("wl_small_files", Workload(nodes=4, ranks_per_node=8, bytes_per_rank=64 * MIB, api="POSIX", layout="fpp",
                                op="write", access_size=4096, files_per_rank=1000)),
    ("wl_scratch", Workload(nodes=4, ranks_per_node=8, bytes_per_rank=8 * GIB, api="POSIX", layout="fpp",
                            op="write", lifetime="job")),
)


def decision_guide(kb: KB, center: Center | None) -> list[dict[str, Any]]:
    """A row per typical workload the engine answers for the center's system. A workload it refuses (an
    IOAdvisorError: nothing it can answer from) is left out; any other failure is a fault and is raised."""
    if center is None:
        return []
    rows = []
    for key, wl in WORKLOADS:
        try:
            a = advise(wl, kb, center)
        except IOAdvisorError:
            continue
        cfg, pred = a.recommendation.config, a.recommendation.prediction
        note = pred.note or ""
        rows.append({"key": key, "tier": cfg.tier or "-", "filesystem": cfg.filesystem or "-",
                     "layout": cfg.layout or "-", "api": cfg.api or "-",
                     "collective": {True: "yes", False: "no"}.get(cfg.collective, "-"),
                     "stripe_count": cfg.stripe_count or "-",
                     "stripe_size": cfg.stripe_size,
                     "predicted": (f"{fmt_num(pred.value)} {pred.unit}" + (" (capped)" if pred.capped else ""))
                     if pred.value is not None else "-",
                     # a prediction for client counts outside the measured ones is marked on the page
                     "extrapolated": note.startswith("extrapolated"),
                     "n_runs": pred.n_runs or 0,
                     "reasons": list(a.recommendation.reasons)[:2],
                     # what `advise` prints for this workload: the recipes are these commands
                     "workload": wl, "commands": dict(a.recommendation.commands),
                     # every caveat of the advice (extrapolation, caps, unmeasured modes) is on the page too
                     "warnings": list(a.warnings)})
    return rows
