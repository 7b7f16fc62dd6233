"""What a center's staff meet building the guide from their own KB: the guide shows what it says and publishes
nothing about users unless asked."""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.kb import KB

runner = CliRunner()


def test_the_archive_page_is_left_out_unless_asked_for(tmp_path, monkeypatch):
    """A staff KB holding a scanned Darshan log (job 4478544 of uid 69615, vpicio_uni): `docs build` alone
    writes no archive page and names neither the job nor the user anywhere; `--archive` adds the page."""
    pytest.importorskip("darshan")
    from ioadvisor.archive.scan import scan
    from ioadvisor.archive.worker import Settings
    from tests.darshan_copies import wheel_logs
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(next(p for p in wheel_logs() if p.name == "example.darshan"), logs / "x.darshan")
    kb_path = tmp_path / "kb.sqlite"
    with KB.open(kb_path) as kb:
        scan([logs], kb, Settings(system="HA8000"), workers=1)
        job = kb.conn.execute("SELECT jobid, uid, app FROM archive_jobs").fetchone()
    assert tuple(job) == (4478544, 69615, "vpicio_uni")
    base = ["docs", "build", "--kb", str(kb_path), "--center", "HA8000", "--format", "html,md"]
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "public")])
    assert r.exit_code == 0, r.output
    pages = [p for p in (tmp_path / "public").rglob("*") if p.suffix in (".html", ".md", ".yml")]
    assert pages and not [p for p in pages if p.stem == "archive"]
    for p in pages:
        text = p.read_text()
        assert "archive." not in text and "4478544" not in text and "vpicio_uni" not in text, p
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "staff"), "--archive"])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "staff" / "en" / "archive.html").read_text()
    assert "4478544" in page and "vpicio_uni" in page
    assert "archive.md" in (tmp_path / "staff" / "mkdocs-en.yml").read_text()


def _big_kb(path: Path, n: int = 60) -> Path:
    from ioadvisor.model.validate import make_run
    runs = [make_run(value=100 + i, unit="MiB/s", system="Big", filesystem="lus", fs_type="lustre", op="write",
                     api="POSIX", layout="shared", ranks=2 ** (i % 4), stripe_count=1 + i % 3, notes="synthetic")
            for i in range(n)]
    with KB.open(path) as kb:
        kb.add_runs(runs, source="big.csv", source_hash="hash-big", fmt="csv", importer="test/1")
    return path


class Stopped(KeyboardInterrupt):
    """What a signal handler like the CLI's raises for SIGTERM."""


def _signal_in_step(signum: int) -> Any:
    """A profile hook sending `signum` to this process from inside the grouping aggregate's first step call:
    the handler runs there, whatever the timing."""
    import os

    from ioadvisor.docs import collect
    sent: list[int] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "step" and frame.f_code.co_filename == collect.__file__ \
                and not sent:
            sent.append(signum)
            os.kill(os.getpid(), signum)
    profile.sent = sent
    return profile


def test_sigint_inside_the_grouping_aggregate_exits_130(tmp_path, monkeypatch):
    """sqlite turned the KeyboardInterrupt raised in the aggregate's step into "user-defined aggregate's 'step'
    method raised error" and exit 1: the build must end as interrupted, exit 130."""
    import signal
    import sys

    from ioadvisor.docs import collect
    monkeypatch.setattr(collect, "ROW_LIMIT", 20)            # 60 runs: the grouped road, through the aggregate
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "1")           # one core: the systems are read in this process
    kb_path = _big_kb(tmp_path / "kb.sqlite")
    profile = _signal_in_step(signal.SIGINT)
    sys.setprofile(profile)
    try:
        r = runner.invoke(app, ["docs", "build", "--kb", str(kb_path), "--out", str(tmp_path / "site")])
    finally:
        sys.setprofile(None)
    assert profile.sent == [signal.SIGINT]
    assert "aggregate" not in r.output and r.exit_code == 130, r.output


def test_sigterm_inside_the_grouping_aggregate_reaches_its_handler(tmp_path, monkeypatch):
    """SIGTERM's handler (the CLI's raises an exception that carries the signal) is the one that ends the build,
    not an sqlite error."""
    import signal
    import sys

    from ioadvisor.docs import build_site, collect
    monkeypatch.setattr(collect, "ROW_LIMIT", 20)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kb_path = _big_kb(tmp_path / "kb.sqlite")

    def stop(n: int, _frame: Any) -> None:
        raise Stopped(n)
    old = signal.signal(signal.SIGTERM, stop)
    profile = _signal_in_step(signal.SIGTERM)
    sys.setprofile(profile)
    try:
        with KB.open(kb_path, create=False) as kb, pytest.raises(Stopped):
            build_site(tmp_path / "site", kb=kb, workers=1)     # read in this process
    finally:
        sys.setprofile(None)
        signal.signal(signal.SIGTERM, old)
    assert profile.sent == [signal.SIGTERM]


def _lite(**kw: Any) -> Any:
    from ioadvisor.docs import collect
    base = dict.fromkeys(collect.LITE_COLUMNS)
    base.update(kw)
    return collect.Lite(**base)


