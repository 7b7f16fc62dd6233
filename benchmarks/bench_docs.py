"""Docs benchmark: `docs build` time for the reference data and for a knowledge base of 100,000 runs.

The large KB adds one system, `synthetic-100k` (every run is synthetic and labelled so in its notes), written as
canonical CSV files and imported through the real importer, on top of the reference data. All 100,000 runs sit
in one system, the worst case for its page: tables show groups of equal settings, the provenance page is capped.
Each build is repeated; the median wall time is printed. SVG plots are drawn in every build; the last case
also draws a PNG of each plot with matplotlib (`--png`, for slides) without the plot cache.
Usage: .venv/bin/python benchmarks/bench_docs.py [N_RUNS] [REPEATS]
"""
from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ioadvisor.docs import build_site
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB

HEADER = ("source,system,filesystem,fs_type,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")


def make_csv(path: Path, n: int, seed: int) -> None:
    rnd = random.Random(seed)
    lines = [HEADER]
    for _ in range(n):
        fs = rnd.choice(("scratch", "project"))
        op = rnd.choice(("write", "read", "write", "read", "file_create"))
        nodes = rnd.choice((1, 2, 4, 8, 16, 32))
        ranks = nodes * rnd.choice((1, 4, 16))
        if op == "file_create":
            lines.append(f"synthetic,synthetic-100k,{fs},lustre,48,{op},POSIX,fpp,,{nodes},{ranks},,,1,,"
                         f"{rnd.uniform(500, 50000):.1f},ops/s,synthetic run")
            continue
        api = rnd.choice(("POSIX", "MPIIO"))
        coll = rnd.choice(("true", "false")) if api == "MPIIO" else ""
        sc = rnd.choice((1, 2, 4, 8, 16, 48))
        ts = rnd.choice((65536, 1048576, 4194304))
        bw = min(200.0 * ranks, 400.0 * sc, 20000.0) * rnd.uniform(0.7, 1.1)
        lines.append(f"synthetic,synthetic-100k,{fs},lustre,48,{op},{api},{rnd.choice(('shared', 'fpp'))},{coll},"
                     f"{nodes},{ranks},{ts},{ts * 16},{sc},1048576,{bw:.1f},MiB/s,synthetic run")
    path.write_text("\n".join(lines) + "\n")


def timed_build(kb: KB, out: Path, repeats: int, **kw) -> tuple[float, object]:
    times, res = [], None
    for _ in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        res = build_site(out, kb=kb, **kw)
        times.append(time.perf_counter() - t)
    return statistics.median(times), res


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as d:
        os.environ["XDG_CACHE_HOME"] = str(Path(d) / "cache")
        cases = [("en html", dict(langs=("en",), formats=("html",))),
                 ("en+ja html+md", dict(langs=("en", "ja"), formats=("html", "md"))),
                 ("en html with PNGs, drawn", dict(langs=("en",), formats=("html",), png=True, plot_cache=False))]
        with KB.open(Path(d) / "none.sqlite", create=False) as kb:
            for label, kw in cases:
                t, res = timed_build(kb, Path(d) / "ref", repeats, **kw)
                print(f"reference data ({res.runs} runs, {len(res.systems)} systems), {label}: median {t:.2f} s "
                      f"({res.files} files, {res.plots} plots)")
        kb_path = Path(d) / "kb.sqlite"
        per = 10_000
        with KB.open(kb_path) as kb:
            t = time.perf_counter()
            for k in range(0, n, per):
                f = Path(d) / f"part{k // per}.csv"
                make_csv(f, min(per, n - k), k)
                import_file(kb, f)
            print(f"imported {n:,} synthetic runs in {time.perf_counter() - t:.1f} s")
            for label, kw in cases:
                t, res = timed_build(kb, Path(d) / "big", repeats, **kw)
                size = sum(p.stat().st_size for p in (Path(d) / "big").rglob("*") if p.is_file())
                print(f"{res.runs:,} runs ({n:,} synthetic + reference), {label}: median {t:.2f} s "
                      f"({res.files} files, {res.plots} plots, {size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
