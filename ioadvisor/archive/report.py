"""The center report: jobs, users, applications and rules of a scanned archive, ranked by the I/O time at stake.

Definitions (docs/archive.md states them for readers of the report):
- a finding's *time at stake* is what `diagnose` says: seconds per rank of the job's run that the finding
  concerns. Jobs are weighed in **process-hours** (`seconds x processes / 3600`), which every log states;
  **node-hours** (`seconds x nodes / 3600`) are given only for jobs whose node count is known: stated by the log
  (BG/Q records, DXT traces of every rank), else `ceil(processes / ranks_per_node)` with the ranks per node given
  to the report or, failing that, the center file's. A job with neither is counted in processes only: one rank
  per node is never assumed;
- its *saving* is the gain the finding's evidence backs: the low end of the range of seconds diagnose states
  (`expected_saving`, `low_s` to `high_s`), or the time at stake times `1 - 1/gain` for a measured speed-up
  (`expected_gain`); where the range starts at 0 or nothing states one the saving is unknown (None), never the
  time at stake or the range's high end (which the report gives beside it, `saving_range_s`);
- a job's time at stake (and saving) is that of its largest finding, never the sum: two findings of one job can
  concern the same seconds (small requests on a file that is also badly striped). Users and applications add up
  their jobs; a rule adds up its findings (one per job).
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, Mapping, Sequence

from ..darshanlog.jobrecord import MAX_PROCS, MAX_RUN_S
from ..darshanlog.summary import job_nodes
from ..kb import archive as tables
from ..kb.archive import has_jobs
from .store import EMPTY_SHA256

__all__ = ["REPORT_SCHEMA", "center_report", "has_jobs", "saving_range", "saving_s"]

REPORT_SCHEMA = "ioadvisor.archive-report/2"


def _seconds(x: Any) -> float | None:
    """`x` as seconds if it is a finite, non-negative number (a stored finding is read as untrusted)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0:
        return float(x)
    return None


def saving_range(finding: Mapping[str, Any]) -> tuple[float, float, str] | None:
    """(low, high, basis): the seconds per rank a fix of one stored finding is expected to save, as a range capped
    at the time at stake, and what it rests on; None when nothing states one. The range is diagnose's
    `expected_saving` (`low_s` to `high_s`); a finding stored by an earlier version states only an upper end
    (`expected_saving_s`: the range runs from 0 to it) or a measured speed-up
    (`expected_gain`, a range of one point)."""
    at = _seconds(finding.get("time_at_stake_s")) or 0.0
    ev = finding.get("evidence") or {}
    cap = (lambda v: min(v, at)) if at else (lambda v: v)
    rng = ev.get("expected_saving")
    if isinstance(rng, Mapping):
        low, high = _seconds(rng.get("low_s")), _seconds(rng.get("high_s"))
        if low is not None and high is not None and low <= high:
            return cap(low), cap(high), "expected_saving"
    stated = _seconds(ev.get("expected_saving_s"))
    if stated is not None:
        return 0.0, cap(stated), "expected_saving_s"
    gain = ev.get("expected_gain")
    if _seconds(gain) is not None and gain > 1 and at:
        return at * (1 - 1 / gain), at * (1 - 1 / gain), "expected_gain"
    return None


