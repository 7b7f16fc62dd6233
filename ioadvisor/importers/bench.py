"""The harness's own result JSON (`ioadvise bench run|md`, docs/bench.md) into Runs."""
from __future__ import annotations

from typing import Any

from ..errors import ImportFormatError, IOAdvisorError
from ..model.run import Provenance, Run
from ..model.validate import make_run
from . import ImportContext, decode, load_json, register

MARKER = "ioadvisor_bench"
SUPPORTED = (1,)


def sniff(head: bytes) -> bool:
    text = head.lstrip()[:400]
    return text.startswith(b"{") and f'"{MARKER}"'.encode() in text


def _int(v: Any) -> int | None:
    return None if v is None or isinstance(v, bool) else int(v)


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    """One Run per operation of the document; hints are the ones MPI reported back after open."""
    text = decode(data, ctx.source)
    doc = load_json(text, ctx.source, "bench result JSON")
    if not isinstance(doc, dict) or MARKER not in doc:
        raise ImportFormatError(f"not an ioadvise bench result (no {MARKER!r} marker)", ctx.source)
    if doc[MARKER] not in SUPPORTED:
        raise ImportFormatError(f"bench result format {doc[MARKER]!r} is newer than this ioadvisor "
                                f"(supported: {', '.join(map(str, SUPPORTED))})", ctx.source)
    try:
        return _runs(doc, ctx)
    except (KeyError, TypeError, ValueError) as e:
        raise ImportFormatError(f"incomplete bench result: {type(e).__name__} {e}", ctx.source) from None
    except IOAdvisorError as e:
        raise ImportFormatError(str(e), ctx.source) from None


def _runs(doc: dict[str, Any], ctx: ImportContext) -> list[Run]:
    kind = doc["kind"]
    eff, params = doc["effective"], doc["params"]
    job = eff.get("slurm_job_id")
    if eff.get("slurm_array_job_id") and eff.get("slurm_array_task_id") is not None:
        job = f"{eff['slurm_array_job_id']}_{eff['slurm_array_task_id']}"   # Slurm's own name for an array task
    prov = Provenance(source=ctx.source, command=doc.get("command"), tool=doc.get("tool", "ioadvise-bench"),
                      tool_version=doc.get("tool_version"), date=(doc.get("finished") or "")[:10] or None,
                      job_id=job, kind=ctx.kind or "benchmark")
    common: dict[str, Any] = {
        "system": ctx.system or doc["system"], "filesystem": ctx.filesystem or doc.get("filesystem") or eff.get("mount_point"),
        "tier": doc.get("tier"),
        "fs_type": eff.get("fs_type"), "nodes": _int(eff.get("nodes")), "ranks": _int(eff.get("ranks")),
        "ranks_per_node": _int(eff.get("ranks_per_node")), "provenance": prov,
    }
    notes = "; ".join(doc.get("warnings") or []) or None
    runs = []
    for res in doc["results"]:
        spread = {"value_min": res.get("min"), "value_max": res.get("max"), "value_sd": res.get("sd"),
                  "ci95_low": res.get("ci95_low"), "ci95_high": res.get("ci95_high")}
        if kind == "data":
            settings = dict(
                api=eff["api"], layout=eff["layout"], collective=bool(eff["collective"]) if eff["api"] != "posix"
                else None, hints=dict(eff.get("hints") or {}), transfer_size=_int(params["transfer_size"]),
                block_size=_int(params["block_size"]), segments=_int(params["segments"]),
                total_bytes=_int(res.get("bytes")), access=eff.get("access"), direct=bool(eff.get("direct")),
                # the striping the directory gave the files (recorded on Lustre only)
                stripe_count=_int(eff.get("stripe_count")), stripe_size=_int(eff.get("stripe_size")))
        elif kind == "md":
            settings = dict(api="POSIX", layout="fpp" if eff.get("unique_dir") else "shared",
                            files_per_dir=_int(eff.get("files_per_dir")),
                            items_per_rank=_int(eff.get("items_per_rank")), file_size=_int(eff.get("file_size")))
        else:
            raise ValueError(f"unknown kind {kind!r}")
        runs.append(make_run(value=res["mean"], unit=res["unit"], spread=spread, op=res["op"],
                             reps=_int(res.get("n")), notes=notes, **common, **settings))
    # the benchmark syncs before it closes a written file (unless fsync = false), so then only reads can have
    # come from the page cache; the node's memory is the MemTotal it recorded
    from ..center.evidence import flag_runs
    return flag_runs(runs, node_memory=_int(eff.get("mem_total")), synced=eff.get("fsync", True) is not False)


register("bench", sniff, parse)
