"""The guide of a file system with many runs is summarised by sqlite: its table groups and plots must be the
ones all its runs give when read into memory."""
from __future__ import annotations

import random

from ioadvisor.docs import collect, plots
from ioadvisor.kb import KB
from ioadvisor.model.validate import make_run


def _runs(n: int, seed: int = 3) -> list:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        op = rnd.choice(("write", "read", "file_create", "randread"))
        meta = op in ("file_create", "randread")
        out.append(make_run(
            value=float(rnd.choice((100, 200, 250, 400))) if i % 5 == 0 else round(rnd.uniform(10, 900), 1),
            unit="ops/s" if meta else "MiB/s", system="Many", filesystem=rnd.choice(("lus", "")),
            op=op, api=None if meta else rnd.choice(("POSIX", None, "MPIIO")),
            layout=rnd.choice(("shared", "fpp", None)), collective=rnd.choice((None, True, False)),
            nodes=rnd.choice((1, 2, None)), ranks=rnd.choice((1, 4, 16)), stripe_count=rnd.choice((1, 4, None)),
            ci95_low=5.0 if i % 7 == 0 else None, ci95_high=950.0 if i % 7 == 0 else None,
            flags=(("cache-sized",), ("above-peak", "cache-sized"), ("above-peak",))[i % 3] if i % 11 == 0 else ()))
    return out


def test_sqlite_summaries_equal_what_all_runs_give(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "ROW_LIMIT", 50)            # every file system here is grouped
    monkeypatch.setattr(collect, "GROUP_LIMIT", 10_000)
    runs = _runs(3000)
    with KB.open(tmp_path / "kb.sqlite") as kb:
        kb.add_runs(runs, source="many", source_hash="many", fmt="csv", importer="test/1")
        data = collect.collect_system(kb, "many", None)
        everything = collect.lite_runs(kb, ["Many"])["many"]
    assert data.total_runs == 3000 and all(sec.grouped for sec in data.sections)
    for sec in data.sections:
        mine = [r for r in everything if (r.filesystem or "-") == sec.name]
        assert sec.total_runs == len(mine) > 50
        # the table: the same groups, medians, ranges and counts as grouping the runs in Python
        assert sec.rows == collect._group_rows(mine)
        assert sum(r.count for r in sec.rows) == len(mine)
        # a group's flags are those of any of its runs: some groups have one flag, some both, most none
        assert {r.flags for r in sec.rows} >= {(), ("cache-sized",), ("above-peak", "cache-sized")}
        # the plots: byte-for-byte the same specs (series, medians, ranges) from the stand-ins as from all runs
        from_all = plots.section_plots("p", sec.name, mine)
        from_sql = plots.section_plots("p", sec.name, [], points=sec.points)
        assert [s.name for s in from_all] == [s.name for s in from_sql] and len(from_all) >= 4
        assert from_all == from_sql
        assert sum(len(v) for v in sec.points.values()) < len(mine)    # fewer stand-ins than runs
    # the temporary table is gone: nothing of the build stays in the connection
    with KB.open(tmp_path / "kb.sqlite") as kb:
        assert kb.conn.execute("SELECT count(*) FROM temp.sqlite_master WHERE name = 'doc_runs'").fetchone()[0] == 0


def test_a_grouped_table_shows_the_first_groups_and_counts_the_others(tmp_path, monkeypatch):
    """Only the rows a page shows are made of a grouped file system: the first GROUP_LIMIT groups in the table's
    order, the same rows as grouping every run in Python gives, and the others counted (the page says how many
    groups there are and how many it leaves out)."""
    monkeypatch.setattr(collect, "ROW_LIMIT", 50)
    monkeypatch.setattr(collect, "GROUP_LIMIT", 7)
    with KB.open(tmp_path / "kb.sqlite") as kb:
        kb.add_runs(_runs(3000), source="many", source_hash="many", fmt="csv", importer="test/1")
        data = collect.collect_system(kb, "many", None)
        everything = collect.lite_runs(kb, ["Many"])["many"]
    for sec in data.sections:
        every_group = collect._group_rows([r for r in everything if (r.filesystem or "-") == sec.name])
        assert len(every_group) > 7 and sec.grouped
        assert sec.rows == every_group[:7]
        assert sec.hidden_rows == len(every_group) - 7
