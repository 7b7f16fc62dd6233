"""Time slurm/job_submit.lua on hostile 4 MiB scripts (each with one 1 MiB line) inside real Lua 5.1.

    .venv/bin/python benchmarks/bench_hook.py [-n 15] [--json]

Runs slurm/testcluster/run_job_submit.lua under `lua5.1` (Debian's interpreter, the one slurmctld's
job_submit/lua plugin embeds) and prints, per script shape, the median and the slowest of N calls of
`slurm_job_submit` (CPU time inside Lua). The target is a median under 50 ms for every shape.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 50.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=15, help="calls per script shape")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    lua = shutil.which("lua5.1")
    if lua is None:
        raise SystemExit("lua5.1 not found: apt-get install lua5.1 (scripts/setup.sh installs it)")
    p = subprocess.run([lua, str(ROOT / "slurm/testcluster/run_job_submit.lua"), str(ROOT / "slurm/job_submit.lua"),
                        "--bench", str(a.n)], capture_output=True, text=True, timeout=600, check=True)
    rows = []
    for line in p.stdout.splitlines():
        name, size, median, worst = line.split()
        rows.append({"case": name, "bytes": int(size), "median_ms": float(median), "max_ms": float(worst)})
    ok = all(r["median_ms"] < TARGET_MS for r in rows)
    if a.json:
        print(json.dumps({"n": a.n, "target_ms": TARGET_MS, "met": ok, "cases": rows}, indent=2))
    else:
        print(f"job_submit.lua in {lua}, {a.n} calls per shape (target: median < {TARGET_MS:g} ms)")
        for r in rows:
            print(f"  {r['case']:32} {r['bytes']:>9} B  median {r['median_ms']:8.3f} ms  max {r['max_ms']:8.3f} ms")
        print("target met" if ok else "TARGET MISSED")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
