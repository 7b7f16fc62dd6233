"""Advice latency on a knowledge base of 100,000 runs: the library call and the cold `ioadvise advise --json`.

The runs are synthetic, generated from the model fitted to HA8000's published Lustre measurements (with 10%
log-normal noise) and stored under the system name `synthetic-HA8000` with the note "synthetic"; they only give
the KB its size. The advice is asked for that system, so the fit sees all 100,000 runs.
Usage: .venv/bin/python benchmarks/bench_advise.py [N_RUNS]
"""
from __future__ import annotations

import hashlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ioadvisor.advise import advise
from ioadvisor.center import load_center
from ioadvisor.kb import KB, RunFilter
from ioadvisor.model.validate import make_run
from ioadvisor.model.types import Center, Workload
from ioadvisor.predict import Point, fit_all

SYSTEM = "synthetic-HA8000"


def synthetic_runs(n: int, seed: int = 1) -> list:
    with KB.open(None, create=False) as kb:
        fit = fit_all(kb.runs(RunFilter(system="HA8000", filesystem="lustre", op="write")))[("HA8000", "lustre", "write")]
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        nodes = rnd.choice((1, 1, 2, 4, 8, 16, 24, 32))
        layout = rnd.choice(("shared", "fpp"))
        sc = rnd.choice((1, 2, 3, 4, 6, 8, 16))
        v = fit.predict(Point(clients=nodes, ranks=nodes, shared=layout == "shared", stripes=sc, osts=30))
        out.append(make_run(system=SYSTEM, filesystem="lustre", fs_type="lustre", ost_count=30, op="write",
                            api="POSIX", layout=layout, nodes=nodes, ranks=nodes, stripe_count=sc,
                            stripe_size=1 << 20, value=v * rnd.lognormvariate(0, 0.1), unit="MiB/s",
                            notes="synthetic, generated from the fitted HA8000 model for size"))
    return out


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    tmp = Path(tempfile.mkdtemp(prefix="bench-advise-"))
    try:
        kb_path = tmp / "kb.sqlite"
        t0 = time.perf_counter()
        runs = synthetic_runs(n)
        with KB.open(kb_path) as kb:
            kb.add_runs(runs, source="synthetic", source_hash=hashlib.sha256(b"synthetic%d" % n).hexdigest(),
                        fmt="csv", importer="bench/1")
        print(f"built a KB of {n:,} synthetic runs in {time.perf_counter() - t0:.1f}s")
        ha = load_center("HA8000")
        center = Center(name=SYSTEM, title="synthetic copy of HA8000", filesystems=ha.filesystems, tiers=ha.tiers)
        w = Workload(nodes=16, ranks_per_node=8, bytes_per_rank=1 << 30, api="mpiio", layout="any")
        with KB.open(kb_path) as kb:
            t0 = time.perf_counter()
            a = advise(w, kb, center)
            first = time.perf_counter() - t0
            samples = []
            for _ in range(30):
                t0 = time.perf_counter()
                advise(w, kb, center)
                samples.append(time.perf_counter() - t0)
        rec = a.recommendation
        print(f"recommendation: {rec.config.layout}, {rec.config.stripe_count} stripe(s), "
              f"{rec.prediction.value:,.0f} {rec.prediction.unit} (rests on {rec.prediction.n_runs} runs)")
        print(f"library advise(): first call (fit) {first * 1000:.0f} ms, then median {median_ms(samples):.2f} ms "
              f"over {len(samples)} calls")
        exe = Path(sys.executable).parent / "ioadvise"
        cfg = tmp / "center.toml"
        cfg.write_text(f'name = "{SYSTEM}"\n[[filesystems]]\nname = "lustre"\ntype = "lustre"\nost_count = 30\n'
                       'default_stripe_count = 1\n')
        cmd = [str(exe), "advise", "--kb", str(kb_path), "--center", str(cfg), "--nodes", "16", "--ranks-per-node",
               "8", "--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "any", "--json"]
        cli = []
        for _ in range(7):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            cli.append(time.perf_counter() - t0)
        print(f"cold CLI `ioadvise advise --json`: median {median_ms(cli):.0f} ms over {len(cli)} runs "
              f"(first {cli[0] * 1000:.0f} ms)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
