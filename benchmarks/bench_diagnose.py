"""Wall time and peak memory of `ioadvise diagnose LOG --json`, side by side with Drishti, on real Darshan logs.

The logs: every distinct log shipped in the darshan wheel and every log in --logs (default: the repository's
sibling `shared/darshan`, real logs in the current 3.41 format, when it exists).

Per log and tool, the median of --runs cold runs (a fresh process each, as a user runs it):
- wall time, and CPU time of the command with every child it reaped (independent of the machine's load);
- peak RSS: the largest of the command and its reaped children (wait4 reports both; ioadvise reads the log in
  a child process).
With --drishti (the path of a `drishti` executable, installed in a virtual environment of its own), the two
commands run alternately on each log, the order swapped on every repeat, so both see the same load; the ratio
is Drishti's median over ioadvise's, on the logs both read (exit 0). Without it only ioadvise is measured, and
`diagnose()` in a running interpreter (the log is still parsed in a child process) is timed as well.

    python benchmarks/bench_diagnose.py [--runs 7] [--drishti PATH] [--logs DIR] [--json]

The reading child takes PyDarshan's C declarations already parsed from a cache file the first diagnosis writes
(ioadvisor/darshanlog/ffi_cache.py): ioadvise runs with a cache directory of its own here, empty at the start; the
first diagnosis (which parses and writes it) is timed apart and reported, and every measured run is one after it.

Targets: a median over the logs of at most 0.2 s and 64 MB per `ioadvise diagnose`, at least 3x faster than
Drishti; the last lines give the medians and the load average before and after the run.
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

TARGET_S = 0.2
TARGET_MB = 64.0
TARGET_RATIO = 3.0
ROOT = Path(__file__).resolve().parent.parent


def _wheel_logs() -> list[Path]:
    """Every distinct log in the darshan wheel (some are shipped twice under two names). The package is found,
    not imported: importing it loads numpy and pandas into this process, and a command started from here would
    report this process's size as its own peak RSS (on Linux a child's peak RSS starts from its parent's at fork)."""
    import hashlib
    from importlib.util import find_spec
    spec = find_spec("darshan")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the darshan package is not installed")
    out, seen = [], set()
    for p in sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.darshan")):
        h = hashlib.sha256(p.read_bytes()).hexdigest()
        if h not in seen:
            seen.add(h)
            out.append(p)
    return out


def _logs(extra: Path | None) -> list[Path]:
    """Every distinct log in the wheel, then the logs in `extra`."""
    logs = _wheel_logs()
    if extra is not None and extra.is_dir():
        logs += sorted(extra.glob("*.darshan"))
    return logs


def _ioadvise_cmd(log: Path) -> list[str]:
    exe = Path(sys.executable).with_name("ioadvise")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ioadvisor.cli"]
    return cmd + ["diagnose", str(log), "--json"]


