"""Evidence flags set at import: cache-sized and above-peak runs are marked, queries can leave them out, and a
KB made before flags existed gains the column with its runs unflagged."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.kb import KB, RunFilter

runner = CliRunner()
FIO = Path(__file__).resolve().parent / "data" / "samples" / "fio"


def _center(tmp_path: Path, memory: str, peak: str) -> Path:
    c = tmp_path / "c.toml"
    c.write_text(f'name = "laptop"\nnode_memory = "{memory}"\n[[filesystems]]\nname = "disk"\ntype = "ext4"\n'
                 f'mount = "/"\nrated_write_bandwidth = "{peak}"\nrated_read_bandwidth = "{peak}"\n')
    return c


def _import(kb: Path, center: Path, f: str) -> None:
    res = runner.invoke(app, ["kb", "import", str(FIO / f), "--system", "laptop", "--filesystem", "disk",
                              "--center", str(center), "--kb", str(kb)])
    assert res.exit_code == 0, res.output


def _list(kb: Path) -> list[dict]:
    res = runner.invoke(app, ["kb", "list", "--kb", str(kb), "--system", "laptop", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_fio_write_that_fit_in_memory_and_beat_the_peak_is_flagged(tmp_path):
    # seqwrite_1m_2jobs: 2 jobs x 64 MiB = 128 MiB buffered on one node at 9,143 MiB/s (9.6 GB/s);
    # 128 MiB <= 8 GiB of memory -> cache-sized; 9,143 MiB/s = 9.59e9 B/s > 2 GB/s -> above-peak
    kb = tmp_path / "kb.sqlite"
    _import(kb, _center(tmp_path, "8GiB", "2GB/s"), "seqwrite_1m_2jobs.json")
    (run,) = _list(kb)
    assert run["op"] == "write" and run["total_bytes"] == 128 << 20 and 9100 < run["value"] < 9200
    assert run["flags"] == ["cache-sized", "above-peak"]
    with KB.open(kb) as store:
        assert store.count(RunFilter(system="laptop")) == 1
        assert store.count(RunFilter(system="laptop", flagged=False)) == 0     # kept out of a fit's query
        assert store.count(RunFilter(system="laptop", flagged=True)) == 1


def test_a_direct_run_and_a_run_larger_than_memory_are_not_flagged(tmp_path):
    kb = tmp_path / "kb.sqlite"
    # 64 MiB of memory < 128 MiB written -> not cache-sized; a 20 GB/s peak > 9.6 GB/s -> not above peak
    _import(kb, _center(tmp_path, "64MiB", "20GB/s"), "seqwrite_1m_2jobs.json")
    # randread_4k_qd16 is O_DIRECT (direct=1) and in ops/s: neither flag can apply however small memory is
    _import(kb, _center(tmp_path, "64TiB", "1MB/s"), "randread_4k_qd16.json")
    runs = _list(kb)
    assert len(runs) == 2 and [r["flags"] for r in runs] == [[], []]
    with KB.open(kb) as store:
        assert store.count(RunFilter(system="laptop", flagged=False)) == 2


def test_bench_read_from_the_page_cache_is_flagged_and_its_write_is_not(tmp_path):
    kb = tmp_path / "kb.sqlite"
    res = runner.invoke(app, ["bench", "run", "-t", "4KiB", "-b", "64KiB", "--dir", str(tmp_path / "d"),
                              "--system", "benchbox", "--filesystem", "disk", "--result-dir", str(tmp_path / "r"),
                              "--kb", str(kb), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["effective"]["mem_total"] > 64 << 10            # 64 KiB fits in any machine's memory
    with KB.open(kb) as store:
        flags = {r.op: r.flags for r in store.runs(RunFilter(system="benchbox"))}
    assert flags == {"write": (), "read": ("cache-sized",)}


def test_a_kb_from_before_flags_is_migrated_with_runs_unflagged(tmp_path):
    kb = tmp_path / "kb.sqlite"
    _import(kb, _center(tmp_path, "8GiB", "2GB/s"), "seqwrite_1m_2jobs.json")
    conn = sqlite3.connect(kb)
    # make it a KB from before the flags migration: drop the column and go back to the version before it
    from ioadvisor.kb.schema import MIGRATIONS
    before = next(i for i, m in enumerate(MIGRATIONS) if "ADD COLUMN flags" in m)
    conn.execute("ALTER TABLE runs DROP COLUMN flags")
    conn.execute(f"PRAGMA user_version = {before}")
    conn.commit()
    conn.close()
    runs = _list(kb)
    assert len(runs) == 1 and runs[0]["flags"] == []
    assert sqlite3.connect(kb).execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
