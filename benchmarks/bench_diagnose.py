"""Wall time and peak memory of `ioadvise diagnose` on every distinct log shipped in the darshan wheel.

Two measurements per log, each the median of --runs repetitions:
- `cli`: the whole command (`ioadvise diagnose LOG --json`) as a fresh process, as a user runs it; peak RSS is the
  largest of the command and the child that parses the log (wait4 reports both).
- `lib`: `diagnose()` called in an already running interpreter (the log parse still happens in a child process).
Wall time depends on the machine's load; the CPU time of the command (with its child) does not, so both are shown.

    python benchmarks/bench_diagnose.py [--runs 5] [--json]
Targets: < 1 s and < 150 MB per log; the last line gives the medians over the logs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 1.0
TARGET_MB = 150.0


def _logs() -> list[Path]:
    """Every distinct log in the wheel (examples, darshan-graph, test inputs; copies under two names once)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.darshan_copies import wheel_logs
    return wheel_logs()


def _cli_once(log: Path) -> tuple[float, float, float]:
    exe = Path(sys.executable).with_name("ioadvise")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ioadvisor.cli"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd + ["diagnose", str(log), "--json"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{log.name}: exit {proc.returncode}: {err.strip()}")
    cpu = usage.ru_utime + usage.ru_stime     # the command and its reaped child, independent of machine load
    return wall, usage.ru_maxrss / 1024.0, cpu   # ru_maxrss is in KiB on Linux


def _lib_once(log: Path) -> float:
    from ioadvisor.diagnose import diagnose
    t0 = time.perf_counter()
    diagnose(log, use_kb=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    rows = []
    for log in _logs():
        cli = [_cli_once(log) for _ in range(args.runs)]
        lib = [_lib_once(log) for _ in range(args.runs)]
        rows.append({"log": log.name, "bytes": log.stat().st_size,
                     "cli_wall_s": round(statistics.median(w for w, _, _ in cli), 3),
                     "cli_cpu_s": round(statistics.median(c for _, _, c in cli), 3),
                     "cli_peak_rss_mb": round(statistics.median(m for _, m, _ in cli), 1),
                     "lib_wall_s": round(statistics.median(lib), 3)})
    for r in rows:
        r["within_target"] = r["cli_wall_s"] < TARGET_S and r["cli_peak_rss_mb"] < TARGET_MB
    med = {k: round(statistics.median(r[k] for r in rows), 3)
           for k in ("cli_wall_s", "cli_cpu_s", "cli_peak_rss_mb", "lib_wall_s")}
    med["within_target"] = med["cli_wall_s"] < TARGET_S and med["cli_peak_rss_mb"] < TARGET_MB
    if args.json:
        print(json.dumps({"logs": rows, "median": med}, indent=2))
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'log':44} {'size':>8} {'cli s':>7} {'cpu s':>7} {'cli MB':>7} {'lib s':>7}  "
          f"target(<{TARGET_S}s,<{TARGET_MB:.0f}MB)")
    for r in rows:
        print(f"{r['log'][:44]:44} {r['bytes']:>8} {r['cli_wall_s']:>7.3f} {r['cli_cpu_s']:>7.3f} {r['cli_peak_rss_mb']:>7.1f} "
              f"{r['lib_wall_s']:>7.3f}  {'ok' if r['within_target'] else 'MISSED'}")
    print(f"{'median over ' + str(len(rows)) + ' logs':44} {'':>8} {med['cli_wall_s']:>7.3f} {med['cli_cpu_s']:>7.3f} "
          f"{med['cli_peak_rss_mb']:>7.1f} {med['lib_wall_s']:>7.3f}  {'ok' if med['within_target'] else 'MISSED'}")


if __name__ == "__main__":
    main()
