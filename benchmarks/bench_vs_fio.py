"""`ioadvise bench` against fio: same bytes, same pattern, O_DIRECT on both sides, tools alternated run by run.

    .venv/bin/python benchmarks/bench_vs_fio.py [--dir DIR] [--size 256MiB] [--jobs 2] [--runs 21] [--json]

Part 1 (local disk): sequential 1 MiB writes then reads, a file per process, `--direct` / fio `--direct=1`,
fsync before close on both sides. Reports each tool's median bandwidth and the ratio (target: within 10%).

Part 2 (per-transfer Python overhead at 1 MiB): the same write phase on tmpfs, where the storage is as fast
as memory and any interpreter overhead shows most, (a) against fio's psync engine (a C loop of pwrite) and
(b) as the time of a minimal Python pwrite call relative to the time of one 1 MiB transfer (target: < 5%).
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

BIN = Path(sys.executable).parent
MiB = 1 << 20


def parse_size(text: str) -> int:
    from ioadvisor.model.units import parse_size as ps
    return ps(text)


def fio(directory: Path, rw: str, size: int, jobs: int, direct: bool, engine: str = "psync") -> float:
    """fio's aggregate bandwidth in MiB/s for one sequential 1 MiB phase (file per job)."""
    cmd = ["fio", "--name=seq", f"--directory={directory}", f"--rw={rw}", "--bs=1m", f"--size={size}",
           f"--numjobs={jobs}", f"--direct={int(direct)}", f"--ioengine={engine}", "--group_reporting",
           "--fallocate=none",          # no preallocation: ioadvise bench does not preallocate either
           "--output-format=json"]
    if rw == "write":
        cmd.append("--fsync_on_close=1")
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    return job[rw]["bw_bytes"] / MiB


def ours(directory: Path, ops: str, size: int, jobs: int, direct: bool, results: Path,
         keep: bool = False) -> dict[str, float]:
    """`ioadvise bench run` bandwidths in MiB/s for the given phases (file per process)."""
    cmd = [str(BIN / "ioadvise"), "bench", "run", "--api", "posix", "--layout", "fpp", "--transfer-size", "1MiB",
           "--block-size", str(size), "--ops", ops, "--dir", str(directory), "--result-dir", str(results), "--json"]
    if direct:
        cmd.append("--direct")
    if keep:
        cmd.append("--keep")
    if jobs > 1:
        cmd = [str(BIN / "mpiexec"), "-n", str(jobs)] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"ioadvise bench run failed: {p.stderr.strip()}")
    return {r["op"]: r["mean"] for r in json.loads(p.stdout)["results"]}


def compare_on_disk(base: Path, size: int, jobs: int, runs: int) -> dict:
    bw: dict[str, dict[str, list[float]]] = {"fio": {"write": [], "read": []}, "ioadvise": {"write": [], "read": []}}
    for i in range(runs):
        order = ("fio", "ioadvise") if i % 2 == 0 else ("ioadvise", "fio")
        for tool in order:
            d = Path(tempfile.mkdtemp(dir=base, prefix=f"{tool}-"))
            try:
                if tool == "fio":
                    bw["fio"]["write"].append(fio(d, "write", size, jobs, True))
                    bw["fio"]["read"].append(fio(d, "read", size, jobs, True))
                else:
                    got = ours(d, "write,read", size, jobs, True, base / "results")
                    bw["ioadvise"]["write"].append(got["write"])
                    bw["ioadvise"]["read"].append(got["read"])
            finally:
                shutil.rmtree(d, ignore_errors=True)
    out = {"size_per_process": size, "processes": jobs, "runs": runs, "runs_MiBps": bw}
    for op in ("write", "read"):
        f, o = statistics.median(bw["fio"][op]), statistics.median(bw["ioadvise"][op])
        out[op] = {"fio_median": f, "ioadvise_median": o, "ratio": o / f}
    return out


