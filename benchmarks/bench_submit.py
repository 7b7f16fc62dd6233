"""Median overhead of `ioadvise submit` over plain `sbatch` on the single-node test cluster.

    .venv/bin/python benchmarks/bench_submit.py [-n 15] [--json]

Starts slurm/testcluster in a temporary directory (unless SLURM_CONF is already set), submits the same
script N times each way with --hold (so nothing runs), cancels the jobs and prints the medians. Two
`ioadvise submit` variants are timed: with explicit settings (`--hints`, no advice) and advised from the
shipped reference data for a center (`--center tsubame3`, the `#IOADVISE` lines describe the workload).
With `--center-kb PATH --system NAME` (a KB published with `kb publish`, e.g. the 1M-run one bench_scale.py
makes), two more, as a center's user runs them: the empty home of a first use, the published KB in
$IOADVISE_CENTER_KB, `--center NAME` a system it holds: `submit --dry-run` (advised, nothing submitted) and
`submit --hold` (advised and submitted).

    .venv/bin/python benchmarks/bench_submit.py -n 9 --center-kb /tmp/ioadvise-scale/published.sqlite \
        --system synthetic-big
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IOADVISE = str(Path(sys.executable).parent / "ioadvise")
SCRIPT = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --ntasks-per-node=28\n#IOADVISE api=MPIIO layout=shared bytes_per_rank=1GiB\nsrun true\n"


def _time(args: list[str], env: dict, cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{args[0]} failed: {p.stderr.strip()}")
    return dt, p.stdout.strip().splitlines()[-1].split()[-1].split(";")[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=15, help="submissions per variant")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--center-kb", type=Path, help="a published KB: time submit as a center's user runs it")
    ap.add_argument("--system", default="synthetic-big", help="the system of --center-kb to advise for")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-submit-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SBATCH_")}
    started = "SLURM_CONF" not in env
    if started:
        subprocess.run([str(ROOT / "slurm/testcluster/start.sh"), str(work / "cluster")], check=True,
                       capture_output=True, timeout=90)
        env["SLURM_CONF"] = str(work / "cluster/etc/slurm.conf")
    script = work / "job.sh"
    script.write_text(SCRIPT)
    plain, wrapped, advised, ids = [], [], [], []
    snap_dry, snap_sub = [], []
    user = None
    if a.center_kb:
        home = work / "home"
        user = {**env, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_DATA_HOME": str(home / ".local/share"), "IOADVISE_KB": "",
                "IOADVISE_CENTER_KB": str(a.center_kb.resolve())}
    try:
        for _ in range(a.n):   # interleaved so drift affects both alike
            dt, jid = _time(["sbatch", "--parsable", "--hold", str(script)], env, work)
            plain.append(dt)
            ids.append(jid)
            dt, jid = _time([IOADVISE, "submit", str(script), "--hints", "romio_cb_write=enable", "--hold"], env, work)
            wrapped.append(dt)
            ids.append(jid)
            dt, jid = _time([IOADVISE, "submit", str(script), "--center", "tsubame3", "--strict", "--hold"], env, work)
            advised.append(dt)
            ids.append(jid)
            if user is not None:
                shutil.rmtree(work / "home", ignore_errors=True)        # a first use: nothing cached
                (work / "home").mkdir()
                t0 = time.perf_counter()
                p = subprocess.run([IOADVISE, "submit", str(script), "--center", a.system, "--strict",
                                    "--dry-run", "--json"], env=user, cwd=work, capture_output=True, text=True,
                                   timeout=120)
                snap_dry.append(time.perf_counter() - t0)
                if p.returncode != 0 or json.loads(p.stdout)["source"] != "advice":
                    raise SystemExit(f"submit --dry-run from {a.center_kb} advised nothing: {p.stderr.strip()}")
                dt, jid = _time([IOADVISE, "submit", str(script), "--center", a.system, "--strict", "--hold"],
                                user, work)
                snap_sub.append(dt)
                ids.append(jid)
    finally:
        if ids:
            subprocess.run(["scancel", *ids], env=env, capture_output=True, timeout=60)
        if started:
            subprocess.run([str(ROOT / "slurm/testcluster/stop.sh"), str(work / "cluster")], capture_output=True)
    res = {"n": a.n, "sbatch_median_s": statistics.median(plain), "ioadvise_submit_median_s": statistics.median(wrapped)}
    res["overhead_median_s"] = res["ioadvise_submit_median_s"] - res["sbatch_median_s"]
    res["advised_submit_median_s"] = statistics.median(advised)
    res["advised_overhead_median_s"] = res["advised_submit_median_s"] - res["sbatch_median_s"]
    if snap_dry:
        res.update(center_kb=str(a.center_kb), system=a.system,
                   snapshot_dry_run_median_s=statistics.median(snap_dry),
                   snapshot_submit_median_s=statistics.median(snap_sub))
        res["snapshot_dry_run_over_sbatch_s"] = res["snapshot_dry_run_median_s"] - res["sbatch_median_s"]
        res["snapshot_submit_overhead_s"] = res["snapshot_submit_median_s"] - res["sbatch_median_s"]
    if a.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"sbatch          median {res['sbatch_median_s'] * 1000:7.1f} ms  (n={a.n})")
        print(f"ioadvise submit median {res['ioadvise_submit_median_s'] * 1000:7.1f} ms")
        print(f"overhead        median {res['overhead_median_s'] * 1000:7.1f} ms  (explicit --hints)")
        print(f"ioadvise submit median {res['advised_submit_median_s'] * 1000:7.1f} ms  (advised, --center tsubame3)")
        print(f"overhead        median {res['advised_overhead_median_s'] * 1000:7.1f} ms  (advised)")
        if snap_dry:
            print(f"submit --dry-run median {res['snapshot_dry_run_median_s'] * 1000:6.1f} ms  (from {a.center_kb}, "
                  f"--center {a.system}, empty home): {res['snapshot_dry_run_over_sbatch_s'] * 1000:+.1f} ms "
                  f"over sbatch")
            print(f"ioadvise submit median {res['snapshot_submit_median_s'] * 1000:7.1f} ms  (the same, submitted): "
                  f"{res['snapshot_submit_overhead_s'] * 1000:+.1f} ms over sbatch")


if __name__ == "__main__":
    main()
