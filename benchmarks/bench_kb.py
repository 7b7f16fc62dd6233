"""KB benchmark: import throughput (runs/s) and `kb list` latency on a KB of 100,000 runs.

Synthetic runs (clearly labelled system names `synthetic-N`) are generated as canonical CSV files, imported
through the real importer path, then filtered queries and the CLI are timed. Prints medians.
Usage: .venv/bin/python benchmarks/bench_kb.py [N_RUNS]
"""
from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter

HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")


def make_csv(path: Path, n: int, seed: int) -> None:
    rnd = random.Random(seed)
    lines = [HEADER]
    for i in range(n):
        sysname = f"synthetic-{rnd.randrange(20)}"
        op = rnd.choice(("write", "read"))
        api = rnd.choice(("POSIX", "MPIIO"))
        layout = rnd.choice(("shared", "fpp"))
        coll = rnd.choice(("true", "false")) if api == "MPIIO" else ""
        sc = rnd.choice((1, 2, 4, 8, 16))
        lines.append(f"bench,{sysname},lustre,32,{op},{api},{layout},{coll},{rnd.randrange(1, 64)},"
                     f"{rnd.randrange(1, 1024)},1048576,4194304,{sc},1048576,{rnd.uniform(10, 5000):.2f},MB/s,synthetic")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as d:
        os.environ["XDG_CACHE_HOME"] = str(Path(d) / "cache")
        kb_path = Path(d) / "kb.sqlite"
        files = []
        per = 10_000
        for k in range(n // per):
            f = Path(d) / f"part{k}.csv"
            make_csv(f, per, k)
            files.append(f)
        rates = []
        with KB.open(kb_path) as kb:
            for f in files:
                t = time.perf_counter()
                import_file(kb, f)
                rates.append(per / (time.perf_counter() - t))
            print(f"import: median {statistics.median(rates):,.0f} runs/s over {len(files)} files of {per} runs "
                  f"(parse + insert, one transaction each)")
            timings = {}
            for name, flt in {
                "system+op": RunFilter(system="synthetic-3", op="write"),
                "system+op+api+layout": RunFilter(system="synthetic-3", op="write", api="MPIIO", layout="shared"),
                "first 50 (table view)": RunFilter(limit=50),
            }.items():
                ts = []
                for _ in range(15):
                    t = time.perf_counter()
                    rows = kb.runs(flt)
                    ts.append(time.perf_counter() - t)
                timings[name] = (statistics.median(ts) * 1000, len(rows))
            for name, (ms, cnt) in timings.items():
                print(f"list {name}: median {ms:.1f} ms for {cnt} runs (library)")
        cli = [str(Path(sys.executable).parent / "ioadvise"), "kb", "list", "--kb", str(kb_path),
               "--system", "synthetic-3", "--op", "write", "--api", "MPIIO", "--layout", "shared", "--json"]
        ts = []
        for _ in range(7):
            t = time.perf_counter()
            subprocess.run(cli, check=True, stdout=subprocess.DEVNULL)
            ts.append(time.perf_counter() - t)
        print(f"CLI kb list --json (filtered, cold process): median {statistics.median(ts) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