def python_overhead(tmpfs: Path, size: int, runs: int) -> dict:
    """Per-transfer overhead of the Python kernel at 1 MiB transfers, measured on tmpfs."""
    # Both tools overwrite a file they wrote once before (untimed), so tmpfs page allocation, which costs more
    # than the copy itself, is out of the comparison and what remains is the per-transfer path.
    fio_bw, our_bw = [], []
    dirs = {t: Path(tempfile.mkdtemp(dir=tmpfs, prefix=f"{t}-")) for t in ("fio", "ioadvise")}
    fio(dirs["fio"], "write", size, 1, False)
    ours(dirs["ioadvise"], "write", size, 1, False, tmpfs / "results", keep=True)
    for i in range(runs):
        for tool in (("fio", "ioadvise") if i % 2 == 0 else ("ioadvise", "fio")):
            if tool == "fio":
                fio_bw.append(fio(dirs["fio"], "write", size, 1, False))
            else:
                our_bw.append(ours(dirs["ioadvise"], "write", size, 1, False, tmpfs / "results", keep=True)["write"])
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
    # (b) the cost of the Python call path itself: a 1-byte pwrite (interpreter + syscall entry) against the
    # time one 1 MiB pwrite takes on the same file system
    import numpy as np
    fd, path = tempfile.mkstemp(dir=tmpfs)
    try:
        big = np.full(MiB, 7, dtype=np.uint8)
        tiny = np.full(1, 7, dtype=np.uint8)
        n = max(1, size // MiB)
        best_big = best_tiny = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for k in range(n):
                os.pwrite(fd, big, k * MiB)
            best_big = min(best_big, (time.perf_counter() - t0) / n)
            t0 = time.perf_counter()
            for k in range(n):
                os.pwrite(fd, tiny, k)
            best_tiny = min(best_tiny, (time.perf_counter() - t0) / n)
    finally:
        os.close(fd)
        os.unlink(path)
    f, o = statistics.median(fio_bw), statistics.median(our_bw)
    return {"size": size, "runs": runs, "fio_psync_MiBps": fio_bw, "ioadvise_MiBps": our_bw,
            "fio_median": f, "ioadvise_median": o,
            "per_transfer_overhead_vs_fio": f / o - 1,          # extra time per transfer, as a fraction
            "one_MiB_pwrite_us": best_big * 1e6, "python_call_us": best_tiny * 1e6,
            "python_call_fraction": best_tiny / best_big}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None, help="local-disk directory (default: a new one in /var/tmp)")
    ap.add_argument("--tmpfs", type=Path, default=Path("/dev/shm"), help="tmpfs directory for part 2")
    ap.add_argument("--size", default="256MiB", help="bytes per process")
    ap.add_argument("--jobs", type=int, default=2, help="processes (fio numjobs / mpiexec -n)")
    ap.add_argument("--runs", type=int, default=21, help="runs per tool")
    ap.add_argument("--tmpfs-size", default="1GiB", help="bytes written per run in part 2")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not shutil.which("fio"):
        raise SystemExit("fio is not installed (apt-get install fio)")
    size = parse_size(args.size)
    base = Path(tempfile.mkdtemp(dir=args.dir or "/var/tmp", prefix="bench-vs-fio-"))
    tmp2 = Path(tempfile.mkdtemp(dir=args.tmpfs, prefix="bench-vs-fio-"))
    try:
        disk = compare_on_disk(base, size, args.jobs, args.runs)
        over = python_overhead(tmp2, parse_size(args.tmpfs_size), args.runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(tmp2, ignore_errors=True)
    report = {"disk_direct": disk, "python_overhead_tmpfs": over}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"local disk, O_DIRECT, 1 MiB sequential, {args.jobs} x {args.size} file per process, "
          f"{args.runs} alternating runs per tool")
    for op in ("write", "read"):
        r = disk[op]
        print(f"  {op:5s}  fio {r['fio_median']:8.1f} MiB/s   ioadvise {r['ioadvise_median']:8.1f} MiB/s   "
              f"ratio {r['ratio']:.3f}  ({'within' if abs(r['ratio'] - 1) <= 0.10 else 'OUTSIDE'} 10%)")
    print(f"tmpfs, buffered 1 MiB overwrites, 1 x {args.tmpfs_size}")
    print(f"  fio psync {over['fio_median']:.0f} MiB/s, ioadvise {over['ioadvise_median']:.0f} MiB/s: "
          f"overhead per transfer {100 * over['per_transfer_overhead_vs_fio']:+.1f}%")
    print(f"  one 1 MiB pwrite {over['one_MiB_pwrite_us']:.1f} us; minimal Python pwrite call "
          f"{over['python_call_us']:.2f} us = {100 * over['python_call_fraction']:.2f}% of a transfer")


if __name__ == "__main__":
    main()
