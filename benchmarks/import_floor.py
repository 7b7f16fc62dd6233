"""What an import of a million runs costs before ioadvisor does anything: the floor under `kb import`.

Two parts of an import's work cannot be avoided by any reader, however fast:
- SQLite storing the runs in the KB's schema: the inserts (the id index kept as they go), the three secondary
  indexes built after the last row (as an import into a KB without runs read in one process builds them; one
  read by a second process keeps the system index current as the rows go in, which costs more) and the commit.
  Measured here on SQLite's own: every run of an existing KB copied, in C, by one `INSERT ... SELECT` into a
  new KB made by ioadvisor's migrations, in the transaction set-up an import uses (a rollback journal, the
  import's page caches), then each index created by the statement that made it, then the commit. No Python runs
  per row.
- Python's csv module splitting the CSV's lines into cells (nothing converted or checked).

The reading can overlap the storing (an import reads in a second process while the first stores), and an
index kept current as the rows go in costs at least what building it after them does. So no import in this
schema on this machine ends sooner than `max(reading, SQLite alone)`: printed with the runs/s it allows, next to
the target of 100,000 runs/s.

Usage: .venv/bin/python benchmarks/import_floor.py [--kb KB] [--csv CSV] [--repeat N]
(default: the 1,000,000-run KB and CSV of benchmarks/scale_data.py, built when missing).
"""
from __future__ import annotations

import argparse
import csv
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_data  # noqa: E402

from ioadvisor.kb import KB  # noqa: E402
from ioadvisor.kb.store import IMPORT_CACHE_KIB, REBUILD_CACHE_KIB, _DeferredIndexes  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of fn()."""
    w, c = time.perf_counter(), cpu()
    fn()
    return time.perf_counter() - w, cpu() - c


def read_cells(path: Path) -> int:
    """Rows of a CSV split into cells by the csv module, and nothing else."""
    with path.open(newline="", encoding="utf-8") as f:
        return sum(1 for _ in csv.reader(f)) - 1


def run_count(source: Path) -> int:
    """How many runs the KB `source` has."""
    with KB.open(source, create=False, reference=False) as kb:
        return kb.count()


def store_floor(source: Path) -> dict[str, tuple[float, float]]:
    """The runs of the KB `source` stored by SQLite alone into a new KB, its indexes left out and built after the
    last row as an import into a KB without runs does (`_DeferredIndexes`): (wall, CPU) of each step."""
    steps: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="import-floor-") as d:
        kb = KB.open(Path(d) / "kb.sqlite")          # the schema the migrations leave
        conn = kb.conn
        conn.execute("PRAGMA main.journal_mode = DELETE")
        conn.execute("PRAGMA main.synchronous = FULL")
        conn.execute(f"PRAGMA main.cache_size = -{IMPORT_CACHE_KIB}")
        deferred = _DeferredIndexes(conn)
        deferred.drop()
        conn.execute("ATTACH DATABASE ? AS src", (f"file:{source}?mode=ro",))
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO main.sources SELECT * FROM src.sources")
        steps["inserts (id index kept)"] = timed(
            lambda: conn.execute("INSERT INTO main.runs SELECT * FROM src.runs ORDER BY rowid"))
        # each index timed on its own, by the statement and with the page cache `_DeferredIndexes.rebuild` uses
        conn.execute(f"PRAGMA main.cache_size = -{REBUILD_CACHE_KIB}")
        for sql in deferred.dropped:
            steps[sql.split(" ON ")[0].replace("CREATE INDEX ", "index ")] = timed(lambda s=sql: conn.execute(s))
        steps["commit"] = timed(lambda: conn.execute("COMMIT"))
        conn.execute("DETACH DATABASE src")
        kb.close()
    return steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", type=Path, help="a KB whose runs are copied (default: the scale KB)")
    ap.add_argument("--csv", type=Path, help="a canonical CSV to split into cells (default: the scale CSV)")
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    kb = opts.kb or scale_data.big_kb()
    path = opts.csv or scale_data.write_csv(scale_data.scale_dir() / "runs-1000000.csv", 1_000_000, 7)
    n = run_count(kb)
    print(f"{n:,} runs of {kb}; CSV {path}")
    reads = [timed(lambda: read_cells(path)) for _ in range(opts.repeat)]
    runs = [store_floor(kb) for _ in range(opts.repeat)]
    med = {k: statistics.median(r[k][0] for r in runs) for k in runs[0]}
    read = statistics.median(w for w, _ in reads)
    print(f"  csv module splitting the CSV into cells: median {read:.2f} s wall "
          f"({statistics.median(c for _, c in reads):.2f} s CPU)")
    for k, v in med.items():
        cpus = statistics.median(r[k][1] for r in runs)
        print(f"  {k}: median {v:.2f} s wall ({cpus:.2f} s CPU)")
    after = sum(v for k, v in med.items() if not k.startswith("inserts"))
    floor = max(read, sum(med.values()))
    print(f"  SQLite alone: {sum(med.values()):.2f} s ({n / sum(med.values()):,.0f} runs/s); after the last row "
          f"(index builds and commit) {after:.2f} s")
    print(f"  floor of an import, reading and storing overlapped: {floor:.2f} s = {n / floor:,.0f} runs/s "
          f"(target 100,000 runs/s: {n / 100_000:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
