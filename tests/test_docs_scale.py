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


def test_a_guide_read_by_two_workers_is_byte_for_byte_the_one_read_by_one(tmp_path, monkeypatch):
    # what must NOT happen: a page that depends on how the reading was shared out among worker processes (a large
    # system read in parts and assembled: sections, table rows, provenance entries or the confidence-interval
    # runs in another order, a file system lost or read twice between the parts)
    from ioadvisor.frozen import replace
    from ioadvisor.docs import build_site
    monkeypatch.setattr(collect, "ROW_LIMIT", 50)            # the file systems of "Many" are grouped
    monkeypatch.setattr(collect, "GROUP_LIMIT", 5)           # each shows 5 groups: the provenance page picks
    monkeypatch.setattr(collect, "PROVENANCE_LIMIT", 60)     # among the runs of several file systems
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # on "gpfs", then on "lus" and on none ("-"), in one source: the runs with a confidence interval, listed by
    # their place in it, come from both parts
    many = [replace(r, filesystem="gpfs") for r in _runs(250, seed=5)] + _runs(400)
    few = [replace(r, system="Few", filesystem=("home", "work")[i % 2]) for i, r in enumerate(_runs(40, seed=7))]
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        kb.add_runs(many, source="many.csv", source_hash="hash-many", fmt="csv", importer="test/1")
        kb.add_runs(few, source="few.csv", source_hash="hash-few", fmt="csv", importer="test/1")
        # "Many" holds more than half of the runs: two workers read it in two parts, "gpfs" (the largest) and the
        # rest ("lus" and the runs without a file system, which the per-system summary names "unknown")
        plan = collect.reading_plan(kb, ["Few", "Many"], 2)
        assert plan == [("Many", 1, (("gpfs",),)), ("Many", 0, (("gpfs",),)), ("Few", 0, ())], plan
        one = build_site(tmp_path / "one", kb=kb, langs=("en", "ja"), formats=("html", "md"), workers=1)
        two = build_site(tmp_path / "two", kb=kb, langs=("en", "ja"), formats=("html", "md"), workers=2)
    assert one.runs == two.runs == 690 and one.systems == two.systems and {"Few", "Many"} <= set(one.systems)
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*") if p.is_file())
    for f in files:
        assert (tmp_path / "one" / f).read_bytes() == (tmp_path / "two" / f).read_bytes(), f
    page = (tmp_path / "two" / "en" / "provenance" / "many.html").read_text()
    assert page.count('id="run-') == 60                      # the limit, filled from the parts' runs
