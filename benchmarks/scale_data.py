"""Synthetic data for the scale benchmarks: canonical CSV files and a KB of a million runs built from them.

Every run is synthetic and says so in its notes ("synthetic run"); system names start with `synthetic-`.
Nine tenths of the runs belong to one system, `synthetic-big`, for which no center file exists (the case of a
center that only ran `kb import --system`); the rest spread over twenty small systems so that filtered listings
match a few thousand runs. The values follow a simple bound (clients x per-client rate, stripes x per-OST rate,
a ceiling) with noise: they only give the KB its size and realistic groups of equal settings.

The KB is built once into a directory under /tmp (or $IOADVISE_SCALE_DIR) and reused by later runs.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

HEADER = ("source,system,filesystem,fs_type,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")
BIG = "synthetic-big"
SMALL = [f"synthetic-s{i:02d}" for i in range(20)]


def scale_dir() -> Path:
    d = Path(os.environ.get("IOADVISE_SCALE_DIR") or "/tmp/ioadvise-scale")
    d.mkdir(parents=True, exist_ok=True)
    return d


def rows(n: int, seed: int):
    """`n` CSV lines (without newline) of synthetic runs."""
    rnd = random.Random(seed)
    for _ in range(n):
        system = BIG if rnd.random() < 0.9 else rnd.choice(SMALL)
        fs = rnd.choice(("scratch", "project"))
        osts = 48 if fs == "scratch" else 16
        op = rnd.choice(("write", "read", "write", "read", "file_create"))
        nodes = rnd.choice((1, 2, 4, 8, 16, 32))
        ranks = nodes * rnd.choice((1, 4, 16))
        if op == "file_create":
            yield (f"synthetic,{system},{fs},lustre,{osts},{op},POSIX,fpp,,{nodes},{ranks},,,1,,"
                   f"{rnd.uniform(500, 50000):.1f},ops/s,synthetic run")
            continue
        api = rnd.choice(("POSIX", "MPIIO"))
        coll = rnd.choice(("true", "false")) if api == "MPIIO" else ""
        sc = rnd.choice((1, 2, 4, 8, 16, osts))
        ts = rnd.choice((65536, 1048576, 4194304))
        bw = min(200.0 * ranks, 400.0 * sc, 20000.0) * rnd.uniform(0.7, 1.1)
        yield (f"synthetic,{system},{fs},lustre,{osts},{op},{api},{rnd.choice(('shared', 'fpp'))},{coll},"
               f"{nodes},{ranks},{ts},{ts * 16},{sc},1048576,{bw:.1f},MiB/s,synthetic run")


def write_csv(path: Path, n: int, seed: int) -> Path:
    """A canonical CSV of `n` synthetic runs, written line by line (never all in memory)."""
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(HEADER + "\n")
        for line in rows(n, seed):
            f.write(line + "\n")
    os.replace(tmp, path)
    return path


def big_kb(n: int = 1_000_000, per_file: int = 50_000) -> Path:
    """A KB of `n` synthetic runs imported through the real importer from files of `per_file` runs (built once)."""
    d = scale_dir()
    kb_path = d / f"kb-{n}.sqlite"
    if kb_path.exists():
        return kb_path
    from ioadvisor.ingest import import_file
    from ioadvisor.kb import KB
    tmp = d / f"kb-{n}.building.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    with KB.open(tmp) as kb:
        for k in range(0, n, per_file):
            f = write_csv(d / f"part-{n}-{k // per_file}.csv", min(per_file, n - k), k)
            import_file(kb, f)
            f.unlink()
        kb.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.replace(tmp, kb_path)
    return kb_path
