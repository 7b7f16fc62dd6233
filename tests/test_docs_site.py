"""`ioadvise docs build`: deterministic output, pages and plots for every seed system, provenance links,
catalogues, escaping, large-KB aggregation and the CLI."""
from __future__ import annotations

import os
import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.docs import build_site, collect
from ioadvisor.docs.build import HERE
from ioadvisor.kb import KB, RunFilter
from ioadvisor.model.validate import make_run

SEED_SYSTEMS = ("HA8000", "Dell-EE-Lustre-2.1", "Dell-EE-Lustre-2.3", "TSUBAME3.0", "PixStor-NVMe")
runner = CliRunner()


class Page(HTMLParser):
    """Links, image sources and element ids of one HTML page."""

    def __init__(self, text: str):
        super().__init__()
        self.hrefs: list[str] = []
        self.srcs: list[str] = []
        self.ids: set[str] = set()
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        if tag in ("img", "link") and (a.get("src") or a.get("href")) and tag == "img":
            self.srcs.append(a["src"])


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    """The reference data built twice, in both languages and formats, plots as SVG and PNG."""
    base = tmp_path_factory.mktemp("docs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(base / "cache"))
        mp.setenv("XDG_DATA_HOME", str(base / "data"))
        mp.delenv("IOADVISE_KB", raising=False)
        out = []
        for i in (1, 2):
            mp.setenv("XDG_CACHE_HOME", str(base / f"cache{i}"))      # no plot is reused: both are drawn
            with KB.open(base / "none.sqlite", create=False) as kb:
                res = build_site(base / f"site{i}", kb=kb, langs=("en", "ja"), formats=("html", "md"), png=True)
            out.append((base / f"site{i}", res))
        with KB.open(base / "none.sqlite", create=False) as kb:
            counts = {s: kb.count(RunFilter(system=s)) for s in SEED_SYSTEMS}
            ids = {s: {r.id for r in kb.runs(RunFilter(system=s))} for s in SEED_SYSTEMS}
            comps = {s: len(kb.comparisons(s)) for s in SEED_SYSTEMS}
    return {"a": out[0][0], "b": out[1][0], "result": out[0][1], "counts": counts, "ids": ids, "comps": comps}


def test_same_inputs_give_byte_identical_sites(sites):
    a, b = files_of(sites["a"]), files_of(sites["b"])
    assert sorted(a) == sorted(b)
    assert len(a) == sites["result"].files
    differ = [name for name in a if a[name] != b[name]]
    assert differ == []
    assert not any(name.endswith(".tmp") or "/." in name for name in a)


def test_every_seed_system_has_pages_tables_and_plots(sites):
    root = sites["a"]
    assert set(SEED_SYSTEMS) <= set(sites["result"].systems)
    for lang in ("en", "ja"):
        index = (root / lang / "index.html").read_text()
        for name in SEED_SYSTEMS:
            slug = collect.slug(name)
            page_path = root / lang / "systems" / f"{slug}.html"
            assert f'href="systems/{slug}.html"' in index
            page = page_path.read_text()
            parsed = Page(page)
            links = [h for h in parsed.hrefs if h.startswith(f"../provenance/{slug}.html#run-")]
            # every run of the system is shown (the reference data is small) and each value links to it
            assert {h.split("#run-")[1] for h in links} == sites["ids"][name]
            assert len(links) == sites["counts"][name]
            assert page.count("<cite>") == sites["comps"][name]
            assert (root / lang / "systems" / f"{slug}.md").is_file()
    # plots: bandwidth vs stripe count for HA8000's Lustre, CI bars for its Table 2, FPP vs shared on Dell
    plots = root / "en" / "plots"
    for stem in ("ha8000-lustre-stripes", "ha8000-ci95-metadata", "dell-ee-lustre-2-1-lustre-layout",
                 "dell-ee-lustre-2-1-lustre-metadata", "pixstor-nvme-gpfs-nvme-layout"):
        svg = (plots / f"{stem}.svg").read_text()
        assert "MiB/s" in svg or "operations/s" in svg            # a labelled y axis with its unit
        assert (plots / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<dc:date>" not in svg
    ha = (root / "en" / "systems" / "ha8000.html").read_text()
    assert "ha8000-ci95-metadata.svg" in ha and "ha8000-lustre-stripes.svg" in ha
    assert "ci95 727-1,237" in ha                                   # Table 2's Lustre open/create interval


def test_every_local_link_and_anchor_resolves(sites):
    root = sites["a"]
    pages = sorted(root.rglob("*.html"))
    assert len(pages) >= 2 * (1 + 2 * len(SEED_SYSTEMS))
    ids_of = {p: Page(p.read_text()).ids for p in pages}
    for page in pages:
        parsed = Page(page.read_text())
        for ref in parsed.hrefs + parsed.srcs:
            parts = urlsplit(ref)
            assert not parts.scheme, f"{page}: external link {ref}"
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            assert target.is_file(), f"{page}: broken link {ref}"
            if parts.fragment and target.suffix == ".html":
                assert parts.fragment in ids_of[target], f"{page}: no anchor {ref}"


def test_markdown_links_resolve(sites):
    root = sites["a"] / "ja"
    for page in sorted(root.rglob("*.md")):
        for ref in re.findall(r"\]\(([^)]+)\)", page.read_text()):
            path, _, frag = ref.partition("#")
            target = (page.parent / path).resolve()
            assert target.is_file(), f"{page}: broken link {ref}"
            if frag:
                assert f'<a id="{frag}"></a>' in target.read_text()


def test_provenance_lists_source_citation_and_command(sites):
    page = (sites["a"] / "en" / "provenance" / "dell-ee-lustre-2-1.html").read_text()
    assert "002_bb7ecd762fa70063.txt" in page
    assert "Section 4.1 text (Figure 9)" in page
    assert "iozone -i 0 -c -e -w -r 1024K -I" in page


def test_catalogues_cover_every_string_the_templates_use():
    en = tomllib.loads((HERE / "i18n" / "en.toml").read_text())
    ja = tomllib.loads((HERE / "i18n" / "ja.toml").read_text())
    assert set(en) == set(ja)
    used = set()
    for tpl in (HERE / "templates").glob("*.j2"):
        used |= set(re.findall(r"""\bt\(\s*"([a-z0-9_]+)"\s*[,)]""", tpl.read_text()))
    assert used and used <= set(en)
    assert {f"factor_{f}" for f in ("layout", "api", "cb_write", "cb_read", "stripe_count", "stripe_size",
                                     "tier")} <= set(en)
    for key in en:                      # placeholders agree between languages
        assert set(re.findall(r"{(\w+)}", en[key])) == set(re.findall(r"{(\w+)}", ja[key])), key


def test_japanese_pages_use_the_japanese_catalogue(sites):
    ja = (sites["a"] / "ja" / "systems" / "ha8000.html").read_text()
    en = (sites["a"] / "en" / "systems" / "ha8000.html").read_text()
    assert '<html lang="ja">' in ja and "公表された比較" in ja and "Published comparisons" not in ja
    assert "Published comparisons" in en and "公表された比較" not in en


def _user_kb(path: Path, runs: list, name: str = "synthetic.csv") -> KB:
    kb = KB.open(path)
    kb.add_runs(runs, source=name, source_hash=f"hash-{name}-{len(runs)}", fmt="csv", importer="test/1")
    return kb


def test_text_from_the_kb_is_escaped(tmp_path):
    run = make_run(value=100, unit="MB/s", system="Esc<Sys>", filesystem="lus", op="write", api="POSIX",
                   notes="<script>alert(1)</script>")
    with _user_kb(tmp_path / "kb.sqlite", [run]) as kb:
        build_site(tmp_path / "site", kb=kb, langs=("en",), formats=("html",))
    prov = (tmp_path / "site" / "en" / "provenance" / "esc-sys.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in prov and "<script>" not in prov
    assert "Esc&lt;Sys&gt;" in (tmp_path / "site" / "en" / "index.html").read_text()


def test_large_system_is_grouped_and_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(collect, "ROW_LIMIT", 20)
    monkeypatch.setattr(collect, "GROUP_LIMIT", 5)
    monkeypatch.setattr(collect, "PROVENANCE_LIMIT", 30)
    runs = [make_run(value=100 + i, unit="MiB/s", system="Big", filesystem="lus", fs_type="lustre", op="write",
                     api="POSIX", layout="shared", ranks=2 ** (i % 8), stripe_count=1 + i % 3, notes="synthetic")
            for i in range(240)]
    with _user_kb(tmp_path / "kb.sqlite", runs) as kb:
        res = build_site(tmp_path / "site", kb=kb, center=None, langs=("en",), formats=("html",))
        big_ids = {r.id: r.value for r in kb.runs(RunFilter(system="Big"))}
    assert "Big" in res.systems
    page = (tmp_path / "site" / "en" / "systems" / "big.html").read_text()
    assert "240 measured runs in 24 groups" in page
    assert "19 more groups are not shown" in page
    linked = re.findall(r'provenance/big\.html#run-([0-9a-f]+)', page)
    assert len(linked) == 5
    prov = (tmp_path / "site" / "en" / "provenance" / "big.html").read_text()
    anchors = re.findall(r'id="run-([0-9a-f]+)"', prov)
    assert len(anchors) == 30 and set(linked) <= set(anchors)
    assert "30 of 240 runs" in prov
    # a group's value is its median run: runs i = k, k+24, ..., k+216 share settings; k=0 is 1 rank, 1 stripe
    assert sorted(v for v in big_ids.values() if (v - 100) % 24 == 0)[4] == 196
    row = next(tr for tr in page.split("<tr>") if "196 MiB/s" in tr)
    assert "100-316" in row and '<td class="num">10</td>' in row
    assert (tmp_path / "site" / "en" / "plots" / "big-lus-clients.svg").is_file()


def test_plots_are_svg_only_unless_png_is_asked_for(sites, tmp_path, monkeypatch):
    """A guide built without `png` (the default) draws no PNG and links none, and its other files are the bytes of
    the build with PNGs (less their links): what must not happen is an SVG or a page that differs otherwise, or a
    link to a PNG that is not there. A PNG build after an SVG-only one (the plot cache holds no PNG) draws them."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with KB.open(tmp_path / "none.sqlite", create=False) as kb:
        res = build_site(tmp_path / "svg", kb=kb, langs=("en", "ja"), formats=("html", "md"))
        build_site(tmp_path / "png", kb=kb, langs=("en", "ja"), formats=("html", "md"), png=True)
    svg_only, both = files_of(tmp_path / "svg"), files_of(sites["a"])
    pngs = [n for n in both if n.endswith(".png")]
    assert pngs and not [n for n in svg_only if n.endswith(".png")]
    assert sorted(svg_only) == sorted(n for n in both if not n.endswith(".png")) and len(svg_only) == res.files
    link = re.compile(rb' \(<a href="\.\./plots/[^"]+\.png">PNG</a>\)')
    assert all(b"PNG</a>" not in data for data in svg_only.values())
    assert {n: link.sub(b"", both[n]) for n in svg_only} == svg_only
    assert files_of(tmp_path / "png") == both


def test_plot_cache_gives_the_same_bytes(tmp_path):
    """PNGs (matplotlib's, 100 ms each) are cached; SVGs, written in milliseconds, are not."""
    runs = [make_run(value=v, unit="MiB/s", system="Cache", filesystem="lus", op="write", api="POSIX",
                     stripe_count=c) for c, v in ((1, 100), (2, 190), (4, 300))]
    with _user_kb(tmp_path / "kb.sqlite", runs) as kb:
        build_site(tmp_path / "a", kb=kb, center="HA8000", plot_cache=False, png=True)
        cold = files_of(tmp_path / "a")
        build_site(tmp_path / "b", kb=kb, center="HA8000", png=True)           # fills the cache
        build_site(tmp_path / "c", kb=kb, center="HA8000", png=True)           # reads it
    cached = sorted((Path(os.environ["XDG_CACHE_HOME"]) / "ioadvisor" / "plots").glob("*.png"))
    assert len(cached) >= 3
    assert cold == files_of(tmp_path / "b") == files_of(tmp_path / "c")


def test_cli_builds_one_center(tmp_path):
    out = tmp_path / "site"
    r = runner.invoke(app, ["docs", "build", "--center", "HA8000", "--out", str(out), "--kb",
                            str(tmp_path / "kb.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    assert '"HA8000"' in r.output
    assert sorted(p.name for p in (out / "en" / "systems").iterdir()) == ["ha8000.html"]
    assert not (out / "ja").exists()


@pytest.mark.parametrize("args, message", [
    (["--lang", "en,fr"], "--lang: unknown 'fr'"),
    (["--format", "pdf"], "--format: unknown 'pdf'"),
    (["--center", "NoSuchCenter"], "unknown center 'NoSuchCenter'"),
])
def test_cli_bad_options_exit_2_with_one_line(tmp_path, args, message):
    r = runner.invoke(app, ["docs", "build", "--out", str(tmp_path / "s"), "--kb", str(tmp_path / "k.sqlite"), *args])
    assert r.exit_code == 2
    assert message in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_cli_bad_center_file_names_the_file(tmp_path):
    bad = tmp_path / "center.toml"
    bad.write_text("name = \n")
    r = runner.invoke(app, ["docs", "build", "--center", str(bad), "--out", str(tmp_path / "s"),
                            "--kb", str(tmp_path / "k.sqlite")])
    assert r.exit_code == 2
    assert str(bad) in r.output and "Traceback" not in r.output


def test_an_error_in_a_site_center_file_stops_the_build_with_the_loaders_message(tmp_path, monkeypatch):
    # every known center is documented when --center is not given; a site's file whose stripe size Lustre
    # refuses (100 KiB is not a multiple of 64 KiB) must not be skipped or shown half-read: the build stops with
    # the center loader's one line (file, line, key) and writes nothing
    site = tmp_path / "centers"
    site.mkdir()
    bad = site / "mysite.toml"
    bad.write_text('name = "MySite"\n\n[[filesystems]]\nname = "scratch"\ntype = "lustre"\n'
                   'default_stripe_size = "100KiB"\n')
    monkeypatch.setenv("IOADVISE_CENTERS", str(site))
    out = tmp_path / "s"
    r = runner.invoke(app, ["docs", "build", "--out", str(out), "--kb", str(tmp_path / "k.sqlite")])
    assert r.exit_code == 2, r.output
    assert f"{bad}:6: filesystems[0].default_stripe_size" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert not out.exists() or not any(out.rglob("*.html"))


def test_stripe_plot_keeps_client_counts_apart(kb_path):
    from ioadvisor.docs.plots import section_plots
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="HA8000", filesystem="lustre"))
    spec = next(s for s in section_plots("ha8000-lustre", "HA8000 lustre", runs) if s.name == "ha8000-lustre-stripes")
    by_label = {s.label: s for s in spec.series}
    assert set(by_label) == {"read, 1 client", "write, 1 client"}
    write = by_label["write, 1 client"]
    expected = {r.stripe_count: r.value for r in runs if r.op == "write" and r.nodes == 1}
    assert dict(zip(write.x, write.y)) == expected      # each point is the 1-client run, not a mix with 24 clients
    assert max(write.y) < 400                           # the 24-client 2.5 GB/s run is not on this curve


def test_markdown_output_builds_with_mkdocs_strict(sites, tmp_path):
    """The Markdown pages with their generated mkdocs-<lang>.yml: `mkdocs build --strict` fails on any
    warning (a broken link, a page missing from the nav, a file that clashes)."""
    import shutil
    import subprocess
    import sys
    pytest.importorskip("mkdocs")
    root = tmp_path / "site"
    shutil.copytree(sites["a"], root)
    for lang in ("en", "ja"):
        cfg = root / f"mkdocs-{lang}.yml"
        text = cfg.read_text()
        # the nav names the overview and every system's page and provenance page
        for name in SEED_SYSTEMS:
            assert f"systems/{collect.slug(name)}.md" in text and f"provenance/{collect.slug(name)}.md" in text
        p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(cfg)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert "WARNING" not in p.stderr
        built = root / f"site-{lang}" / "systems" / "ha8000.html"
        assert built.is_file()
    # plain text: no HTML entities from escaping in the Markdown sources
    for page in sorted((sites["a"] / "en").rglob("*.md")):
        text = page.read_text()
        assert not re.search(r"&(#\d+|quot|apos|amp|#x[0-9a-f]+);", text), page


def test_plots_never_mix_quantities_and_use_integer_count_ticks(sites):
    """A plot shows one quantity with one unit on its y axis (bandwidth MiB/s, metadata ops/s, IOPS ops/s),
    its x ticks are whole numbers where the axis counts stripes or processes, and its legend is right of the
    axes (not over the data)."""
    from ioadvisor.docs.plots import LEGEND_AT
    root = sites["a"]
    ylabels = {"bandwidth": "bandwidth (MiB/s)", "metadata": "metadata rate (operations/s)",
               "iops": "IOPS (operations/s)"}
    seen = set()
    for page in sorted((root / "en" / "systems").glob("*.html")):
        for quantity, unit, src in re.findall(
                r'<figure class="plot" data-quantity="(\w+)" data-unit="([^"]+)"><img src="../plots/([^"]+)"',
                page.read_text()):
            svg = (root / "en" / "plots" / src).read_text()
            texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
            assert ylabels[quantity] in texts
            assert unit == {"bandwidth": "MiB/s", "metadata": "ops/s", "iops": "ops/s"}[quantity]
            assert not [y for q, y in ylabels.items() if q != quantity and y in texts]     # no second unit
            seen.add(quantity)
            if src.endswith(("-stripes.svg", "-clients.svg", "-metadata.svg", "-iops.svg")):
                # x tick labels are the text nodes below the axis title that parse as numbers
                ticks = [t for t in texts if re.fullmatch(r"[\d.,]+", t)]
                assert ticks and not [t for t in ticks if "." in t], (src, ticks)
    assert seen == {"bandwidth", "metadata", "iops"}
    assert LEGEND_AT < 0.8                      # the axes stop before the legend's column


def test_series_colour_is_the_same_on_every_plot():
    from ioadvisor.docs.plots import PALETTE, colour_of, colours
    assert colours(["write fpp", "read fpp"])[0] == colours(["read shared", "write fpp"])[1] \
        or colour_of("write fpp") == colour_of("read shared")
    assert colours(["write fpp"]) == [PALETTE[colour_of("write fpp")]]
    many = colours([f"s{i}" for i in range(len(PALETTE))])
    assert len(set(many)) == len(PALETTE)                                       # no two series share a colour


def test_every_page_has_a_language_switch_and_the_root_is_styled(sites):
    root = sites["a"]
    for lang, other in (("en", "ja"), ("ja", "en")):
        for page in sorted((root / lang).rglob("*.html")):
            rel = page.relative_to(root / lang)
            depth = "../" * (len(rel.parts) - 1)
            assert f'href="{depth}../{other}/{rel.as_posix()}" hreflang="{other}"' in page.read_text(), page
    top = (root / "index.html").read_text()
    assert '<link rel="stylesheet" href="style.css">' in top and (root / "style.css").is_file()
    assert "並列 I/O ガイド" in top and 'lang="ja"' in top


def test_japanese_pages_translate_plot_texts_and_settings(sites):
    ja = (sites["a"] / "ja" / "systems" / "ha8000.html").read_text()
    assert "ストライプ数と帯域幅" in ja and "bandwidth vs stripe count" not in ja
    svg = (sites["a"] / "ja" / "plots" / "ha8000-lustre-stripes.svg").read_text()
    assert "帯域幅 (MiB/s)" in svg and "bandwidth (MiB/s)" not in svg
    assert "Noto Sans CJK JP" in svg                     # the font the Japanese labels are drawn with


def test_single_repetition_has_no_spread_and_flagged_runs_are_marked(tmp_path):
    one = make_run(system="S", filesystem="fs", op="write", api="POSIX", layout="fpp", ranks=4, nodes=1,
                   value=3086, unit="MiB/s", spread={"value_min": 3086, "value_max": 3086}, flags=("cache-sized",))
    with _user_kb(tmp_path / "kb.sqlite", [one]) as kb:
        build_site(tmp_path / "site", kb=kb, langs=("en", "ja"), formats=("html", "md"))
    en = (tmp_path / "site" / "en" / "systems" / "s.html").read_text()
    assert "3,086-3,086" not in en                     # min = max of one repetition is not a spread
    assert "cache-sized" in en and "the data fit in the client" in en
    ja = (tmp_path / "site" / "ja" / "systems" / "s.md").read_text()
    assert "⚑ キャッシュに収まる量" in ja and "cache-sized" not in ja


def _advise_args(system, w):
    """`ioadvise advise` options for a decision-guide workload."""
    args = ["advise", "--json", "--system", system, "-N", str(w.nodes), "--ranks-per-node", str(w.ranks_per_node),
            "--bytes-per-rank", str(w.bytes_per_rank), "--api", w.api, "--layout", w.layout, "--op", w.op,
            "--lifetime", w.lifetime, "--files", str(w.files_per_rank)]
    if w.access_size:
        args += ["--access-size", str(w.access_size)]
    return args + (["--random"] if w.access == "random" else [])


def test_every_recipe_is_what_advise_says_for_its_workload(sites):
    """Each recipe on the built pages is `ioadvise advise --json`'s recommendation.commands.text for the same
    workload, word for word: a shared read gets no `lfs setstripe` and no striping hints (advise gives none), no
    tier request appears that the advice did not choose, every hint printed has its one-line explanation,
    and collective HDF5 advice carries the collective transfer property for C and h5py."""
    import json
    from ioadvisor.docs import decisions
    from ioadvisor.docs.recipes import ioadvise_line
    catalogue = tomllib.loads((HERE / "i18n" / "en.toml").read_text())
    workloads = dict(decisions.WORKLOADS)
    pages = {s: (sites["a"] / "en" / "systems" / f"{collect.slug(s)}.md").read_text() for s in SEED_SYSTEMS}
    seen = 0
    for system, page in pages.items():
        section = page.split("## Recipes", 1)[1].split("\n## ", 1)[0]
        blocks = re.findall(r"### (.+?)\n\n```\n(.*?)\n```\n\nBased on: (.+?)\n", section, re.S)
        assert len(blocks) == section.count("### "), system          # every recipe has a basis
        assert "General Lustre practice" not in section
        for title, text, basis in blocks:
            key = next(k for k in workloads if f'"{catalogue[k]}"' in basis)    # the workload it names
            r = runner.invoke(app, _advise_args(system, workloads[key]))
            assert r.exit_code == 0, r.output
            rec = json.loads(r.stdout)["recommendation"]
            cmds = rec["commands"]
            if title == catalogue["recipe_job"]:
                assert ioadvise_line(workloads[key]) in text
                assert (cmds["request"] or "#SBATCH --constraint") in text if cmds["request"] else \
                    "--constraint" not in text, (system, text)
            else:
                assert text == cmds["text"].rstrip("\n"), (system, key)
                if workloads[key].op == "read":
                    run = "\n".join(ln for ln in text.splitlines() if not ln.startswith("#"))   # not the notes
                    assert "setstripe" not in run and "striping_factor" not in run, (system, text)
                for k, v in rec["hints"].items():
                    if k in cmds["romio_hints_file"]:
                        assert re.search(rf"^# hint {k} {v}: \S", text, re.M), (system, k)
                if rec["api"] == "HDF5" and rec["collective"]:
                    assert "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE)" in text and "dset.collective" in text
            seen += 1
    assert seen >= len(SEED_SYSTEMS)          # every seed system has at least its job lines


def test_collective_hdf5_commands_set_the_transfer_property_and_independent_ones_do_not():
    from ioadvisor.mpiio import Plan, render
    coll = render(Plan(api="HDF5", collective=True, hdf5_alignment=1 << 20, stripe_count=4, stripe_size=1 << 20))
    assert any("H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE)" in c for c in coll.hdf5_c)
    assert coll.h5py_collective and "with dset.collective:" in coll.text()
    assert any("H5Pset_alignment(fapl, 1048576, 1048576)" in c for c in coll.hdf5_c)
    for plan in (Plan(api="HDF5", collective=False), Plan(api="MPIIO", collective=True)):
        cmds = render(plan)
        assert not cmds.h5py_collective and "H5FD_MPIO_COLLECTIVE" not in cmds.text()


def test_every_hint_printed_is_explained_in_one_line():
    from ioadvisor.mpiio import Plan, render
    hints = {"cb_nodes": "30", "romio_cb_write": "enable", "cb_buffer_size": "16777216", "my_site_hint": "7"}
    text = render(Plan(api="MPIIO", hints=hints)).text()
    for k, v in hints.items():
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"# hint {k} {v}: ")]
        assert len(line.split(": ", 1)[1]) > 10
    assert "30 process(es) act as aggregators" in text


def test_extrapolated_prediction_is_marked(tmp_path, monkeypatch):
    from ioadvisor.docs import decisions
    row = {"key": "wl_checkpoint", "tier": "-", "filesystem": "lustre", "layout": "shared", "api": "MPIIO",
           "collective": "yes", "stripe_count": 4, "stripe_size": None, "predicted": "9,999 MiB/s",
           "extrapolated": True, "n_runs": 3, "reasons": ["because"]}
    monkeypatch.setattr(decisions, "decision_guide", lambda kb, center: [row] if center else [])
    with KB.open(tmp_path / "kb.sqlite", create=False) as kb:
        build_site(tmp_path / "site", kb=kb, center="ha8000", langs=("en", "ja"), formats=("html", "md"))
    en = (tmp_path / "site" / "en" / "systems" / "ha8000.html").read_text()
    ja = (tmp_path / "site" / "ja" / "systems" / "ha8000.html").read_text()
    assert "9,999 MiB/s <span" in en and "(extrapolated)" in en
    assert "(外挿)" in ja and "extrapolated" not in ja.replace('class="num extrapolated"', "")
    assert "because" in en and "because" not in ja          # engine text is English; Japanese pages say it in Japanese
    assert "(外挿)" in (tmp_path / "site" / "ja" / "systems" / "ha8000.md").read_text()


def _curves(n_four: int, n_two: int) -> list:
    """Shared-file write runs on one file system: `n_four` client counts measured at 4 stripe counts, `n_two` more
    at 2, so each client count is one curve of the stripe plot with 4 or 2 points."""
    runs = []
    for k in range(n_four + n_two):
        for sc in ((1, 2, 4, 8) if k < n_four else (1, 2)):
            runs.append(make_run(system="Many", filesystem="lus", op="write", api="POSIX", layout="shared",
                                 nodes=k + 1, ranks=k + 1, stripe_count=sc, value=100.0 * (k + 1) + sc,
                                 unit="MiB/s"))
    return runs


def test_a_line_plot_draws_the_twelve_curves_with_the_most_points_and_says_so():
    from ioadvisor.docs.i18n import catalogue, translator
    from ioadvisor.docs.plots import MAX_SERIES, section_plots
    assert MAX_SERIES == 12
    runs = _curves(5, 10)                           # 15 curves: 5 of 4 points, 10 of 2
    spec = next(s for s in section_plots("m-lus", "Many lus", runs) if s.name == "m-lus-stripes")
    labels = [s.label for s in spec.series]
    assert len(labels) == 12 and spec.note == "12 of 15 curves: those with the most points"
    # every 4-point curve is kept (clients 1-5); of the 2-point ones, the first 7 by label
    four = {f"write shared, {k} client" + ("s" if k > 1 else "") for k in range(1, 6)}
    two = sorted(f"write shared, {k} clients" for k in range(6, 16))
    assert four <= set(labels) and set(labels) - four == set(two[:7])
    assert all(len(s.x) == 4 for s in spec.series if s.label in four)
    ja = next(s for s in section_plots("m-lus", "Many lus", runs, translator(catalogue("ja")))
              if s.name == "m-lus-stripes")
    assert ja.note == "全 15 本のうち点の多い 12 本"
    # what must not happen: a plot of 12 curves or fewer loses any, or carries the note
    spec12 = next(s for s in section_plots("m-lus", "Many lus", _curves(2, 10)) if s.name == "m-lus-stripes")
    assert len(spec12.series) == 12 and spec12.note == ""


def test_plots_drawn_in_worker_processes_are_the_bytes_drawn_in_process(kb_path):
    from ioadvisor.docs.plots import Renderer, section_plots
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="HA8000"))
    specs = section_plots("ha8000-lustre", "HA8000 lustre", runs) + \
        section_plots("many-lus", "Many lus", _curves(5, 10))
    drawn = {}
    for workers in (1, 2):
        r = Renderer(cache=False, png=True)        # PNGs are what worker processes draw
        r.workers = workers
        for spec in specs:
            r.submit(spec, ("en", spec.name))
        drawn[workers] = r.results()
        assert (r.pool is None)                     # shut down once the results are in
    assert len(drawn[1]) == len(specs) >= 4 and drawn[1] == drawn[2]


def test_a_plot_has_the_same_bytes_whatever_was_drawn_before_it(kb_path):
    """Each process draws on one figure, cleared between plots: a plot's bytes must not depend on which plots
    that figure showed before (a legend, a log axis, a CJK font or a bar plot left over would change them)."""
    from ioadvisor.docs import plots
    from ioadvisor.docs.i18n import catalogue, translator
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="HA8000"))
    specs = (plots.section_plots("ha8000-lustre", "HA8000 lustre", runs)
             + plots.section_plots("ha8000-lustre", "HA8000 lustre", runs, translator(catalogue("ja")))
             + plots.section_plots("many-lus", "Many lus", _curves(5, 10)) + plots.ci_plots("ha8000", "HA8000", runs))
    assert {s.kind for s in specs} == {"line", "bar"} and len(specs) >= 6
    plots._FIGURE.clear()                           # a new figure for each plot: the reference bytes
    fresh = []
    for spec in specs:
        fresh.append(plots.render(spec))
        plots._FIGURE.clear()
    forward = [plots.render(spec) for spec in specs]
    backward = [plots.render(spec) for spec in reversed(specs)][::-1]
    assert forward == fresh and backward == fresh
    # what must not happen: two different plots with the same bytes (the figure was not redrawn)
    assert len({svg for svg, _ in fresh}) == len(specs) and len({png for _, png in fresh}) == len(specs)