@pytest.fixture(scope="module")
def center_site(tmp_path_factory) -> Path:
    """One center's guide (en and ja, HTML and Markdown): a file system nobody stripes, a per-job tier, and a run
    published as 7.6 GiB/s with a 10^9-byte transfer size."""
    from ioadvisor.docs import build_site
    from ioadvisor.model.validate import make_run
    tmp = tmp_path_factory.mktemp("center")
    c = tmp / "numsys.toml"
    c.write_text('name = "NumSys"\n[[filesystems]]\nname = "lus"\ntype = "lustre"\nost_count = 8\nstriping = "none"\n'
                 '[[filesystems]]\nname = "nvme"\ntype = "xfs"\n'
                 '[[tiers]]\nname = "bb"\nkind = "per-job"\nfilesystem = "nvme"\nrequest = "--constraint=NVME"\n')
    runs = [make_run(value=7.6, unit="GiB/s", system="NumSys", filesystem="lus", op="write", api="POSIX",
                     layout="fpp", nodes=4, ranks=32, transfer_size=10 ** 9)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
        with KB.open(tmp / "kb.sqlite") as kb:
            kb.add_runs(runs, source="n.csv", source_hash="hash-n", fmt="csv", importer="test/1")
            build_site(tmp / "site", kb=kb, center=str(c), langs=("en", "ja"), formats=("html", "md"))
    return tmp / "site"


def test_japanese_pages_translate_the_center_files_choices(center_site):
    """Every value a center file chooses from (striping, tier kind) has its words in both catalogues, and the
    Japanese pages show them: not "none" or "per-job" in English."""
    import tomllib

    from ioadvisor.center.schema import FS_STRIPING, TIER_KINDS
    from ioadvisor.docs.build import HERE
    ja = tomllib.loads((HERE / "i18n" / "ja.toml").read_text())
    for key in [f"striping_{v}" for v in FS_STRIPING] + [f"tier_kind_{v}" for v in TIER_KINDS]:
        assert not ja[key].isascii(), key
    for fmt in ("md", "html"):
        page = (center_site / "ja" / "systems" / f"numsys.{fmt}").read_text()
        cells = [c.strip() for c in re.split(r"[|]|</?td>", page)]
        assert "none" not in cells and "per-job" not in cells, fmt
        assert ja["striping_none"] in cells and ja["tier_kind_per-job"] in cells, fmt


def test_one_number_format_on_every_page(center_site):
    """The run published as 7.6 GiB/s is 7.6 x 1024 = 7,782.4 MiB/s: the table says "7,782 MiB/s", as the
    advice's reasons and the decision guide write bandwidths (never "7.6 GiB/s" in a table); 10^9 bytes are
    953.674 MiB: "954 MiB", not "953.674MiB"; the provenance page gives the published value too."""
    for lang in ("en", "ja"):
        page = (center_site / lang / "systems" / "numsys.md").read_text()
        assert "[7,782 MiB/s]" in page and "GiB/s" not in page
        assert "| 954 MiB |" in page and "953.674" not in page
        html = (center_site / lang / "systems" / "numsys.html").read_text()
        assert ">7,782 MiB/s</a>" in html and "954 MiB" in html and "953.674" not in html
    prov = (center_site / "en" / "provenance" / "numsys.md").read_text()
    assert "= 7,782 MiB/s (published as 7.6 GiB/s)" in prov


def test_a_guide_of_one_center_names_it_in_its_titles(center_site):
    assert "<title>NumSys: parallel I/O guide</title>" in (center_site / "en" / "index.html").read_text()
    assert (center_site / "en" / "index.md").read_text().startswith("# NumSys: parallel I/O guide\n")
    assert 'site_name: "NumSys 並列 I/O ガイド"' in (center_site / "mkdocs-ja.yml").read_text()
    assert "NumSys · NumSys: parallel I/O guide" in (center_site / "en" / "systems" / "numsys.html").read_text()


def _layout_runs(cached_value: float) -> list:
    """fpp writes of 900 and 1000 MiB/s, shared writes of 600 and 700, and one shared write of `cached_value`
    flagged cache-sized."""
    runs = [_lite(id=f"f{i}", op="write", api="POSIX", layout="fpp", unit="MiB/s", value=v, ranks=8, nodes=1,
                  stripe_count=1, filesystem="lus") for i, v in enumerate((900.0, 1000.0))]
    runs += [_lite(id=f"s{i}", op="write", api="POSIX", layout="shared", unit="MiB/s", value=v, ranks=8 * (i + 1),
                   nodes=1, stripe_count=2, filesystem="lus") for i, v in enumerate((600.0, 700.0))]
    runs.append(_lite(id="cached", op="write", api="POSIX", layout="shared", unit="MiB/s", value=cached_value,
                      ranks=32, nodes=1, stripe_count=4, filesystem="lus", flags="cache-sized"))
    return runs


def test_fpp_versus_shared_never_picks_a_cache_sized_run():
    """The best shared write is 700 MiB/s: the cache-sized 20,000 MiB/s read-back of the same layout is no
    measure of it."""
    from ioadvisor.docs import plots
    spec = next(s for s in plots.section_plots("x-lus", "X lus", _layout_runs(20000.0)) if s.name.endswith("-layout"))
    by = {s.label: dict(zip(s.x, s.y)) for s in spec.series}
    assert by == {"shared": {"write": 700.0}, "fpp": {"write": 1000.0}}


def test_fpp_versus_shared_of_a_grouped_file_system_never_picks_a_cache_sized_group(tmp_path, monkeypatch):
    """The same runs through sqlite's grouping (a file system above ROW_LIMIT runs)."""
    from ioadvisor.docs import collect, plots
    from ioadvisor.model.validate import make_run
    monkeypatch.setattr(collect, "ROW_LIMIT", 2)
    runs = [make_run(value=r.value, unit="MiB/s", system="G", filesystem="lus", op="write", api="POSIX",
                     layout=r.layout, ranks=r.ranks, nodes=1, stripe_count=r.stripe_count,
                     flags=("cache-sized",) if r.flags else ()) for r in _layout_runs(20000.0)]
    with KB.open(tmp_path / "kb.sqlite") as kb:
        kb.add_runs(runs, source="g.csv", source_hash="hash-g", fmt="csv", importer="test/1")
        s = collect.collect_system(kb, "G", None)
    sec = s.sections[0]
    assert sec.grouped
    spec = next(p for p in plots.section_plots("g-lus", "G lus", [], None, sec.points) if p.name.endswith("-layout"))
    assert {x.label: dict(zip(x.x, x.y)) for x in spec.series} == {"shared": {"write": 700.0},
                                                                   "fpp": {"write": 1000.0}}


def test_the_confidence_interval_plot_pools_only_comparable_unflagged_runs_and_says_what_it_draws():
    """Write bandwidth on lus: one POSIX fpp run of 1,000 MiB/s with its published CI 950-1,050; five MPIIO
    shared runs 100, 200, 300, 400, 500 (median 300, 25-75% quantiles 200 and 400); two POSIX shared runs 10
    and 30 (median 20, no interval: not their min-max); a cache-sized run of 90,000 left out. Before, the eight
    runs were one bar: median 250 and the min-max 10-90,000 drawn as a 95% interval."""
    from ioadvisor.docs import plots
    runs = [_lite(id="one", op="write", api="POSIX", layout="fpp", unit="MiB/s", value=1000.0, ci95_low=950.0,
                  ci95_high=1050.0, filesystem="lus")]
    runs += [_lite(id=f"m{v}", op="write", api="MPIIO", layout="shared", unit="MiB/s", value=float(v),
                   ci95_low=v - 5.0, ci95_high=v + 5.0, filesystem="lus") for v in (100, 200, 300, 400, 500)]
    runs += [_lite(id=f"p{v}", op="write", api="POSIX", layout="shared", unit="MiB/s", value=float(v),
                   ci95_low=v - 1.0, ci95_high=v + 1.0, filesystem="lus") for v in (10, 30)]
    runs.append(_lite(id="cached", op="write", api="POSIX", layout="shared", unit="MiB/s", value=90000.0,
                      ci95_low=89000.0, ci95_high=91000.0, filesystem="lus", flags="cache-sized"))
    (spec,) = plots.ci_plots("x", "X", runs)
    got = {s.label: (s.y, s.low, s.high) for s in spec.series}
    assert got == {"write fpp": ((1000.0,), (950.0,), (1050.0,)),
                   "write shared MPIIO": ((300.0,), (200.0,), (400.0,)),
                   "write shared": ((20.0,), (20.0,), (20.0,))}
    assert "25-75% quantiles" in spec.note and "95% CI" in spec.note


def test_no_axis_label_or_legend_is_cut_off_the_plot():
    """Metadata rates up to 46,080,000 ops/s: tick labels as wide as "10,000,000" pushed the y axis label
    17 pixels left of the figure's edge (cut off in the PNG). Every text must lie inside the figure."""
    from ioadvisor.docs import plots
    from ioadvisor.docs.i18n import catalogue, translator
    runs = [_lite(id=f"{op}{n}", op=op, unit="ops/s", ranks=n, value=v * n, filesystem="lus")
            for op, v in (("file_create", 20000.0), ("file_stat", 90000.0)) for n in (1, 8, 64, 512)]
    for lang in ("en", "ja"):
        spec = next(s for s in plots.section_plots("x-lus", "X lus", runs, translator(catalogue(lang)))
                    if s.quantity == "metadata")
        plots.render(spec)
        fig = plots._FIGURE[0]
        ax, r = fig.axes[0], fig.canvas.get_renderer()
        boxes = [ax.yaxis.label, ax.xaxis.label, ax.title, ax.get_legend(), *ax.get_yticklabels()]
        for box in (b.get_window_extent(r) for b in boxes):
            assert 0 <= box.x0 and box.x1 <= fig.bbox.width and 0 <= box.y0 and box.y1 <= fig.bbox.height, lang
