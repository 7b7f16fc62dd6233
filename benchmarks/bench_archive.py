"""Throughput and memory of `ioadvise archive scan` on an archive of N Darshan logs (default 5,000).

The archive is made of the darshan wheel's distinct real logs, copied round-robin into a YEAR/MONTH/DAY tree, each
copy with its own job id (and one of 500 user ids) in the job record (tests/darshan_copies.py), so that every copy
is new content and is read, not skipped as a duplicate. Measured, each scan in a fresh process on a fresh KB:
- 1 worker and 2 workers, alternating, --runs times each: median wall time, logs/s, logs/s per worker (core), CPU
  time per log, peak RSS of the scanning process and of the largest worker; the 2-worker speed-up of each pair;
- the same scan again on the filled KB: what it adds (must be nothing) and how long it takes;
- for comparison, a process per log (`diagnose.analyze`, which parses each log in a child it forks) over a sample;
- each distinct log alone: the CPU a worker spends on it (the worker's own handler: header check, read, judgement,
  runs), the median of --repeat in one process. The archive holds the logs in equal shares, so the scan's CPU per
  log follows their mean, which the largest log sets (sample-badost.darshan: 2,048 files, one per rank); the
  median log is what an archive of small jobs costs per log.
Targets: >= 100 logs/s per core, 2 workers >= 2x the process-per-log rate, re-scan adds 0. `cores_used` (CPU
seconds per wall second) shows how much of the machine a scan got: on a shared machine the wall-clock speed-up of 2
workers is bounded by it, while the CPU per log (and `logs_per_cpu_s`, the logs per CPU second) is not.

    python benchmarks/bench_archive.py [--logs 5000] [--runs 3] [--sample 100] [--repeat 5] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_PER_CORE = 100.0

_SCAN = r"""
import json, resource, sys, time
from ioadvisor.archive.scan import scan
from ioadvisor.archive.worker import Settings
from ioadvisor.kb import KB
root, kb_path, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter(); c0 = time.process_time()
with KB.open(kb_path) as kb:
    out = scan([root], kb, Settings(system="bench"), workers=workers)
wall = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"outcome": out.as_dict(), "wall_s": wall,
                  "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
                  "parent_rss_mb": me.ru_maxrss / 1024, "worker_rss_mb": kids.ru_maxrss / 1024}))
"""

_PER_LOG = r"""
import json, sys, time
from pathlib import Path
from ioadvisor.diagnose import analyze
logs = sorted(Path(sys.argv[1]).rglob("*.darshan"))[: int(sys.argv[2])]
t0 = time.perf_counter()
for p in logs:
    analyze(p, use_kb=False)
print(json.dumps({"logs": len(logs), "wall_s": time.perf_counter() - t0}))
"""

_PER_SOURCE = r"""
import json, os, statistics, sys, time
from pathlib import Path
from ioadvisor.archive.worker import Settings, setup
err = os.fdopen(os.dup(2), "w")         # the handler sends fd 2 to its own file
handle = setup(Settings(system="bench"))
out = {}
for arg in sys.argv[2:]:                # once each first: what the first log loads is not a log's cost
    handle((arg, "0" * 64))
for arg in sys.argv[2:]:
    p = Path(arg)
    cpu = []
    for _ in range(int(sys.argv[1])):
        c0 = time.process_time()
        r = handle((str(p), "0" * 64))
        cpu.append(time.process_time() - c0)
    if r["status"] != "ok":
        print(r, file=err, flush=True)
        sys.exit(1)
    out[p.name.split("-", 1)[1]] = {"kb": round(p.stat().st_size / 1024), "cpu_ms": 1000 * statistics.median(cpu)}
