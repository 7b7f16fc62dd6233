"""Scale benchmark: a KB of 1,000,000 runs with no center file for its largest system.

Measures, each as the median of several cold processes (wall time and peak RSS of the process itself):
- `ioadvise advise --system synthetic-big --json` (a system known only from its runs: the center is derived
  from the KB's summary), after the fits are stored, and once right after the runs changed (fits refitted);
- `ioadvise advise` as a center's user runs it: from the KB published with `kb publish` (IOADVISE_CENTER_KB),
  with an empty home (no KB, no cache); target <= 120 ms and <= 64 MB;
- `ioadvise kb list` with filters (the terminal table and --json);
- `ioadvise docs build` of every system, plots drawn, from an empty cache;
- `ioadvise kb import` of one canonical CSV of 1,000,000 rows into an empty KB (runs/s, peak RSS);
- `ioadvise kb validate --json` of the whole KB (systems above 2,000 runs validated on a bounded sample);
- center loading: a center file of 25,000, 50,000 and 100,000 tiers (one file system per 100 tiers) read and
  checked in this process (median of --repeat loads, at most 3); linear: doubling the tiers doubles the time;
- start-up: the import time of the CLI module (`python -X importtime -c "import ioadvisor.cli"`, its cumulative
  microseconds) and the cold `ioadvise kb list --help` process, which does nothing but start.

The package measured is the one the environment imports (printed first; run from a source tree with
PYTHONPATH=$PWD to measure it). Its bytecode is compiled first when it is missing (PYTHONDONTWRITEBYTECODE set,
or a fresh tree), as an installed package has it: otherwise every process would also compile the package.

The data are synthetic (benchmarks/scale_data.py); the KB and the CSV are built once under /tmp/ioadvise-scale
(or $IOADVISE_SCALE_DIR) and reused. Targets: advise <= 300 ms and <= 150 MB; kb list <= 100 ms; docs build
with every plot drawn <= 10 s and <= 500 MB; import >= 100,000 runs/s and <= 200 MB; validate <= 30 s; a center
of 100,000 tiers <= 10 s and at most 2.5x the time of 50,000. The CPU seconds printed next to each wall time
(both processes of an import, the plot workers of a build) tell what the command costs where other work shares
the CPUs.
Usage: .venv/bin/python benchmarks/bench_scale.py [--repeat N]
       [--skip startup,center,advise,snapshot,list,docs,validate,import]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_data  # noqa: E402

EXE = str(Path(sys.executable).parent / "ioadvise")
# a small parent measures the command: a child forked from this process would count our pages as its own
MEASURE = """
import os, subprocess, sys, time
t = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(p.pid, 0)
sys.stderr.write(f"\\nmeasured {time.perf_counter() - t} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measure(args: list[str], env: dict | None = None) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) and CPU seconds of one `ioadvise` process."""
    p = subprocess.run([sys.executable, "-c", MEASURE, EXE, *args], capture_output=True,
                       env={**os.environ, **(env or {})})
    err, _, tail = p.stderr.decode().rpartition("\nmeasured ")
    if p.returncode != 0:
        raise SystemExit(f"ioadvise {' '.join(args)} failed ({p.returncode}):\n{err}")
    wall, rss, cpu = tail.split()
    return float(wall), int(rss) / 1024, float(cpu)


def report(label: str, samples: list[tuple[float, float, float]], unit: str = "ms") -> None:
    walls = [s[0] for s in samples]
    scale = 1000 if unit == "ms" else 1
    print(f"{label}: median {statistics.median(walls) * scale:,.{0 if unit == 'ms' else 1}f} {unit} "
          f"(min {min(walls) * scale:,.{0 if unit == 'ms' else 1}f}, cpu median "
          f"{statistics.median(s[2] for s in samples) * scale:,.{0 if unit == 'ms' else 1}f} {unit}), "
          f"peak RSS {max(s[1] for s in samples):.0f} MB, {len(samples)} runs")


def cli_import_us() -> int:
    """Cumulative microseconds `python -X importtime` reports for importing the typer root group (ioadvisor.cli.root,
    what every command but a plain `advise` loads) in a fresh process."""
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import ioadvisor.cli.root"], capture_output=True,
                       text=True, check=True)
    line = next(ln for ln in p.stderr.splitlines() if ln.rstrip().endswith("| ioadvisor.cli.root"))
    return int(line.split("|")[1])


