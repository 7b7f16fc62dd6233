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


def _site_center(tmp_path: Path, root: Path, memory: str = "8GiB", peak: str = "0.001MB/s") -> Path:
    """A site's own center file (not shipped): its file system's mount holds `root`."""
    c = tmp_path / "site" / "sitebox.toml"
    c.parent.mkdir(exist_ok=True)
    c.write_text(f'name = "sitebox"\nnode_memory = "{memory}"\n[[filesystems]]\nname = "scratch"\ntype = "ext4"\n'
                 f'mount = "{root}"\nrated_write_bandwidth = "{peak}"\nrated_read_bandwidth = "{peak}"\n')
    return c


def _flags(kb: Path, system: str = "sitebox") -> dict[str, tuple[str, ...]]:
    with KB.open(kb) as store:
        return {r.op: r.flags for r in store.runs(RunFilter(system=system))}


def test_every_road_into_the_kb_flags_the_same_runs_the_same_way(tmp_path, monkeypatch):
    # One bench result (64 KiB per rank, synced writes). The site's center rates its file system at 1 kB/s,
    # so any measured bandwidth (well above 0.001 MB/s = 1,000 B/s) is above its peak; the read of 64 KiB fits
    # in the MemTotal the benchmark recorded -> cache-sized; the write was fsynced before close -> not.
    # Forbidden: a road that gives other flags (before, `kb import --center` added cache-sized to the write,
    # `bench run --center` left out above-peak, a plain import gave none and nothing could add them later).
    monkeypatch.delenv("IOADVISE_CENTERS", raising=False)
    root = tmp_path / "scratch"
    (root / "d").mkdir(parents=True)
    center = _site_center(tmp_path, root)
    want = {"write": ("above-peak",), "read": ("cache-sized", "above-peak")}

    kb1 = tmp_path / "kb1.sqlite"
    res = runner.invoke(app, ["bench", "run", "-t", "4KiB", "-b", "64KiB", "--dir", str(root / "d"),
                              "--center", str(center), "--result-dir", str(tmp_path / "r"), "--kb", str(kb1),
                              "--json"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.stdout)["result_file"]
    assert _flags(kb1) == want

    kb2 = tmp_path / "kb2.sqlite"
    res = runner.invoke(app, ["kb", "import", result, "--center", str(center), "--kb", str(kb2)])
    assert res.exit_code == 0, res.output
    assert _flags(kb2) == want

    # imported without the center: only what the result itself says (the read's MemTotal) ...
    kb3 = tmp_path / "kb3.sqlite"
    res = runner.invoke(app, ["kb", "import", result, "--kb", str(kb3)])
    assert res.exit_code == 0, res.output
    assert _flags(kb3) == {"write": (), "read": ("cache-sized",)}
    # ... importing again with the center adds nothing and says how to re-judge
    res = runner.invoke(app, ["kb", "import", result, "--center", str(center), "--kb", str(kb3)])
    assert res.exit_code == 0 and "kb check --center sitebox" in res.output, res.output
    # kb check: a dry run first (nothing stored), then --yes
    res = runner.invoke(app, ["kb", "check", "--center", str(center), "--kb", str(kb3), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["dry_run"] is True and sorted((c["op"], tuple(c["added"])) for c in doc["changed"]) == [
        ("read", ("above-peak",)), ("write", ("above-peak",))]
    assert _flags(kb3) == {"write": (), "read": ("cache-sized",)}
    res = runner.invoke(app, ["kb", "check", "--center", str(center), "--kb", str(kb3), "--yes"])
    assert res.exit_code == 0 and "2 run(s) of sitebox changed: 2 flag(s) added, 0 removed" in res.output, res.output
    assert _flags(kb3) == want
    # a second check finds nothing to change
    res = runner.invoke(app, ["kb", "check", "--center", str(center), "--kb", str(kb3), "--json"])
    assert json.loads(res.stdout)["changed"] == []

    # the site's center found by name in IOADVISE_CENTERS, without --center
    monkeypatch.setenv("IOADVISE_CENTERS", str(center.parent))
    kb4 = tmp_path / "kb4.sqlite"
    res = runner.invoke(app, ["kb", "import", result, "--kb", str(kb4)])
    assert res.exit_code == 0, res.output
    assert _flags(kb4) == want


def test_kb_check_adds_and_removes_flags_and_list_and_show_mark_them(tmp_path):
    # seqwrite_1m_2jobs: 128 MiB buffered on one node at 9,143 MiB/s = 9.59e9 B/s, imported without a center
    kb = tmp_path / "kb.sqlite"
    res = runner.invoke(app, ["kb", "import", str(FIO / "seqwrite_1m_2jobs.json"), "--system", "laptop",
                              "--filesystem", "disk", "--kb", str(kb)])
    assert res.exit_code == 0, res.output
    assert _list(kb)[0]["flags"] == []
    # 8 GiB of memory >= 128 MiB -> cache-sized; 2 GB/s < 9.59 GB/s -> above-peak
    res = runner.invoke(app, ["kb", "check", "--center", str(_center(tmp_path, "8GiB", "2GB/s")),
                              "--system", "laptop", "--kb", str(kb), "--yes"])
    assert res.exit_code == 0 and "+cache-sized, +above-peak" in res.output, res.output
    (run,) = _list(kb)
    assert run["flags"] == ["cache-sized", "above-peak"]
    res = runner.invoke(app, ["kb", "list", "--kb", str(kb), "--system", "laptop"])
    assert "cache-sized,above-peak" in res.output and "left out of fits" in res.output, res.output
    res = runner.invoke(app, ["kb", "show", run["id"], "--kb", str(kb)])
    assert "page cache" in res.output and "rated peak" in res.output, res.output
    # a center that says the nodes have 64 MiB (< 128 MiB) and a 20 GB/s peak (> 9.59 GB/s): both removed,
    # and the run is part of the fits again
    res = runner.invoke(app, ["kb", "check", "--center", str(_center(tmp_path, "64MiB", "20GB/s")),
                              "--system", "laptop", "--kb", str(kb), "--yes", "--json"])
    assert res.exit_code == 0, res.output
    (ch,) = json.loads(res.stdout)["changed"]
    assert ch["removed"] == ["cache-sized", "above-peak"] and ch["added"] == [] and ch["flags"] == []
    with KB.open(kb) as store:
        assert store.count(RunFilter(system="laptop", flagged=False)) == 1


def test_kb_check_of_a_bad_center_file_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nnode_memory = "lots"\n')
    kb = tmp_path / "kb.sqlite"
    _import(kb, _center(tmp_path, "8GiB", "2GB/s"), "seqwrite_1m_2jobs.json")
    res = runner.invoke(app, ["kb", "check", "--center", str(bad), "--kb", str(kb)])
    assert res.exit_code == 2 and "bad.toml:2" in res.output and "Traceback" not in res.output, res.output


def test_relabelled_runs_are_judged_by_the_center_of_their_new_name(tmp_path, monkeypatch):
    """A run imported under a name no center has keeps no center flag; relabelled to the name of a center that
    rates its file system at 2 GB/s, its 9,143 MiB/s (9.59e9 B/s > 2e9) is flagged above-peak, and 128 MiB on a
    node of 8 GiB cache-sized, as an import under that name would have flagged it. Not: the old flags carried
    over, which left the run in every fit of the new system."""
    center = _center(tmp_path, "8GiB", "2GB/s")
    monkeypatch.setenv("IOADVISE_CENTERS", str(center.parent))
    kb = tmp_path / "kb.sqlite"
    res = runner.invoke(app, ["kb", "import", str(FIO / "seqwrite_1m_2jobs.json"), "--system", "typo-laptop",
                              "--filesystem", "disk", "--kb", str(kb)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["kb", "list", "--kb", str(kb), "--system", "typo-laptop", "--json"])
    assert [r["flags"] for r in json.loads(res.stdout)] == [[]]
    res = runner.invoke(app, ["kb", "relabel", "--kb", str(kb), "--system", "typo-laptop", "--to-system",
                              "laptop", "--yes", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["flags_changed"] == 1
    (run,) = _list(kb)
    assert run["flags"] == ["cache-sized", "above-peak"]
    # relabelled again to a name without a center: the flags stay (nothing judges them otherwise)
    res = runner.invoke(app, ["kb", "relabel", "--kb", str(kb), "--system", "laptop", "--to-system", "other",
                              "--yes", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["flags_changed"] == 0, res.output


def test_an_ior_write_synced_before_close_is_judged_alike_on_every_road(tmp_path, monkeypatch):
    # posix_fpp_2ranks.txt: `ior ... -e -t 1m -b 32m`, 2 ranks on 1 node: 64 MiB per node <= 8 GiB of memory.
    # Its write was fsynced before the timed close (-e), as `ioadvise bench` writes are, so it measured the
    # storage: not cache-sized; its read (64 MiB buffered) is. mpiio_indep_2ranks.json has no -e: its write of
    # 64 MiB stays cache-sized. Forbidden: the synced write flagged by the import, by `kb check` or by a relabel
    # (before, every road flagged it and fits left it out).
    monkeypatch.delenv("IOADVISE_CENTERS", raising=False)
    samples = Path(__file__).resolve().parent / "data" / "samples" / "ior"
    center = _site_center(tmp_path, Path("/scratch"), peak="1TB/s")
    kb = tmp_path / "kb.sqlite"
    res = runner.invoke(app, ["kb", "import", str(samples / "posix_fpp_2ranks.txt"),
                              str(samples / "mpiio_indep_2ranks.json"), "--system", "sitebox", "--center", str(center), "--kb", str(kb)])
    assert res.exit_code == 0, res.output

    def flags() -> dict[tuple[str, str], tuple[str, ...]]:
        with KB.open(kb) as store:
            return {(r.api, r.op): r.flags for r in store.runs(RunFilter()) if r.system in ("sitebox", "other")}
    want = {("POSIX", "write"): (), ("POSIX", "read"): ("cache-sized",), ("MPIIO", "write"): ("cache-sized",),
            ("MPIIO", "read"): ("cache-sized",)}
    assert flags() == want
    res = runner.invoke(app, ["kb", "check", "--center", str(center), "--kb", str(kb), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["changed"] == [], res.output
    # relabelled to a system whose center (found by name) rates nothing above these runs: judged again, alike
    other = tmp_path / "other" / "other.toml"
    other.parent.mkdir()
    other.write_text(center.read_text().replace('name = "sitebox"', 'name = "other"'))
    monkeypatch.setenv("IOADVISE_CENTERS", str(other.parent))
    res = runner.invoke(app, ["kb", "relabel", "--system", "sitebox", "--to-system", "other", "--kb", str(kb),
                              "--yes"])
    assert res.exit_code == 0, res.output
    assert flags() == want
