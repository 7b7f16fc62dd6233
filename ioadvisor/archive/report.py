"""The center report: jobs, users, applications and rules of a scanned archive, ranked by the I/O time at stake.

Definitions (docs/archive.md states them for readers of the report):
- a finding's *time at stake* is what `diagnose` says: seconds per rank of the job's run that the finding
  concerns; in node-hours it is `time_at_stake_s x nodes / 3600`, with `nodes = ceil(nprocs / ranks_per_node)`
  (Darshan records no node count: 1 rank per node unless told, as `diagnose` assumes);
- its *saving* is the saving the rule states (`expected_saving_s`), else the time at stake, which bounds it
  (`saving_is_bound`);
- a job's time at stake is that of its largest finding, never the sum: two findings of one job can concern the
  same seconds (small requests on a file that is also badly striped). Users and applications add up their jobs;
  a rule adds up its findings (one per job).
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, Sequence

__all__ = ["REPORT_SCHEMA", "center_report", "has_jobs", "saving_s"]

REPORT_SCHEMA = "ioadvisor.archive-report/1"


def saving_s(finding: dict[str, Any]) -> tuple[float, bool]:
    """(seconds per rank a fix saves, whether that is only the time-at-stake bound) for one stored finding."""
    at = finding.get("time_at_stake_s") or 0.0
    stated = (finding.get("evidence") or {}).get("expected_saving_s")
    if isinstance(stated, (int, float)) and stated >= 0:
        return min(float(stated), at) if at else float(stated), False
    return at, True


def has_jobs(kb: Any) -> bool:
    """Whether the KB holds any scanned job (the archive page of the guide is written only then)."""
    return kb.conn.execute("SELECT 1 FROM main.archive_jobs LIMIT 1").fetchone() is not None


def _nodes(nprocs: int, ranks_per_node: int) -> int:
    return max(1, math.ceil(nprocs / ranks_per_node))


def _node_h(seconds: float, nodes: int) -> float:
    return seconds * nodes / 3600.0


def center_report(kb: Any, *, top: int = 10, ranks_per_node: int = 1, system: str | None = None,
                  systems: Sequence[str] | None = None) -> dict[str, Any]:
    """The ranked report of the archive in the open KB `kb`: of every log, or of the logs scanned for `system`
    (or any of `systems`; names compared without regard to case)."""
    if ranks_per_node < 1:
        from ..errors import UsageError
        raise UsageError("--ranks-per-node must be at least 1")
    names = [n.lower() for n in ([system] if system else []) + list(systems or [])]
    where, args = (f"WHERE lower(l.system) IN ({','.join('?' * len(names))})", names) if names else ("", [])
    conn = kb.conn
    logs = dict(conn.execute(f"SELECT l.status, count(*) FROM main.archive_logs l {where} GROUP BY l.status",
                             args).fetchall())
    jobs: dict[str, dict[str, Any]] = {}
    for r in conn.execute(f"SELECT j.*, l.path, l.system FROM main.archive_jobs j JOIN main.archive_logs l "
                          f"ON l.hash = j.hash {where}", args):
        nodes = _nodes(r["nprocs"], ranks_per_node)
        jobs[r["hash"]] = {"log": r["path"], "system": r["system"], "jobid": r["jobid"], "uid": r["uid"],
                           "app": r["app"], "exe": r["exe"], "nprocs": r["nprocs"], "nodes": nodes,
                           "run_time_s": r["run_time_s"], "io_time_per_rank_s": round(r["io_time_per_rank_s"], 3),
                           "node_hours": round(_node_h(r["run_time_s"], nodes), 4), "at_stake_s": 0.0,
                           "at_stake_node_hours": 0.0, "saving_node_hours": 0.0, "findings": []}
    rules: dict[str, dict[str, Any]] = {}
    for r in conn.execute(f"SELECT f.hash, f.finding FROM main.archive_findings f JOIN main.archive_logs l "
                          f"ON l.hash = f.hash {where}", args):
        job = jobs.get(r["hash"])
        if job is None:
            continue
        f = json.loads(r["finding"])
        at = f.get("time_at_stake_s") or 0.0
        save, bound = saving_s(f)
        at_nh, save_nh = _node_h(at, job["nodes"]), _node_h(save, job["nodes"])
        job["findings"].append({"rule": f["id"], "severity": f["severity"], "time_at_stake_s": at,
                                "at_stake_node_hours": round(at_nh, 4), "saving_node_hours": round(save_nh, 4),
                                "saving_is_bound": bound})
        if at > job["at_stake_s"]:
            job["at_stake_s"], job["at_stake_node_hours"] = at, at_nh
        job["saving_node_hours"] = max(job["saving_node_hours"], save_nh)
        g = rules.setdefault(f["id"], {"rule": f["id"], "title": f["title"], "jobs": 0, "at_stake_node_hours": 0.0,
                                       "saving_node_hours": 0.0, "saving_is_bound": False, "high": 0, "warn": 0,
                                       "info": 0, "_best": None})
        g["jobs"] += 1
        g[f["severity"]] = g.get(f["severity"], 0) + 1
        g["at_stake_node_hours"] += at_nh
        g["saving_node_hours"] += save_nh
        g["saving_is_bound"] = g["saving_is_bound"] or (bound and at > 0)
        if g["_best"] is None or at_nh > g["_best"][0]:
            g["_best"] = (at_nh, job, f)
    ranked = sorted(jobs.values(), key=lambda j: (-j["at_stake_node_hours"], -j["node_hours"], j["log"]))
    fixes = []
    for g in sorted(rules.values(), key=lambda g: (-g["saving_node_hours"], -g["at_stake_node_hours"], g["rule"])):
        best = g.pop("_best")
        g["at_stake_node_hours"] = round(g["at_stake_node_hours"], 4)
        g["saving_node_hours"] = round(g["saving_node_hours"], 4)
        if best is not None:
            _, job, f = best
            g["example"] = {"log": job["log"], "jobid": job["jobid"], "uid": job["uid"], "app": job["app"],
                            "message": f["message"], "command": (f.get("evidence") or {}).get("command")}
        fixes.append(g)
    for j in ranked:
        j["at_stake_node_hours"] = round(j["at_stake_node_hours"], 4)
        j["saving_node_hours"] = round(j["saving_node_hours"], 4)
        j["findings"].sort(key=lambda x: -x["at_stake_node_hours"])
    return {"schema": REPORT_SCHEMA, "system": system, "ranks_per_node": ranks_per_node,
            "logs": {"scanned": sum(logs.values()), "readable": logs.get("ok", 0), "failed": logs.get("failed", 0)},
            "totals": {"jobs": len(jobs), "jobs_with_findings": sum(1 for j in jobs.values() if j["findings"]),
                       "node_hours": round(sum(j["node_hours"] for j in jobs.values()), 3),
                       "at_stake_node_hours": round(sum(j["at_stake_node_hours"] for j in ranked), 3),
                       "saving_node_hours": round(sum(j["saving_node_hours"] for j in ranked), 3)},
            "jobs": ranked[:top], "users": _groups(ranked, "uid", top), "applications": _groups(ranked, "app", top),
            "rules": fixes}


def _groups(jobs: list[dict[str, Any]], key: str, top: int) -> list[dict[str, Any]]:
    """Jobs summed by `key` (uid or app), ranked by node-hours at stake; each with its most costly rule."""
    acc: dict[Any, dict[str, Any]] = {}
    per_rule: dict[Any, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for j in jobs:
        g = acc.setdefault(j[key], {key: j[key], "jobs": 0, "jobs_with_findings": 0, "node_hours": 0.0,
                                    "at_stake_node_hours": 0.0, "saving_node_hours": 0.0})
        g["jobs"] += 1
        g["jobs_with_findings"] += bool(j["findings"])
        g["node_hours"] += j["node_hours"]
        g["at_stake_node_hours"] += j["at_stake_node_hours"]
        g["saving_node_hours"] += j["saving_node_hours"]
        for f in j["findings"]:
            per_rule[j[key]][f["rule"]] += f["at_stake_node_hours"]
    out = sorted(acc.values(), key=lambda g: (-g["at_stake_node_hours"], -g["node_hours"], str(g[key])))[:top]
    for g in out:
        for k in ("node_hours", "at_stake_node_hours", "saving_node_hours"):
            g[k] = round(g[k], 4)
        rs = per_rule.get(g[key])
        g["top_rule"] = max(rs, key=lambda r: (rs[r], r)) if rs else None
    return out