def saving_s(finding: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """(seconds per rank a fix is sure to save, what backs it) for one stored finding: the low end of its saving
    range; (None, None) when no range is stated or it starts at 0 (the evidence backs no sure saving)."""
    rng = saving_range(finding)
    if rng is None or rng[0] <= 0:
        return None, None
    return rng[0], rng[2]


def _hours(seconds: float | None, count: int | None) -> float | None:
    return None if seconds is None or count is None else round(seconds * count / 3600.0, 4)



def center_report(kb: Any, *, top: int = 10, ranks_per_node: int | None = None, system: str | None = None,
                  systems: Sequence[str] | None = None,
                  center_rpn: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The ranked report of the archive in the open KB `kb`: of every log, or of the logs scanned for `system`
    (or any of `systems`; names compared without regard to case). `ranks_per_node` (given by the user) or else
    `center_rpn[system.lower()]` (the center file's) turns processes into nodes where a log states no node count."""
    if ranks_per_node is not None and ranks_per_node < 1:
        from ..errors import UsageError
        raise UsageError("--ranks-per-node must be at least 1")
    rpn_of = {k.lower(): v for k, v in (center_rpn or {}).items() if v}
    names = [n.lower() for n in ([system] if system else []) + list(systems or [])]
    # every empty file is a failure of its own (all of them have one content): counted by path
    logs, empty = tables.log_counts(kb, names, EMPTY_SHA256)
    left_out: list[str] = []
    jobs = _jobs(kb, names, ranks_per_node, rpn_of, left_out)
    rules = _add_findings(kb, names, jobs)
    for j in jobs.values():
        j["at_stake_process_hours"] = _hours(j["at_stake_s"], j["nprocs"])
        j["saving_process_hours"] = _hours(j["saving_s"], j["nprocs"])
        j["at_stake_node_hours"] = _hours(j["at_stake_s"], j["nodes"])
        j["saving_node_hours"] = _hours(j["saving_s"], j["nodes"])
        j["findings"].sort(key=lambda x: (-x["time_at_stake_s"], x["rule"]))
    ranked = sorted(jobs.values(), key=lambda j: (-j["at_stake_process_hours"], -j["process_hours"], j["log"]))
    return {"schema": REPORT_SCHEMA, "system": system, "ranks_per_node": ranks_per_node,
            "logs": {"scanned": sum(logs.values()) + empty, "readable": logs.get("ok", 0),
                     "failed": logs.get("failed", 0), "empty_files": empty,
                     "impossible_jobs_left_out": len(left_out)},
            "totals": _totals(ranked),
            "jobs": ranked[:top], "users": _groups(ranked, "uid", top), "applications": _groups(ranked, "app", top),
            "rules": _fixes(rules)}


def possible(r: Mapping[str, Any]) -> bool:
    """Whether a stored job's process count, run time and I/O time are ones a real job has (a scan by an
    earlier version stored whatever the log said: 2^63 - 1 processes, a run of 10^12 s)."""
    def ok(v: Any, top: float) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= top
    return (ok(r["nprocs"], MAX_PROCS) and r["nprocs"] >= 1 and ok(r["run_time_s"], MAX_RUN_S)
            and ok(r["io_time_per_rank_s"], math.inf) and (r["nodes"] is None or ok(r["nodes"], MAX_PROCS)))


def _jobs(kb: Any, names: Sequence[str], ranks_per_node: int | None,
          rpn_of: Mapping[str, int], left_out: list[str]) -> dict[str, dict[str, Any]]:
    """The archived jobs (by log hash) of the logs scanned for `names`, their node counts and hours, no findings
    yet; the logs of jobs whose stored facts are impossible (`possible`) are appended to `left_out` instead."""
    jobs: dict[str, dict[str, Any]] = {}
    for r in tables.jobs(kb, names):
        if not possible(r):
            left_out.append(r["path"])
            continue
        nodes, source = job_nodes(r["nodes"], r["nprocs"], ranks_per_node, rpn_of.get((r["system"] or "").lower()))
        jobs[r["hash"]] = {"log": r["path"], "system": r["system"], "filesystem": r["filesystem"],
                           "jobid": r["jobid"], "uid": r["uid"], "app": r["app"], "exe": r["exe"],
                           "nprocs": r["nprocs"], "nodes": nodes,
                           "nodes_from": source,
                           "run_time_s": r["run_time_s"], "io_time_per_rank_s": round(r["io_time_per_rank_s"], 3),
                           "process_hours": _hours(r["run_time_s"], r["nprocs"]),
                           "node_hours": _hours(r["run_time_s"], nodes), "at_stake_s": 0.0, "saving_s": None,
                           "findings": []}
    return jobs


def _add_findings(kb: Any, names: Sequence[str], jobs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each finding of the logs scanned for `names` added to its job (raising the job's time at stake and saving),
    and summed per rule with the job where it costs most; the rules by id."""
    rules: dict[str, dict[str, Any]] = {}
    for digest, text in tables.findings(kb, names):
        job = jobs.get(digest)
        if job is None:
            continue
        f = json.loads(text)
        at = f.get("time_at_stake_s") or 0.0
        if not isinstance(at, (int, float)) or not math.isfinite(at) or at < 0:     # stored by an earlier version
            at = 0.0
        save, basis = saving_s(f)
        rng = saving_range(f)
        job["findings"].append({"rule": f["id"], "severity": f["severity"], "time_at_stake_s": at,
                                "saving_s": None if save is None else round(save, 3), "saving_basis": basis,
                                "saving_range_s": None if rng is None else [round(rng[0], 3), round(rng[1], 3)]})
        job["at_stake_s"] = max(job["at_stake_s"], at)
        if save is not None:
            job["saving_s"] = max(job["saving_s"] or 0.0, save)
        g = rules.setdefault(f["id"], {"rule": f["id"], "title": f["title"], "jobs": 0, "high": 0, "warn": 0,
                                       "info": 0, "at_stake_process_hours": 0.0, "saving_process_hours": 0.0,
                                       "saving_up_to_process_hours": 0.0, "jobs_with_saving": 0, "_best": None})
        g["jobs"] += 1
        g[f["severity"]] = g.get(f["severity"], 0) + 1
        ph = at * job["nprocs"] / 3600.0
        g["at_stake_process_hours"] += ph
        if save is not None:
            g["saving_process_hours"] += save * job["nprocs"] / 3600.0
            g["jobs_with_saving"] += 1
        if rng is not None:
            g["saving_up_to_process_hours"] += rng[1] * job["nprocs"] / 3600.0
        if g["_best"] is None or ph > g["_best"][0]:
            g["_best"] = (ph, job, f)
    return rules


def _fixes(rules: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules ranked by process-hours they are sure to save (the low ends of their saving ranges), then by those
    they may save at most (the high ends), then at stake; each with its costliest job."""
    fixes = []
    for g in sorted(rules.values(), key=lambda g: (-g["saving_process_hours"], -g["saving_up_to_process_hours"],
                                                   -g["at_stake_process_hours"], g["rule"])):
        _, job, f = g.pop("_best")
        g["at_stake_process_hours"] = round(g["at_stake_process_hours"], 4)
        g["saving_up_to_process_hours"] = round(g["saving_up_to_process_hours"], 4)
        g["saving_process_hours"] = round(g["saving_process_hours"], 4) if g["jobs_with_saving"] else None
        g["example"] = {"log": job["log"], "jobid": job["jobid"], "uid": job["uid"], "app": job["app"],
                        "message": f["message"], "command": (f.get("evidence") or {}).get("command")}
        fixes.append(g)
    return fixes


def _totals(ranked: list[dict[str, Any]]) -> dict[str, Any]:
    """The jobs' counts and hours summed (node-hours over the jobs whose node count is known)."""
    def total(key: str, over: Sequence[dict[str, Any]]) -> float:
        return round(sum(j[key] or 0.0 for j in over), 3)
    with_nodes = [j for j in ranked if j["nodes"] is not None]
    return {"jobs": len(ranked), "jobs_with_findings": sum(1 for j in ranked if j["findings"]),
            "jobs_with_saving": sum(1 for j in ranked if j["saving_s"] is not None),
            "jobs_with_nodes": len(with_nodes),
            "jobs_measured": sum(1 for j in ranked if j["filesystem"] is not None),
            "process_hours": total("process_hours", ranked),
            "at_stake_process_hours": total("at_stake_process_hours", ranked),
            "saving_process_hours": total("saving_process_hours", ranked),
            "node_hours": total("node_hours", with_nodes),
            "at_stake_node_hours": total("at_stake_node_hours", with_nodes),
            "saving_node_hours": total("saving_node_hours", with_nodes)}


def _groups(jobs: list[dict[str, Any]], key: str, top: int) -> list[dict[str, Any]]:
    """Jobs summed by `key` (uid or app), ranked by process-hours at stake; each with its most costly rule."""
    acc: dict[Any, dict[str, Any]] = {}
    per_rule: dict[Any, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for j in jobs:
        g = acc.setdefault(j[key], {key: j[key], "jobs": 0, "jobs_with_findings": 0, "process_hours": 0.0,
                                    "at_stake_process_hours": 0.0, "saving_process_hours": 0.0})
        g["jobs"] += 1
        g["jobs_with_findings"] += bool(j["findings"])
        for k in ("process_hours", "at_stake_process_hours", "saving_process_hours"):
            g[k] += j[k] or 0.0
        for f in j["findings"]:
            per_rule[j[key]][f["rule"]] += f["time_at_stake_s"] * j["nprocs"]
    out = sorted(acc.values(), key=lambda g: (-g["at_stake_process_hours"], -g["process_hours"], str(g[key])))[:top]
    for g in out:
        for k in ("process_hours", "at_stake_process_hours", "saving_process_hours"):
            g[k] = round(g[k], 4)
        rs = per_rule.get(g[key])
        g["top_rule"] = max(rs, key=lambda r: (rs[r], r)) if rs else None
    return out
