"""Diagnose a job from its Darshan log: derive what it did, check it against rules, say what to change.

Library entry points:
- `analyze(log, ...) -> Diagnosis`: the derived `LogSummary` and the findings (each with severity, evidence holding
  the counters and the arithmetic, and `time_at_stake_s`: run time per rank the finding concerns). This is what a
  program scanning many logs should call.
- `diagnose(log, ...) -> dict`: the JSON document of `ioadvise diagnose --json` (docs/diagnose.md).
"""
from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

from ..frozen import asdict, frozen, replace
from ..model.types import Finding, to_plain
from ..darshanlog.summary import LogSummary

SCHEMA = "ioadvisor.diagnose/2"

__all__ = ["Diagnosis", "analyze", "diagnose", "document", "judge", "SCHEMA"]


@frozen(kw_only=True)
class Diagnosis:
    """One log's diagnosis: what it says (`summary`) and what to change (`findings`, most severe first)."""

    summary: LogSummary
    findings: tuple[Finding, ...]

    @property
    def run_time(self) -> float:
        return self.summary.run_time

    @property
    def io_time_per_rank(self) -> float:
        """POSIX + STDIO read and write time, rank-seconds divided by the processes."""
        t = sum(a.read_time + a.write_time for k, a in self.summary.apis.items() if k in ("POSIX", "STDIO"))
        return t / max(1, self.summary.nprocs)

    def as_dict(self) -> dict[str, Any]:
        """A compact, JSON-ready record of the diagnosis (for scanners of many logs): the job's scale and the
        findings with their evidence; `diagnose()` gives the full document instead."""
        s = self.summary
        return {"schema": SCHEMA, "log": s.path, "jobid": s.jobid, "exe": s.exe, "nprocs": s.nprocs,
                "run_time_s": s.run_time, "io_time_per_rank_s": round(self.io_time_per_rank, 3),
                "modules": list(s.modules), "unread_modules": list(s.unread_modules), "partial": s.partial,
                "findings": [to_plain(f) for f in self.findings]}


def analyze(log: str | Path, *, center: str | None = None, thresholds: str | Path | None = None,
            kb: str | Path | None = None, use_kb: bool = True, ranks_per_node: int | None = None) -> Diagnosis:
    """Read one Darshan log and run every rule on it.

    `center` (a TOML file or a shipped center name) gives the file system's OST count. With `use_kb`, striping
    findings quote measured gains from the KB at `kb` (else the default KB), and with `center` too, a one-stripe
    shared file is advised the stripe count `ioadvise advise` decides for it (`ranks_per_node`: where the log
    states no node count; else the center file's). Raises ImportFormatError, UsageError or
    ConfigError (exit 2 in the CLI) for bad input.
    """
    from ..errors import IOAdvisorError
    from ..darshanlog.child import start_read

    # the child starts reading (and importing PyDarshan) first, while this process loads the rules, thresholds
    # and center; errors come in the same order as if each step waited for the one before: bad thresholds or a
    # bad center before a log refused by its header, and either before what the child finds
    reading, refused = None, None
    try:
        reading = start_read(log)
    except IOAdvisorError as e:
        refused = e
    try:
        from .rules import load_thresholds
        t = load_thresholds(thresholds)
        c_obj = _center(center)
    except BaseException:
        if reading is not None:
            reading.cancel()
        raise
    if refused is not None:
        raise refused
    assert reading is not None
    return judge(reading.result(), t, c_obj, kb=kb, use_kb=use_kb, ranks_per_node=ranks_per_node,
                 center_spec=center)


def judge(s: LogSummary, thresholds: dict[str, Any], center: Any = None, *, kb: str | Path | None = None,
          use_kb: bool = True, ranks_per_node: int | None = None, center_spec: str | None = None) -> Diagnosis:
    """The findings for a log already summarized, with loaded thresholds and a loaded center (or None): what
    `analyze` does after reading the log, for callers that read many logs with the same settings. `center_spec`:
    how the user named the center (a file or a name), for the commands the findings quote."""
    from .rules import Context, run_rules

    t, c_obj = thresholds, center
    osts = _ost_count(c_obj)
    if osts and s.fs_ost_count_at_least and osts < s.fs_ost_count_at_least:
        # the log proves more OSTs than the center has: it was not written on that file system
        s = replace(s, notes=s.notes + (
            f"the center {c_obj.name} has {osts} Lustre OSTs, but this log names OST index "
            f"{s.fs_ost_count_at_least - 1}: its OST count is not used for this log",))
        osts = None
    facts = None
    if use_kb:             # imported here: an archive worker, which reads no KB, does not load the KB's modules
        from .facts import KBFile
        facts = KBFile(kb)
    stripes = None
    if use_kb and c_obj is not None:     # asked only when a one-stripe shared file needs a count
        from .advised import advised_stripes
        stripes = functools.partial(advised_stripes, s, c_obj, kb, ranks_per_node, center_spec=center_spec)
    ctx = Context(kb=facts, center_ost_count=osts,
                  center_name=c_obj.name if c_obj else None, stripes=stripes)
    return Diagnosis(summary=s, findings=tuple(run_rules(s, t, ctx)))