def center_text(tiers: int) -> str:
    """A center file of `tiers` tiers, one file system per 100 of them, as arrays of inline tables (100,000 tiers
    in 3.5 MB, under the 4 MiB a center file may be)."""
    fss = ",\n".join(f'{{name="f{i}",type="lustre"}}' for i in range(max(1, tiers // 100)))
    ts = ",\n".join(f'{{name="t{i}",filesystem="f{i // 100}"}}' for i in range(tiers))
    return f'name = "Big"\nfilesystems = [\n{fss}]\ntiers = [\n{ts}]\n'


def center_loading(repeat: int) -> None:
    """Median seconds to read and check a center of 25,000, 50,000 and 100,000 tiers, and the ratio per doubling."""
    from ioadvisor.center.file import read_center_file
    medians = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-center-") as d:
        for n in (25_000, 50_000, 100_000):
            p = Path(d) / f"c{n}.toml"
            p.write_text(center_text(n))
            ts = []
            for _ in range(max(1, min(3, repeat))):
                t = time.perf_counter()
                assert len(read_center_file(p).tiers) == n
                ts.append(time.perf_counter() - t)
            medians[n] = statistics.median(ts)
            print(f"center file of {n:,} tiers ({p.stat().st_size / 1e6:.1f} MB), read and checked: median "
                  f"{medians[n]:.2f} s ({medians[n] / n * 1e6:.0f} us per tier), {len(ts)} loads")
    print(f"  100,000 / 50,000 tiers: {medians[100_000] / medians[50_000]:.2f}x the time (linear: 2)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--skip", default="")
    opts = ap.parse_args()
    skip = set(filter(None, opts.skip.split(",")))
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    pkg = Path(subprocess.run([sys.executable, "-c", "import ioadvisor; print(ioadvisor.__file__)"],
                              capture_output=True, text=True, check=True).stdout.strip()).parent
    compiled = subprocess.run([sys.executable, "-m", "compileall", "-q", str(pkg)], capture_output=True)
    print(f"package measured: {pkg} (bytecode {'up to date' if compiled.returncode == 0 else 'NOT compiled'})")
    t = time.perf_counter()
    kb = scale_data.big_kb()
    print(f"KB: {kb} ({kb.stat().st_size / 1e6:.0f} MB, ready in {time.perf_counter() - t:.0f} s)")
    conn = sqlite3.connect(kb)
    n_runs = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    n_big = conn.execute("SELECT n_runs FROM system_fs WHERE system = ?", (scale_data.BIG,)).fetchall()
    print(f"{n_runs:,} runs; {scale_data.BIG}: {sum(r[0] for r in n_big):,} runs, no center file")

    if "startup" not in skip:
        us = [cli_import_us() for _ in range(opts.repeat)]
        print(f"import ioadvisor.cli.root (-X importtime, cumulative): median {statistics.median(us) / 1000:.1f} ms "
              f"(min {min(us) / 1000:.1f}), {len(us)} runs")
        report("ioadvise kb list --help, cold process (start-up only)",
               [measure(["kb", "list", "--help"]) for _ in range(opts.repeat)])

    if "center" not in skip:
        center_loading(opts.repeat)

    if "advise" not in skip:
        advise = ["advise", "--kb", str(kb), "--system", scale_data.BIG, "--nodes", "16", "--ranks-per-node", "8",
                  "--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "any", "--json"]
        # as after an import of the system's runs: the first call fits and stores (the KB is brought to this
        # schema, which has the table, first); the other systems' stored fits stay, as the docs build and a
        # center's other users find them
        from ioadvisor.kb import KB
        KB.open(kb, reference=False).close()
        conn.execute("DELETE FROM advise_fits WHERE system = ?", (scale_data.BIG,))
        conn.commit()
        report("advise, first call after the runs changed (fits the system, stores the fits)",
               [measure(advise)], unit="s")
        report("advise, cold process (center derived from the KB summary, stored fits)",
               [measure(advise) for _ in range(opts.repeat)])

    if "snapshot" not in skip:
        # the center's deployment: the KB published (fits made at publication), users with an empty home
        snap = scale_data.scale_dir() / "published.sqlite"
        env = {"IOADVISE_CENTER_KB": ""}
        if not snap.exists() or snap.stat().st_mtime < kb.stat().st_mtime:
            report("kb publish (the snapshot with every system's fits)",
                   [measure(["kb", "publish", str(snap), "--kb", str(kb)], env=env)], unit="s")
        with tempfile.TemporaryDirectory(prefix="bench-scale-home-") as home:
            user = {"IOADVISE_CENTER_KB": str(snap), "HOME": home, "XDG_CACHE_HOME": str(Path(home) / "cache"),
                    "XDG_DATA_HOME": str(Path(home) / "share"), "IOADVISE_KB": ""}
            args = ["advise", "--system", scale_data.BIG, "--nodes", "16", "--ranks-per-node", "8",
                    "--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "any", "--json"]
            report("advise from the published snapshot, cold process, empty home",
                   [measure(args, env=user) for _ in range(opts.repeat)])
            left = sorted(str(p.relative_to(home)) for p in Path(home).rglob("*"))
            print(f"  files the users' processes wrote in the home: {left or 'none'}")

    if "list" not in skip:
        small = scale_data.SMALL[3]
        from ioadvisor.kb import KB, RunFilter
        with KB.open(kb, create=False) as store:
            for flt in (RunFilter(system=small, op="write", api="MPIIO", layout="shared"),
                        RunFilter(system=scale_data.BIG, op="read", layout="fpp")):
                for what, fn in (("count + first 50 (the table)",
                                  lambda: (store.count(flt), store.runs(RunFilter(**{**flt.__dict__, "limit": 50})))),
                                 ("every matching run as JSON records", lambda: store.records(flt))):
                    if flt.system == scale_data.BIG and what.startswith("every"):
                        continue          # 180,000 records: a bulk export, not a listing
                    ts = []
                    for _ in range(opts.repeat):
                        t = time.perf_counter()
                        fn()
                        ts.append(time.perf_counter() - t)
                    print(f"kb list library, {flt.system} {flt.op} {flt.api or ''} {flt.layout}, {what}: "
                          f"median {statistics.median(ts) * 1000:.1f} ms ({store.count(flt):,} matching runs)")
        for label, args in (
                (f"kb list --system {small} --op write --api MPIIO --layout shared (table)",
                 ["--system", small, "--op", "write", "--api", "MPIIO", "--layout", "shared"]),
                (f"kb list --system {scale_data.BIG} --op read --layout fpp (table)",
                 ["--system", scale_data.BIG, "--op", "read", "--layout", "fpp"]),
                (f"kb list --system {small} --op write --api MPIIO --layout shared --json",
                 ["--system", small, "--op", "write", "--api", "MPIIO", "--layout", "shared", "--json"])):
            report(label, [measure(["kb", "list", "--kb", str(kb), *args]) for _ in range(opts.repeat)])

    if "docs" not in skip:
        cold, warm = [], []
        with tempfile.TemporaryDirectory(prefix="bench-scale-docs-") as d:
            env = {"XDG_CACHE_HOME": str(Path(d) / "cache")}
            for i in range(max(2, min(4, opts.repeat))):
                shutil.rmtree(Path(d) / "site", ignore_errors=True)
                (cold if i == 0 else warm).append(
                    measure(["docs", "build", "--kb", str(kb), "--out", str(Path(d) / "site")], env=env))
        report("docs build, every system, empty cache (cold: every plot drawn)", cold, unit="s")
        report("docs build again, the cache filled (a rebuild; SVG plots are drawn every time)", warm, unit="s")
        print("  (peak RSS is the build process's; the systems are read in worker processes of their own)")

    if "validate" not in skip:
        cold, warm = [], []
        with tempfile.TemporaryDirectory(prefix="bench-scale-validate-") as d:
            for i in range(max(1, min(3, opts.repeat // 3))):
                env = {"XDG_CACHE_HOME": str(Path(d) / f"cache{i}")}      # an empty fit cache each time
                cold.append(measure(["kb", "validate", "--kb", str(kb), "--json"], env=env))
            warm.append(measure(["kb", "validate", "--kb", str(kb), "--json"], env=env))
        report("kb validate --json, every system (above 2,000 runs: a bounded sample), empty fit cache", cold, unit="s")
        report("kb validate --json, the same with every fit in the fit cache (a second run)", warm, unit="s")
        print("  (CPU and peak RSS include the worker processes the systems are validated in)")

    if "import" not in skip:
        csv = scale_data.write_csv(scale_data.scale_dir() / "runs-1000000.csv", 1_000_000, 7)
        samples = []
        for _ in range(max(1, min(3, opts.repeat // 3))):
            with tempfile.TemporaryDirectory(prefix="bench-scale-import-", dir=scale_data.scale_dir()) as d:
                samples.append(measure(["kb", "import", "--kb", str(Path(d) / "kb.sqlite"), str(csv)]))
        report("kb import of a 1,000,000-row CSV", samples, unit="s")
        print(f"  = {1_000_000 / statistics.median(s[0] for s in samples):,.0f} runs/s wall, "
              f"{1_000_000 / statistics.median(s[2] for s in samples):,.0f} runs/s of CPU")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