print(json.dumps(out))
"""


def wheel_sources() -> list[Path]:
    from tests.darshan_copies import wheel_logs
    return wheel_logs()


def make_archive(root: Path, n: int) -> None:
    from tests.darshan_copies import with_job
    sources = [(p.name, p.read_bytes()) for p in wheel_sources()]
    for i in range(n):
        name, data = sources[i % len(sources)]
        d = root / "2026" / f"{1 + i // 2000 % 12:02d}" / f"{1 + i // 100 % 28:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"job{i:06d}-{name}").write_bytes(with_job(data, uid=20000 + i % 500, jobid=1_000_000 + i))


def _run(code: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=int, default=5000)
    ap.add_argument("--sample", type=int, default=100, help="logs timed with a process per log")
    ap.add_argument("--runs", type=int, default=3, help="scans per worker count (medians reported)")
    ap.add_argument("--repeat", type=int, default=5, help="handlings of each distinct log alone (median reported)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-archive-") as tmp:
        root = Path(tmp) / "archive"
        t0 = time.perf_counter()
        make_archive(root, args.logs)
        made = time.perf_counter() - t0
        rows: dict = {}
        samples: dict[int, list[dict]] = {1: [], 2: []}
        ratios = []
        for rep in range(args.runs):          # 1 and 2 workers alternate, so both see the same load
            for w in (1, 2):
                kb = str(Path(tmp) / f"kb{w}-{rep}.sqlite")
                r = _run(_SCAN, str(root), kb, str(w))
                o = r["outcome"]
                assert o["diagnosed"] == args.logs and not o["failed"], o
                samples[w].append({**r, "kb": kb, "added": o["added"]})
            ratios.append(samples[1][-1]["wall_s"] / samples[2][-1]["wall_s"])
        for w in (1, 2):
            ss = samples[w]
            wall = statistics.median(x["wall_s"] for x in ss)
            rate = args.logs / wall
            rows[f"workers_{w}"] = {"wall_s": round(wall, 2), "wall_s_runs": [round(x["wall_s"], 1) for x in ss],
                                    "logs_per_s": round(rate, 1), "logs_per_s_per_core": round(rate / w, 1),
                                    "cpu_ms_per_log": round(1000 * statistics.median(x["cpu_s"] for x in ss)
                                                            / args.logs, 2),
                                    # logs per CPU second: the rate per core of a scan that has its cores to
                                    # itself, which a loaded machine's wall clock does not show
                                    "logs_per_cpu_s": round(args.logs / statistics.median(x["cpu_s"] for x in ss),
                                                            1),
                                    # CPU seconds per wall second: the cores the scan actually got (a shared
                                    # machine gives 2 workers less than 2)
                                    "cores_used": round(statistics.median(x["cpu_s"] / x["wall_s"] for x in ss), 2),
                                    "parent_rss_mb": round(max(x["parent_rss_mb"] for x in ss), 1),
                                    "worker_rss_mb": round(max(x["worker_rss_mb"] for x in ss), 1),
                                    "jobs": ss[0]["added"]["jobs"], "findings": ss[0]["added"]["findings"],
                                    "runs": ss[0]["added"]["runs"]}
        again = _run(_SCAN, str(root), samples[2][0]["kb"], "2")
        rows["rescan"] = {"wall_s": round(again["wall_s"], 2), "unchanged": again["outcome"]["unchanged"],
                          "added": again["outcome"]["added"]}
        rows["speedup_2_workers_over_1_per_pair"] = [round(x, 2) for x in ratios]
        per = _run(_PER_LOG, str(root), str(args.sample))
        rows["process_per_log"] = {"logs": per["logs"], "wall_s": round(per["wall_s"], 2),
                                   "logs_per_s": round(per["logs"] / per["wall_s"], 1)}
        firsts = sorted(root.rglob("*.darshan"))[: len(wheel_sources())]     # job000000-... : one of each
        alone = _run(_PER_SOURCE, str(args.repeat), *map(str, firsts))
        costs = [v["cpu_ms"] for v in alone.values()]
        rows["each_log_alone_cpu_ms"] = {k: (v["kb"], round(v["cpu_ms"], 2))
                                         for k, v in sorted(alone.items(), key=lambda kv: -kv[1]["cpu_ms"])}
        rows["each_log_alone_mean_cpu_ms"] = round(statistics.mean(costs), 2)
        rows["each_log_alone_median_cpu_ms"] = round(statistics.median(costs), 2)
    w2 = rows["workers_2"]["logs_per_s"]
    summary = {"logs": args.logs, "archive_made_s": round(made, 1), **rows,
               "speedup_2_workers_over_1": round(statistics.median(ratios), 2),
               "speedup_2_workers_over_process_per_log": round(w2 / rows["process_per_log"]["logs_per_s"], 1),
               "rescan_adds_nothing": sum(rows["rescan"]["added"].values()) == 0,
               "per_core_target_met": min(rows["workers_1"]["logs_per_s_per_core"],
                                          rows["workers_2"]["logs_per_s_per_core"]) >= TARGET_PER_CORE}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    for k, v in summary.items():
        print(f"{k:42s} {v}")


if __name__ == "__main__":
    main()