def diagnose(log: str | Path, *, kb: str | Path | None = None, center: str | None = None,
             thresholds: str | Path | None = None, ranks_per_node: int | None = None,
             use_kb: bool = True) -> dict[str, Any]:
    """Diagnose one Darshan log; returns the JSON document described in docs/diagnose.md.

    With `center`, striping findings also carry an `Advice` for the derived workload.
    """
    from ..darshanlog.summary import job_nodes, to_workload

    d = analyze(log, center=center, thresholds=thresholds, kb=kb, use_kb=use_kb, ranks_per_node=ranks_per_node)
    findings = list(d.findings)
    c_obj = _center(center)
    s = d.summary
    # the archive's order: the log's node count, else --ranks-per-node, else the center file's ranks_per_node
    nodes, source = job_nodes(s.nodes, s.nprocs, ranks_per_node, c_obj.ranks_per_node if c_obj else None)
    workload = to_workload(s, math.ceil(max(1, s.nprocs) / nodes) if nodes else None)
    if c_obj is not None:
        # LUS001's advice is the one its stripe count came from (for the file's own workload)
        findings = [_with_advice(f, workload, kb, c_obj) if f.id in ("LUS001", "LUS003") and f.advice is None
                    else f for f in findings]
    return document(s, findings, workload, nodes, source)


def _center(center: str | None) -> Any:
    if not center:
        return None
    from ..center import load_center
    return load_center(center)


def _ost_count(c_obj: Any) -> int | None:
    if c_obj is None:
        return None
    counts = [fs.ost_count for fs in c_obj.filesystems if fs.type == "lustre" and fs.ost_count]
    return max(counts) if counts else None


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
        return replace(f, evidence=ev)
    return replace(f, advice=adv)


def _assumptions(workload: Any, nodes: int | None, nodes_from: str | None) -> dict[str, Any]:
    """Where the workload's node count comes from; without one, its figures are per process (1 rank per node)."""
    from ..darshanlog.summary import NODES_FROM
    if nodes is None:
        return {"nodes": None, "ranks_per_node": None, "nodes_from": None,
                "note": "no node count: the log states none and neither --ranks-per-node nor the center file "
                        "gives ranks per node; the workload's figures are per process (each counted as a node "
                        "of 1 rank)"}
    return {"nodes": nodes, "ranks_per_node": workload.ranks_per_node, "nodes_from": nodes_from,
            "note": NODES_FROM[nodes_from]}


def _io_time(s: LogSummary) -> dict[str, Any]:
    """The job's I/O time per rank (LogSummary.io_time) and its share of the run."""
    busiest, mean = s.io_time()
    return {"busiest_rank_s": round(busiest, 3), "mean_per_rank_s": round(mean, 3),
            "share_of_run": round(busiest / s.run_time, 4) if s.run_time > 0 else None}


def _timeline(s: LogSummary) -> dict[str, Any] | None:
    """The time lines per interface (from HEATMAP records, else DXT traces), with their I/O phases; None where the
    log has neither."""
    if not s.heatmaps:
        return None
    return {"source": s.heatmaps[0].source, "apis": [
        {"api": h.api, "bin_width_s": h.bin_width, "ranks": h.ranks, "phases": h.phases(),
         "read_bytes": list(h.read_bytes), "write_bytes": list(h.write_bytes),
         "ranks_reading": list(h.ranks_reading), "ranks_writing": list(h.ranks_writing)}
        for h in s.heatmaps]}


def _rank_spread(sp: Any) -> dict[str, Any] | None:
    if sp is None:
        return None
    return {"layer": sp.layer, "slowest_rank": sp.slowest_rank, "slowest_time_s": round(sp.slowest_time, 4),
            "slowest_bytes": sp.slowest_bytes, "fastest_rank": sp.fastest_rank,
            "fastest_time_s": round(sp.fastest_time, 4), "fastest_bytes": sp.fastest_bytes,
            "mean_bytes": round(sp.mean_bytes, 1), "bytes_agree_within": round(sp.bytes_agree_within, 4)}


