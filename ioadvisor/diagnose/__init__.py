"""Diagnose a job from its Darshan log: derive what it did, check it against rules, say what to change."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..model.types import to_plain

SCHEMA = "ioadvisor.diagnose/1"


def diagnose(log: str | Path, *, kb: str | Path | None = None, center: str | None = None,
             thresholds: str | Path | None = None, ranks_per_node: int | None = None,
             use_kb: bool = True) -> dict[str, Any]:
    """Diagnose one Darshan log; returns the JSON document described in docs/diagnose.md.

    `center` (a TOML file or a shipped center name) gives the file system's OST count and lets striping findings
    carry an `Advice` for the derived workload. Raises ImportFormatError / UsageError / ConfigError (exit 2).
    """
    from .derive import summarize, to_workload
    from .rules import Context, load_thresholds, run_rules

    t = load_thresholds(thresholds)          # bad thresholds fail before the log is read
    c_obj = None
    ost_count = None
    if center:
        from ..center import load_center
        c_obj = load_center(center)
        counts = [fs.ost_count for fs in c_obj.filesystems if fs.type == "lustre" and fs.ost_count]
        ost_count = max(counts) if counts else None
    s = summarize(log)
    ctx = Context(kb_path=str(kb) if kb else None, use_kb=use_kb, center_ost_count=ost_count,
                  center_name=c_obj.name if c_obj else None)
    findings = run_rules(s, t, ctx)
    workload = to_workload(s, ranks_per_node)
    if c_obj is not None and any(f.id.startswith("LUS") for f in findings):
        findings = [_with_advice(f, workload, kb, c_obj) if f.id in ("LUS001", "LUS003") else f for f in findings]
    return document(s, findings, workload, ranks_per_node)


def _with_advice(f: Any, workload: Any, kb: Any, center: Any) -> Any:
    """Attach the advisor's answer for the derived workload on `center`; leave the finding alone if it has none."""
    try:
        from ..advise import advise
        from ..kb.store import KB
        with KB.open(kb, create=False) as store:
            adv = advise(workload, store, center)
    except Exception as e:  # advice is an extra: a finding stands without it
        ev = dict(f.evidence)
        ev["advice_unavailable"] = str(e)
        return dataclasses.replace(f, evidence=ev)
    return dataclasses.replace(f, advice=adv)


def document(s: Any, findings: list[Any], workload: Any, ranks_per_node: int | None) -> dict[str, Any]:
    """The stable JSON shape of a diagnosis."""
    used = sorted({o for f in s.files if f.lustre for o in f.lustre.osts})
    return {
        "schema": SCHEMA,
        "log": s.path,
        "job": {"jobid": s.jobid, "exe": s.exe, "nprocs": s.nprocs, "run_time": s.run_time,
                "start_time": s.start_time, "darshan_version": s.darshan_version, "log_version": s.log_version,
                "modules": list(s.modules), "layout": s.layout, "files": len(s.files),
                "shared_files": len(s.shared_files), "fpp_files": len(s.fpp_files), "partial": s.partial,
                "notes": list(s.notes)},
        "apis": {k: dataclasses.asdict(v) for k, v in s.apis.items()},
        "requests": {"read_sizes": dict(s.read_sizes), "write_sizes": dict(s.write_sizes),
                     "small_reads": s.small_reads, "small_writes": s.small_writes,
                     "seq_reads": s.seq_reads, "seq_writes": s.seq_writes,
                     "consec_reads": s.consec_reads, "consec_writes": s.consec_writes},
        "mpiio": {"indep_reads": s.mpiio_indep_reads, "indep_writes": s.mpiio_indep_writes,
                  "coll_reads": s.mpiio_coll_reads, "coll_writes": s.mpiio_coll_writes,
                  "nonblocking": s.mpiio_nb_ops} if s.has_mpiio else None,
        "metadata_time_s": round(s.meta_time, 3),
        "lustre": {"osts_used": len(used), "fs_ost_count": s.fs_ost_count,
                   "fs_ost_count_source": s.fs_ost_count_source,
                   "osts": [{"ost": o.ost, "files": o.files, "write_time_s": round(o.write_time, 3),
                             "mean_write_time_s": round(o.mean_write_time, 3), "bytes_written": o.bytes_written}
                            for o in s.osts]},
        "files": [{"path": f.path, "shared": f.shared, "ranks": f.ranks, "fs_type": f.fs_type,
                   "bytes_read": f.bytes_read, "bytes_written": f.bytes_written, "reads": f.reads,
                   "writes": f.writes, "small_requests": f.small_reads + f.small_writes,
                   "meta_time_s": round(f.meta_time, 3),
                   "lustre": dataclasses.asdict(f.lustre) if f.lustre else None} for f in s.files[:50]],
        "workload": to_plain(workload),
        "workload_assumptions": {"ranks_per_node": ranks_per_node or 1,
                                 "note": "Darshan records no node count" if not ranks_per_node else ""},
        "findings": [to_plain(f) for f in findings],
    }