def test_every_diagnosis_rule_has_its_title_and_fix_in_every_catalogue():
    """The archive page names rules from the catalogues: the English titles are the rules' own (a renamed rule
    would otherwise show its old name), and no language lacks a rule or an operation."""
    from ioadvisor.diagnose.rules import RULES
    from ioadvisor.model.run import OPS
    en = tomllib.loads((HERE / "i18n" / "en.toml").read_text())
    ja = tomllib.loads((HERE / "i18n" / "ja.toml").read_text())
    for rule in RULES:
        assert en[f"rule_{rule.id}"] == rule.title
        assert ja[f"rule_{rule.id}"] != rule.title and ja[f"rule_fix_{rule.id}"] != en[f"rule_fix_{rule.id}"]
    assert all(f"op_{op}" in ja and ja[f"op_{op}"] != op for op in OPS)


def test_a_fault_in_the_engine_is_raised_not_a_row_quietly_left_out(monkeypatch, tmp_path):
    """The guide leaves out a workload the engine refuses (an IOAdvisorError), and only that: any other failure of
    the engine would otherwise print a guide with fewer recipes and no sign that something broke."""
    from ioadvisor.center import load_center_file
    from ioadvisor.docs import decisions
    from ioadvisor.errors import UsageError
    from ioadvisor.kb import KB
    center = load_center_file(Path(__file__).resolve().parent.parent / "data" / "centers" / "tsubame3.toml")
    with KB.open(tmp_path / "kb.sqlite") as kb:
        assert len(decisions.decision_guide(kb, center)) == len(decisions.WORKLOADS)

        def refuses(wl, kb, center):
            raise UsageError("no answer")
        monkeypatch.setattr(decisions, "advise", refuses)
        assert decisions.decision_guide(kb, center) == []

        def breaks(wl, kb, center):
            raise ZeroDivisionError("a fault")
        monkeypatch.setattr(decisions, "advise", breaks)
        with pytest.raises(ZeroDivisionError):
            decisions.decision_guide(kb, center)


def test_japanese_recipes_explain_each_hint_in_japanese(sites):
    """Each recipe on a Japanese page lists every hint its commands set (the ROMIO hints file's lines) with its
    explanation in Japanese; an English page does not repeat what the commands' comments already say. Not: a
    Japanese reader left with English comments only."""
    from ioadvisor.mpiio.render import explain_hint
    seen = 0
    for system in SEED_SYSTEMS:
        slug = collect.slug(system)
        ja = (sites["a"] / "ja" / "systems" / f"{slug}.md").read_text()
        en = (sites["a"] / "en" / "systems" / f"{slug}.md").read_text()
        assert "What the hints ask" not in en
        for block in re.findall(r"```\n(.*?)\n```", ja.split("\n## ", 1)[-1], re.S):
            hints = re.findall(r"^# hint (\S+) (\S+):", block, re.M)
            for k, v in hints:
                line = f"- `{k} {v}`: {explain_hint(k, v, 'ja')}"
                assert line in ja, (system, line)
                assert re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", explain_hint(k, v, "ja")), (k, v)
                seen += 1
    assert seen >= 3       # the reference data's recipes set hints on at least HA8000 and TSUBAME3.0