def _mpiio_dir(d: Any) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"bytes": d.bytes, "collective_ops": d.collective_ops, "independent_ops": d.independent_ops,
            "collective_share_min": round(d.collective_share_min, 4),
            "collective_share_max": round(d.collective_share_max, 4), "time_s": round(d.time, 4)}


def document(s: LogSummary, findings: list[Any], workload: Any, nodes: int | None,
             nodes_from: str | None = None) -> dict[str, Any]:
    """The stable JSON shape of a diagnosis."""
    used = sorted({o for f in s.files if f.lustre for o in f.lustre.osts})
    req = {op: {"ops": r.ops, "small": r.small, "zero_bytes": r.zero, "exactly_1mib": r.exactly_1mib,
                "time_s": round(r.time, 4)} for op, r in (("read", s.reads), ("write", s.writes))}
    return {
        "schema": SCHEMA,
        "log": s.path,
        "job": {"jobid": s.jobid, "exe": s.exe, "nprocs": s.nprocs, "run_time": s.run_time,
                "start_time": s.start_time, "darshan_version": s.darshan_version, "log_version": s.log_version,
                "modules": list(s.modules), "unread_modules": list(s.unread_modules),
                "partial_modules": list(s.partial_modules), "layout": s.layout, "files": len(s.files),
                "shared_files": len(s.shared_files), "fpp_files": len(s.fpp_files),
                "special_files": sum(1 for f in s.files if f.special), "partial": s.partial,
                "notes": list(s.notes), "io_time": _io_time(s), "mpiio_hints_in_effect": s.hints_in_effect(),
                "nothing_to_judge": s.nothing_to_judge()},
        "apis": {k: asdict(v) for k, v in s.apis.items()},
        "requests": {"read_sizes": dict(s.read_sizes), "write_sizes": dict(s.write_sizes),
                     "small_reads": s.small_reads, "small_writes": s.small_writes, **req,
                     "seq_reads": s.seq_reads, "seq_writes": s.seq_writes,
                     "consec_reads": s.consec_reads, "consec_writes": s.consec_writes},
        "mpiio": {"indep_reads": s.mpiio_indep_reads, "indep_writes": s.mpiio_indep_writes,
                  "coll_reads": s.mpiio_coll_reads, "coll_writes": s.mpiio_coll_writes,
                  "nonblocking": s.mpiio_nb_ops} if s.has_mpiio else None,
        "metadata": {"rank_seconds": round(s.meta.rank_seconds, 3), "per_rank_max_s": round(s.meta.per_rank_max, 3),
                     "per_rank_mean_s": round(s.meta.per_rank_mean, 3), "busiest_rank": s.meta.busiest_rank,
                     "left_out_rank_seconds": round(s.meta.left_out_rank_seconds, 3),
                     "left_out_files": s.meta.left_out_files},
        "lustre": {"osts_used": len(used), "osts_seen": s.osts_seen,
                   "fs_ost_count_at_least": s.fs_ost_count_at_least,
                   "osts": [{"ost": o.ost, "files": o.files, "write_time_s": round(o.write_time, 3),
                             "mean_write_time_s": round(o.mean_write_time, 3),
                             "slowest_rank_write_time_s": round(o.slowest_write_time, 3),
                             "mean_slowest_rank_write_time_s": round(o.mean_slowest_write_time, 3),
                             "bytes_written": o.bytes_written}
                            for o in s.osts]},
        "files": [{"path": f.path, "shared": f.shared, "ranks": f.ranks, "fs_type": f.fs_type,
                   "special": f.special or None, "bytes_read": f.bytes_read, "bytes_written": f.bytes_written,
                   "reads": f.reads, "writes": f.writes, "small_reads": f.small_reads, "small_writes": f.small_writes,
                   "zero_byte_reads": f.read_req.zero, "zero_byte_writes": f.write_req.zero,
                   "read_time_s": round(f.read_time, 4), "write_time_s": round(f.write_time, 4),
                   "slowest_rank_write_time_s": round(f.slowest_write_time, 4),
                   "meta_time_s": round(f.meta_time, 4),
                   "rank_spread": _rank_spread(f.spread), "mpiio_read": _mpiio_dir(f.mpiio_read),
                   "mpiio_write": _mpiio_dir(f.mpiio_write), "mpiio_rank_spread": _rank_spread(f.mpiio_spread),
                   "lustre": asdict(f.lustre) if f.lustre else None} for f in s.files[:50]],
        "timeline": _timeline(s),
        "workload": to_plain(workload),
        "workload_assumptions": _assumptions(workload, nodes, nodes_from),
        "findings": [to_plain(f) for f in findings],
    }
