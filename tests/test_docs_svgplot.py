"""The guide's plots as SVG (docs.svgplot through plots.render): hostile labels escaped, no text outside the
picture, log axes, error bars only where there is an interval, and a plain build that never loads matplotlib."""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ioadvisor.docs import plots
from ioadvisor.docs.i18n import catalogue, translator
from ioadvisor.docs.plots import PlotSpec, Series
from ioadvisor.frozen import replace

NS = "{http://www.w3.org/2000/svg}"


def _svg(spec: PlotSpec) -> ET.Element:
    svg, png = plots.render(spec, png=False)
    assert png is None
    return ET.fromstring(svg)              # well-formed XML, or this raises


def _texts(root: ET.Element) -> list[ET.Element]:
    return list(root.iter(f"{NS}text"))


def _box(t: ET.Element) -> tuple[float, float, float, float]:
    """The box (x0, y0, x1, y1) a text covers by the writer's own width estimate (svgplot.text_width) and a
    line of 1.25 em around its baseline (ascent 0.95 em), turned as its transform says (-90 or -45 degrees
    about its anchor)."""
    from ioadvisor.docs.svgplot import FONT, text_width
    size = float(t.get("font-size", FONT))
    w = text_width(t.text or "", size)
    x, y = float(t.get("x")), float(t.get("y"))
    start = {"start": 0.0, "middle": -w / 2, "end": -w}[t.get("text-anchor", "start")]
    # corners in the text's own frame: along the baseline from start to start + w, across from -ascent to descent
    corners = [(start + a, b) for a in (0.0, w) for b in (-0.95 * size, 0.30 * size)]
    m = re.fullmatch(r"rotate\((-?[\d.]+) [-\d.]+ [-\d.]+\)", t.get("transform", "rotate(0 0 0)"))
    angle = math.radians(float(m.group(1)))
    pts = [(x + a * math.cos(angle) - b * math.sin(angle), y + a * math.sin(angle) + b * math.cos(angle))
           for a, b in corners]
    return min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts), max(p[1] for p in pts)


def _inside(root: ET.Element) -> list[str]:
    """The texts whose box is not inside the viewBox."""
    _, _, width, height = (float(v) for v in root.get("viewBox").split())
    out = []
    for t in _texts(root):
        x0, y0, x1, y1 = _box(t)
        if not (0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height):
            out.append(f"{t.text!r} at {(x0, y0, x1, y1)} outside {width} x {height}")
    return out


def _lite(**kw):
    from ioadvisor.docs import collect
    base = dict.fromkeys(collect.LITE_COLUMNS)
    base.update(kw)
    return collect.Lite(**base)


def test_hostile_labels_are_escaped_and_the_picture_stays_readable():
    """A file system, operation and API from the KB may hold markup, quotes and control characters: each text
    comes back from the XML as written (control characters replaced), and no element is injected."""
    evil = '<script>alert("x")</script> & \'q\' \x01\x1b'
    spec = PlotSpec("p", "line", f"{evil}: bandwidth", f"x {evil}", "bandwidth (MiB/s)",
                    (Series(evil, (1, 2, 4), (10.0, 20.0, 30.0), (9.0, 19.0, 29.0), (11.0, 21.0, 31.0)),),
                    integer_x=True, note=f"note {evil}")
    raw = plots.render(spec, png=False)[0]
    root = ET.fromstring(raw)
    assert not list(root.iter(f"{NS}script")) and b"<script" not in raw
    texts = [t.text for t in _texts(root)]
    shown = evil.replace("\x01", "\ufffd").replace("\x1b", "\ufffd")
    assert f"{shown}: bandwidth" in texts and f"x {shown}" in texts and shown in texts and f"note {shown}" in texts
    assert root.find(f"{NS}title").text == f"{shown}: bandwidth"
    assert root.get("role") == "img" and root.get("aria-label") == f"{shown}: bandwidth"