def _run(cmd: list[str], cwd: str, env: dict | None = None) -> tuple[int, float, float, float]:
    """(exit code, wall s, CPU s of the command and its reaped children, peak RSS MB) of one cold run."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0  # KiB on Linux


def _lib_once(log: Path) -> float:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from ioadvisor.diagnose import diagnose
    t0 = time.perf_counter()
    diagnose(log, use_kb=False)
    return time.perf_counter() - t0


def _median(runs: list[tuple[int, float, float, float]]) -> dict[str, float]:
    return {"wall_s": round(statistics.median(r[1] for r in runs), 3),
            "cpu_s": round(statistics.median(r[2] for r in runs), 3),
            "peak_rss_mb": round(statistics.median(r[3] for r in runs), 1)}


def _compile_ioadvisor() -> None:
    """Byte-compile the ioadvisor package the command will import, as pip does when it installs it: a source
    tree run with PYTHONDONTWRITEBYTECODE would otherwise compile every module on every start."""
    import compileall
    from importlib.util import find_spec
    spec = find_spec("ioadvisor")      # as the command finds it: PYTHONPATH first, then the installed package
    if spec is not None and spec.origin:
        compileall.compile_dir(str(Path(spec.origin).parent), quiet=1)


def measure(logs: list[Path], runs: int, drishti: str | None) -> dict:
    _compile_ioadvisor()
    rows = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as cwd:      # Drishti may write next to where it runs
        env = {**os.environ, "XDG_CACHE_HOME": os.path.join(cwd, "cache")}     # ioadvise's cache, empty
        first = _run(_ioadvise_cmd(logs[0]), cwd, env)
        for log in logs:
            mine: list = []
            theirs: list = []
            for r in range(runs):
                order = [("ioadvise", mine), ("drishti", theirs)] if drishti else [("ioadvise", mine)]
                for tool, acc in (order if r % 2 == 0 else order[::-1]):
                    cmd = _ioadvise_cmd(log) if tool == "ioadvise" else [drishti, str(log)]
                    acc.append(_run(cmd, cwd, env if tool == "ioadvise" else None))
            row: dict = {"log": log.name, "bytes": log.stat().st_size,
                         "ioadvise_exit": mine[0][0], "ioadvise": _median(mine)}
            if drishti:
                row["drishti_exit"] = theirs[0][0]
                row["drishti"] = _median(theirs)
                row["both_read"] = mine[0][0] == 0 and theirs[0][0] == 0
                row["ratio"] = round(row["drishti"]["wall_s"] / row["ioadvise"]["wall_s"], 2)
            rows.append(row)
    load_after = os.getloadavg()
    if not drishti:     # after every cold run: importing ioadvisor here would add to their peak RSS
        for log, row in zip(logs, rows):
            row["lib_wall_s"] = round(statistics.median(_lib_once(log) for _ in range(runs)), 3) \
                if row["ioadvise_exit"] == 0 else None
    both = [r for r in rows if r.get("both_read", True) and r["ioadvise_exit"] == 0]
    med: dict = {"logs": len(both)}
    for tool in ("ioadvise", "drishti") if drishti else ("ioadvise",):
        med[tool] = {k: round(statistics.median(r[tool][k] for r in both), 3)
                     for k in ("wall_s", "cpu_s", "peak_rss_mb")}
    if drishti:
        med["ratio_of_medians"] = round(med["drishti"]["wall_s"] / med["ioadvise"]["wall_s"], 2)
        med["median_ratio"] = round(statistics.median(r["ratio"] for r in both), 2)
        med["cpu_ratio_of_medians"] = round(med["drishti"]["cpu_s"] / med["ioadvise"]["cpu_s"], 2)
    med["within_target"] = (med["ioadvise"]["wall_s"] <= TARGET_S and med["ioadvise"]["peak_rss_mb"] <= TARGET_MB
                            and (not drishti or med["ratio_of_medians"] >= TARGET_RATIO))
    med["first_diagnosis_empty_cache"] = {"log": logs[0].name, "exit": first[0], "wall_s": round(first[1], 3),
                                          "cpu_s": round(first[2], 3)}
    return {"runs": runs, "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after], "logs": rows, "median": med}


def _print(res: dict, drishti: bool) -> None:
    head = f"{'log':44} {'size':>8} {'ioa s':>6} {'cpu s':>6} {'MB':>6}"
    head += f" {'dri s':>6} {'cpu s':>6} {'MB':>6} {'ratio':>6}" if drishti else f" {'lib s':>6}"
    print(head)

    def cells(x: dict) -> str:
        return f"{x['wall_s']:>6.3f} {x['cpu_s']:>6.3f} {x['peak_rss_mb']:>6.1f}"

    for r in res["logs"]:
        line = f"{r['log'][:44]:44} {r['bytes']:>8} "
        line += cells(r["ioadvise"]) if r["ioadvise_exit"] == 0 else f"{'exit ' + str(r['ioadvise_exit']):>20}"
        if drishti:
            line += " " + (cells(r["drishti"]) + f" {r['ratio']:>6.2f}" if r["both_read"]
                           else f"{'exit ' + str(r['drishti_exit']):>20}  (not compared)")
        else:
            line += f" {r['lib_wall_s']:>6.3f}" if r["lib_wall_s"] is not None else ""
        print(line)
    m = res["median"]
    line = f"{'median over ' + str(m['logs']) + ' logs' + (' both read' if drishti else ''):44} {'':>8} "
    line += cells(m["ioadvise"])
    if drishti:
        line += " " + cells(m["drishti"]) + f" {m['ratio_of_medians']:>6.2f}"
    print(line)
    if drishti:
        print(f"Drishti/ioadvise: {m['ratio_of_medians']}x (medians' ratio), {m['median_ratio']}x (median of the "
              f"per-log ratios), {m['cpu_ratio_of_medians']}x in CPU time")
    f = m["first_diagnosis_empty_cache"]
    print(f"first diagnosis, with the parsed-declarations cache still empty ({f['log'][:40]}): {f['wall_s']:.3f} s, "
          f"{f['cpu_s']:.3f} s of CPU (exit {f['exit']})")
    print(f"load average (1, 5, 15 min) before {res['load_average_before']}, after {res['load_average_after']} on "
          f"{res['cpus']} CPUs; {res['runs']} runs per log and tool")
    print(f"target (<= {TARGET_S} s, <= {TARGET_MB:.0f} MB" + (f", >= {TARGET_RATIO:.0f}x Drishti" if drishti else "")
          + f"): {'met' if m['within_target'] else 'MISSED'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--drishti", help="path of a drishti executable to run side by side")
    ap.add_argument("--logs", type=Path, default=ROOT.parent / "shared" / "darshan",
                    help="directory of further .darshan logs (default: ../shared/darshan if it exists)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    res = measure(_logs(args.logs.resolve()), args.runs, args.drishti)   # the commands run in a temporary cwd
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        _print(res, bool(args.drishti))


if __name__ == "__main__":
    main()
