"""The decision guide: what the advice engine recommends for a few typical workloads on one system.
Empty when `ioadvisor.advise` is not installed or gives no advice for the system."""
from __future__ import annotations

import importlib.util
from typing import Any

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


def _get(obj: Any, *names: str) -> Any:
    for n in names:
        obj = obj.get(n) if isinstance(obj, dict) else getattr(obj, n, None)
        if obj is None:
            return None
    return obj


def decision_guide(kb: KB, center: Center | None) -> list[dict[str, Any]]:
    if center is None or importlib.util.find_spec("ioadvisor.advise") is None:
        return []
    import ioadvisor.advise as adv
    fn = getattr(adv, "advise", None)
    if not callable(fn):
        return []
    rows = []
    for key, wl in WORKLOADS:
        try:
            a = fn(wl, kb, center)
        except Exception:        # a workload the engine cannot answer for this system: leave the row out
            continue
        cfg = _get(a, "recommendation", "config")
        pred = _get(a, "recommendation", "prediction")
        if cfg is None:
            continue
        note = _get(pred, "note") or ""
        rows.append({"key": key, "tier": _get(cfg, "tier") or "-", "filesystem": _get(cfg, "filesystem") or "-",
                     "layout": _get(cfg, "layout") or "-", "api": _get(cfg, "api") or "-",
                     "collective": {True: "yes", False: "no"}.get(_get(cfg, "collective"), "-"),
                     "stripe_count": _get(cfg, "stripe_count") or "-",
                     "stripe_size": _get(cfg, "stripe_size"),
                     "predicted": (f"{fmt_num(_get(pred, 'value'))} {_get(pred, 'unit')}"
                                   if pred is not None and _get(pred, "value") is not None else "-"),
                     # a prediction for client counts outside the measured ones is marked on the page
                     "extrapolated": note.startswith("extrapolated"),
                     "n_runs": _get(pred, "n_runs") or 0,
                     "reasons": list(_get(a, "recommendation", "reasons") or ())[:2],
                     # what `advise` prints for this workload: the recipes are these commands
                     "workload": wl, "commands": dict(_get(a, "recommendation", "commands") or {}),
                     # every caveat of the advice (extrapolation, caps, unmeasured modes) is on the page too
                     "warnings": list(_get(a, "warnings") or ())})
    return rows