def test_no_text_leaves_the_picture_by_the_writers_width_estimate():
    """Metadata rates up to 46,080,000 ops/s (tick labels as wide as "50,000,000"), a legend entry of 150
    characters and a long Japanese title: every text's box lies inside the viewBox, in both languages (before,
    such tick labels pushed the y axis's label 17 pixels off the picture)."""
    runs = [_lite(id=f"{op}{n}", op=op, unit="ops/s", ranks=n, value=v * n, filesystem="lus")
            for op, v in (("file_create", 20000.0), ("file_stat", 90000.0)) for n in (1, 8, 64, 512)]
    for lang in ("en", "ja"):
        spec = next(s for s in plots.section_plots("x-lus", "X lus " + "長い名前" * 12, runs,
                                                   translator(catalogue(lang))) if s.quantity == "metadata")
        long = Series("w" * 150, (1, 8), (5.0, 50_000_000.0), (5.0, 50_000_000.0), (5.0, 50_000_000.0))
        for s in (spec, replace(spec, series=(*spec.series, long))):
            root = _svg(s)
            assert _inside(root) == [], lang
            assert [t for t in _texts(root) if re.fullmatch(r"\d{2,3},000,000", t.text)]   # the wide ticks


def test_the_width_table_is_never_narrower_than_dejavu_sans():
    """The margins rest on svgplot's widths: each printable ASCII character at least as wide as DejaVu Sans
    draws it (the font matplotlib ships, read with fontTools), a CJK character a full em."""
    import matplotlib
    from fontTools.ttLib import TTFont
    from ioadvisor.docs.svgplot import text_width
    font = TTFont(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf")
    upm, cmap, hmtx = font["head"].unitsPerEm, font.getBestCmap(), font["hmtx"]
    for code in range(32, 127):
        assert text_width(chr(code) * 20, upm) >= 20 * hmtx[cmap[code]][0], chr(code)
    assert text_width("帯域幅", 10) == 30 and text_width("", 10) == 0


def _ticks(root: ET.Element, anchor: str) -> list[tuple[float, float]]:
    """(value, position) of the tick labels with this anchor ("end": the y axis's, "middle": the x axis's)."""
    out = []
    for t in _texts(root):
        if t.get("text-anchor") == anchor and "transform" not in t.attrib and re.fullmatch(r"[\d,.]+", t.text):
            out.append((float(t.text.replace(",", "")), float(t.get("y" if anchor == "end" else "x"))))
    return out


def test_log_axes_put_powers_at_equal_distances():
    """Bandwidth from 3 to 300,000 MiB/s over 1 to 1,024 processes: the y axis is log 10 (ticks 10, 100, ...,
    each decade the same height), the x axis log 2 (powers of two at equal distances, whole numbers)."""
    xs = tuple(2 ** k for k in range(11))
    ys = tuple(3.0 * 10 ** (k / 2) for k in range(11))
    spec = PlotSpec("p", "line", "t", "processes", "bandwidth (MiB/s)", (Series("a", xs, ys, ys, ys),),
                    integer_x=True)
    root = _svg(spec)
    y = _ticks(root, "end")
    assert [v for v, _ in y] == [10.0 ** k for k in range(1, 6)], y
    steps = [a[1] - b[1] for a, b in zip(y, y[1:])]
    assert min(steps) > 0 and max(steps) - min(steps) < 0.25, steps         # higher values higher up, evenly
    x = _ticks(root, "middle")
    assert x and all(math.log2(v).is_integer() for v, _ in x), x
    steps = [b[1] - a[1] for a, b in zip(x, x[1:])]
    per_power = [s / math.log2(b[0] / a[0]) for s, a, b in zip(steps, x, x[1:])]
    assert min(steps) > 0 and max(per_power) - min(per_power) < 0.25, x


def _error_bars(root: ET.Element) -> int:
    return sum(p.get("d").count("V") for p in root.iter(f"{NS}path") if p.get("class") == "err")


def test_a_bar_without_an_interval_has_no_error_bar():
    """Two bars: one with an interval (900-1,100), one whose low and high are its value (a median of two runs):
    one error bar, not two."""
    spec = PlotSpec("p", "bar", "t", "file system", "bandwidth (MiB/s)",
                    (Series("with", ("lus",), (1000.0,), (900.0,), (1100.0,)),
                     Series("without", ("lus",), (500.0,), (500.0,), (500.0,))))
    root = _svg(spec)
    assert _error_bars(root) == 1
    assert len([r for r in root.iter(f"{NS}rect") if r.get("height") not in (None, "100%")]) >= 2
    none = replace(spec, series=spec.series[1:])
    assert _error_bars(_svg(none)) == 0


def test_line_plot_error_bars_span_low_to_high_and_series_keep_their_colours():
    """One error bar per point, from min(low, y) to max(high, y); each series drawn in colours()'s colour, the
    legend in the series' order."""
    a = Series("write fpp", (1, 2), (10.0, 20.0), (12.0, 15.0), (11.0, 25.0))    # low above y at x = 1
    b = Series("read fpp", (1, 2), (30.0, 40.0), (30.0, 35.0), (30.0, 45.0))
    root = _svg(PlotSpec("p", "line", "t", "x", "y", (a, b), integer_x=True))
    assert _error_bars(root) == 4
    cols = plots.colours([a.label, b.label])
    strokes = [p.get("stroke") for p in root.iter(f"{NS}path") if p.get("class") == "err"]
    assert strokes == cols
    legend = [t.text for t in _texts(root) if t.text in (a.label, b.label)]
    assert legend == [a.label, b.label]


def test_a_guide_without_png_never_imports_matplotlib(tmp_path):
    """The SVG plots are written without matplotlib: a build of the reference data (plots drawn, no cache)
    leaves it unimported; with --png it is what draws the PNGs."""
    code = ("import sys\n"
            "from ioadvisor.docs import build_site\n"
            "from ioadvisor.kb import KB\n"
            f"with KB.open({str(tmp_path / 'none.sqlite')!r}, create=False) as kb:\n"
            f"    r = build_site({str(tmp_path / 'site')!r}, kb=kb, plot_cache=False)\n"
            "print(r.plots, sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib')[:3])\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_DATA_HOME": str(tmp_path / "data"),
           "IOADVISE_KB": ""}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr
    n, modules = p.stdout.split(" ", 1)
    assert int(n) >= 8 and modules.strip() == "[]", p.stdout
    assert len(list((tmp_path / "site" / "en" / "plots").glob("*.svg"))) == int(n)


@pytest.mark.parametrize("kind", ["line", "bar"])
def test_the_same_spec_gives_the_same_bytes(kind):
    s = Series("a <b>", (1, 2, 4), (1.0, 2.0, 3.0), (0.5, 1.5, 2.5), (1.5, 2.5, 3.5))
    spec = PlotSpec("p", kind, "t", "x", "y", (s,), integer_x=True)
    assert plots.render(spec, png=False) == plots.render(spec, png=False)
    assert b"id=" not in plots.render(spec, png=False)[0]


def test_linear_ticks_are_nice_and_printed_alike():
    """Bandwidth 1.4-2.6 MiB/s over 1-3 stripes: y ticks 0.25 apart, each with two decimals (not "2" beside
    "2.25"); x ticks whole numbers on a counting axis."""
    s = Series("a", (1, 2, 3), (1.5, 2.0, 2.5), (1.4, 1.9, 2.4), (1.6, 2.1, 2.6))
    root = _svg(PlotSpec("p", "line", "t", "stripes", "bandwidth (MiB/s)", (s,), integer_x=True))
    y = [t.text for t in _texts(root) if t.get("text-anchor") == "end"]
    assert y == ["1.50", "1.75", "2.00", "2.25", "2.50"], y
    assert [v for v, _ in _ticks(root, "middle")] == [1.0, 2.0, 3.0]


def test_the_legend_stands_right_of_the_axes_and_bars_keep_their_colours():
    """Every legend text (its title, the note, and each entry) starts right of the axes' box, so it never
    covers data, with a long entry too; each series's bars are filled with colours()'s colour for it."""
    from ioadvisor.docs.svgplot import LEGEND_FONT
    a = Series("write fpp", ("lus", "nfs"), (1.0, 2.0), (1.0, 2.0), (1.0, 2.0))
    b = Series("read shared " + "x" * 80, ("lus",), (3.0,), (2.0,), (4.0,))
    root = _svg(PlotSpec("p", "bar", "t", "file system", "bandwidth (MiB/s)", (a, b), note="line one\nline two"))
    frame = next(r for r in root.iter(f"{NS}rect") if r.get("fill") == "none")
    right = float(frame.get("x")) + float(frame.get("width"))
    legend = [t for t in _texts(root) if t.get("font-size") == f"{LEGEND_FONT:g}"]
    assert [t.text for t in legend] == ["line one", "line two", a.label, b.label]
    assert all(_box(t)[0] > right for t in legend) and _inside(root) == []
    fills = [g.get("fill") for g in root.iter(f"{NS}g") if g.get("fill")]
    assert fills == plots.colours([a.label, b.label])
