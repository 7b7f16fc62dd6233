"""A plot (docs.plots.PlotSpec) written as SVG text: line plots with error bars, bar plots side by side per
category, linear and log axes, title, axis labels and a legend right of the axes.

Written directly, not drawn by a plotting library: a plot is a few hundred bytes of geometry and its texts, so
every plot of a large guide is drawn in well under a second. Margins are computed from the widths of the texts
(DejaVu Sans's advance widths; a full em for any other character), so no text is cut off: where the texts need
more room than the usual 840 x 380 picture, the picture grows. Every text is XML-escaped (labels are values
from the KB); the bytes depend on the spec alone."""
from __future__ import annotations

import hashlib
import html
import math
import re
from dataclasses import dataclass, field
from typing import Any

LOG_SPAN = 20.0      # use a log axis once the values span more than this factor
WIDTH, HEIGHT = 840, 380    # pixels: the size the pages show a plot at
LEGEND_AT = 0.62     # the axes end here at most (fraction of the width); the legend uses the rest
FONT, LEGEND_FONT, TITLE_FONT = 12.5, 11.0, 15.0       # 9, 8 and 10.8 points at 100 dpi
FAMILY = "DejaVu Sans, Noto Sans CJK JP, sans-serif"   # Japanese texts need the CJK font's glyphs
PAD = 6.0            # pixels between any text and the picture's edge
TICK = 5.0           # tick mark length
LINE = 1.25          # a text line's height (ems): DejaVu Sans's ascent 0.93 and descent 0.24, rounded up
ASCENT = 0.95
MIN_AXES = 240.0     # the axes are never narrower (a wide legend or label widens the picture instead)
# distinguishable colours dark enough on white (matplotlib's tab10 and darker companions); a series keeps
# its colour on every page and plot
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd")
# DejaVu Sans's advance widths of the printable ASCII characters, space to tilde, in font units (2048 an em)
_ADVANCE = (651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690, 1303, 1303, 1303,
            1303, 1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716, 1087, 2048, 1401, 1405, 1430, 1577,
            1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767, 1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499,
            1401, 2025, 1403, 1251, 1403, 799, 690, 799, 1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260, 721, 1300,
            1298, 569, 569, 1186, 569, 1995, 1298, 1253, 1300, 1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212,
            1075, 1303, 690, 1303, 1716)
# characters XML 1.0 does not allow (a text holding one would make the whole picture unreadable)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def colour_of(label: str) -> int:
    """The palette index of a series label: a hash of the label, so the same series has the same colour on
    every page (a clash inside one plot moves the later series to the next free colour)."""
    return int(hashlib.sha1(label.encode()).hexdigest()[:8], 16) % len(PALETTE)


def colours(labels: list[str]) -> list[str]:
    used: set[int] = set()
    out = []
    for label in labels:
        i = colour_of(label)
        while i in used and len(used) < len(PALETTE):
            i = (i + 1) % len(PALETTE)
        used.add(i)
        out.append(PALETTE[i])
    return out


def use_log(values: list[float]) -> bool:
    pos = [v for v in values if v and v > 0 and math.isfinite(v)]
    return bool(pos) and max(pos) / min(pos) > LOG_SPAN


def tick_label(v: float, step: float = 1.0) -> str:
    """A tick's text: whole numbers with thousands separators (10,000), smaller ones as short as they are
    exact (0.25); on a linear axis whose ticks are a fraction apart (`step`), every tick with the decimals the
    step needs (1.50, 1.75, 2.00)."""
    if step == int(step):
        return f"{v:,.0f}" if abs(v) >= 1 else f"{v:g}"
    decimals = next((d for d in range(1, 13) if abs(round(step, d) - step) < 1e-12 * max(1.0, step)), 12)
    return f"{v:,.{decimals}f}"


def one_line(s: Any) -> str:
    """A label as one line of characters XML allows (breaks and tabs become spaces)."""
    return _NOT_XML.sub("\ufffd", re.sub(r"[\r\n\t]+", " ", str(s)))


def text_width(s: str, size: float) -> float:
    """The width of `s` drawn at `size` pixels, at least as wide as DejaVu Sans draws it: ASCII from its
    advance widths, every other character a full em (CJK glyphs are one em; no Latin glyph is wider)."""
    units = sum(_ADVANCE[o - 32] if 32 <= (o := ord(c)) < 127 else 2048 for c in s)
    return math.ceil(units * size / 2048)


def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _n(v: float) -> str:
    """A coordinate: one decimal, no "-0.0"."""
    return f"{v:.1f}".replace("-0.0", "0.0") if abs(v) < 0.05 else f"{v:.1f}"


@dataclass
class Axis:
    """One axis: its limits in data units, log (base `base`) or linear, and its ticks (value, text)."""
    lo: float
    hi: float
    log: bool = False
    base: float = 10.0
    ticks: list[tuple[float, str]] = field(default_factory=list)

    def frac(self, v: float) -> float:
        """Where `v` lies between the limits (0 to 1)."""
        if self.log:
            return (math.log(max(v, self.lo)) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return (v - self.lo) / (self.hi - self.lo)


def _nice_step(span: float, target: int, integer: bool) -> float:
    """About span / target, rounded up to 1, 2, 2.5 or 5 times a power of ten (a whole number of at least 1,
    not 2.5 times one, with `integer`)."""
    raw = span / max(1, target)
    if integer and raw <= 1:
        return 1.0
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in ((1, 2, 5, 10) if integer else (1, 2, 2.5, 5, 10)) if m * mag >= raw * (1 - 1e-9))


def linear_axis(lo: float, hi: float, target: int = 6, integer: bool = False, margin: bool = True) -> Axis:
    """A linear axis over [lo, hi] (5% more each side with `margin`) with "nice" ticks: 1, 2, 2.5 or 5 times
    a power of ten apart (whole numbers with `integer`)."""
    if hi <= lo:
        half = abs(lo) * 0.5 or 1.0
        lo, hi = lo - half, hi + half
    if margin:
        lo, hi = lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05
    step = _nice_step(hi - lo, target, integer)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    for k in range(first, first + 1000):
        v = round(k * step, 12)
        if v > hi + step * 1e-9:
            break
        ticks.append((v, tick_label(v, step)))
    return Axis(lo, hi, False, 10.0, ticks)


def log_axis(lo: float, hi: float, base: float = 10.0, every: int = 1) -> Axis:
    """A log axis over the positive [lo, hi] (5% more each side, in log units) with a tick at every `every`-th
    power of `base`; on a base-10 axis spanning less than 3 decades also at 2 and 5 times them."""
    llo, lhi = math.log(lo, base), math.log(hi, base)
    pad = (lhi - llo) * 0.05 or 0.5
    llo, lhi = llo - pad, lhi + pad
    lo, hi = base ** llo, base ** lhi
    powers = [k for k in range(math.ceil(llo - 1e-9), math.floor(lhi + 1e-9) + 1) if k % every == 0]
    values = [float(base) ** k for k in powers]
    if base == 10 and len(values) < 3:
        values = sorted(v * m for k in range(math.floor(llo), math.ceil(lhi) + 1) for m in (1, 2, 5)
                        if lo <= (v := 10.0 ** k) * m <= hi)
    return Axis(lo, hi, True, base, [(v, tick_label(v)) for v in values])


def _finite(*vs: float) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in vs)


@dataclass
class _Frame:
    """The picture's size and where the axes' box lies in it (pixels, y down)."""
    width: float
    height: float
    left: float
    right: float
    top: float
    bottom: float
    rotate: bool = False          # category labels drawn at 45 degrees (too wide for their slot)

    def x(self, axis: Axis, v: float) -> float:
        return self.left + axis.frac(v) * (self.right - self.left)

    def y(self, axis: Axis, v: float) -> float:
        return self.bottom - axis.frac(v) * (self.bottom - self.top)


def _points(spec: Any) -> list[list[tuple[Any, float, float, float]]]:
    """Each series's drawable points (x, y, bottom and top of its error bar: min(low, y) and max(high, y)); a
    point with a value that is no finite number is left out, and so, on a log axis, is one at or below 0."""
    xlog = spec.kind == "line" and use_log([float(x) for s in spec.series for x in s.x if _finite(x)])
    ylog = use_log([v for s in spec.series for v in (*s.y, *s.low, *s.high) if _finite(v)])
    out = []
    for s in spec.series:
        pts = []
        for x, y, lo, hi in zip(s.x, s.y, s.low, s.high):
            if not _finite(y) or (spec.kind == "line" and not _finite(x)) or (ylog and y <= 0) \
                    or (xlog and x <= 0):
                continue
            lo, hi = (lo if _finite(lo) else y), (hi if _finite(hi) else y)
            pts.append((x, y, min(lo, y), max(hi, y)))
        out.append(pts)
    return out


def _y_axis(spec: Any, pts: list[list[tuple[Any, float, float, float]]]) -> Axis:
    """Log (base 10) where the values span more than LOG_SPAN, else linear; bars stand on 0."""
    values = [v for s in spec.series for v in (*s.y, *s.low, *s.high) if _finite(v)]
    ends = [v for p in pts for _, _, lo, hi in p for v in (lo, hi)]
    if use_log(values):
        pos = [v for v in ends if v > 0]
        return log_axis(min(pos), max(pos)) if pos else linear_axis(0.0, 1.0, margin=False)
    if not ends:
        return linear_axis(0.0, 1.0, margin=False)
    lo, hi = min(ends), max(ends)
    if spec.kind == "bar":
        lo, hi = min(0.0, lo), max(0.0, hi)
        return linear_axis(lo, hi + (hi - lo) * 0.05, margin=False)
    return linear_axis(lo, hi)


def _x_axis(spec: Any, pts: list[list[tuple[Any, float, float, float]]], room: float) -> Axis | list[str]:
    """A line plot's x axis (log base 2 where the values span more than LOG_SPAN, whole-number ticks where
    they count things) with as many ticks as `room` pixels hold without their labels touching; a bar plot's
    categories (their labels)."""
    if spec.kind != "line":
        return [str(c) for c in sorted({x for s in spec.series for x in s.x}, key=str)]
    xs = [float(x) for p in pts for x, *_ in p]
    if not xs:
        return linear_axis(0.0, 1.0, margin=False)
    candidates = ([log_axis(min(xs), max(xs), 2.0, every) for every in range(1, 64)] if use_log(xs)
                  else [linear_axis(min(xs), max(xs), target, spec.integer_x) for target in range(8, 1, -1)])
    for axis in candidates:
        if len(axis.ticks) < 2:
            continue
        if _fits(axis, room, max(text_width(t, FONT) for _, t in axis.ticks)):
            return axis
    return candidates[-1]


def _fits(axis: Axis, room: float, widest: float) -> bool:
    """True where neighbouring tick labels of `axis` drawn over `room` pixels keep 8 pixels apart."""
    at = [axis.frac(v) * room for v, _ in axis.ticks]
    return all(b - a >= widest + 8 for a, b in zip(at, at[1:]))


ROW = LEGEND_FONT * 1.5     # a legend row's height
SWATCH = 30.0               # a legend entry's line or box and the space after it


def _legend_width(spec: Any) -> float:
    rows = [text_width(one_line(line), LEGEND_FONT) for line in spec.note.split("\n") if spec.note]
    return max([*rows, *(SWATCH + text_width(one_line(s.label), LEGEND_FONT) for s in spec.series), 0.0])


def _frame(spec: Any, y: Axis, cats: list[str] | None) -> _Frame:
    """The picture's size and the axes' box: the left margin holds the y axis's label and widest tick label,
    the right one the legend (the axes end at LEGEND_AT of the width at most), the top the title, the bottom
    the tick labels (category labels turned 45 degrees where one is wider than its slot) and the x axis's
    label. Where the texts need more room the picture grows (the axes keep MIN_AXES pixels)."""
    left = PAD + FONT * LINE + 4 + max((text_width(t, FONT) for _, t in y.ticks), default=0) + 3 + TICK
    top = PAD + TITLE_FONT * LINE + 6
    below = TICK + 3 + FONT * LINE + 4 + FONT * LINE + PAD
    legend = _legend_width(spec)
    gap = 0.02 * WIDTH
    notes = len(spec.note.split("\n")) if spec.note else 0
    width = max(WIDTH, left + MIN_AXES + gap + legend + PAD, text_width(one_line(spec.title), TITLE_FONT) + 2 * PAD,
                text_width(one_line(spec.xlabel), FONT) + 2 * PAD)
    right = max(left + MIN_AXES, min(LEGEND_AT * width, width - PAD - legend - gap))
    rotate = False
    if cats:
        wide = [text_width(c, FONT) for c in cats]
        slot = (right - left) / len(cats)
        if max(wide) > slot - 4:
            # a label turned 45 degrees, anchored at its end below its tick: as tall as (width + height) / sqrt 2,
            # and the first one reaches left of its tick by width / sqrt 2
            rotate = True
            below += (max(wide) + FONT * LINE) * 0.7072 - FONT * LINE
            left = max(left, PAD + wide[0] * 0.7072 + FONT * LINE)
            right = max(right, left + MIN_AXES)
            width = max(width, right + gap + legend + PAD)
    height = max(HEIGHT, top + (notes + len(spec.series)) * ROW + PAD, top + 150 + below,
                 text_width(one_line(spec.ylabel), FONT) + 2 * PAD)
    return _Frame(math.ceil(width), math.ceil(height), left, right, top, math.ceil(height) - below, rotate)


def _text(x: float, y: float, s: str, size: float = FONT, anchor: str = "start", extra: str = "") -> str:
    return (f'<text x="{_n(x)}" y="{_n(y)}"' + (f' font-size="{size:g}"' if size != FONT else "")
            + (f' text-anchor="{anchor}"' if anchor != "start" else "") + extra + f">{_e(one_line(s))}</text>")


def _centred(mid: float, w: float, lo: float, hi: float) -> float:
    """The centre of a text `w` wide near `mid`, moved so that it lies within [lo, hi]."""
    return min(max(mid, lo + w / 2), max(lo + w / 2, hi - w / 2))


def _axes(f: _Frame, x: Axis | list[str], y: Axis) -> list[str]:
    """The grid, the axes' box, the ticks and their labels."""
    grid, marks, out = [], [], []
    for v, label in y.ticks:
        py = f.y(y, v)
        grid.append(f"M{_n(f.left)} {_n(py)}H{_n(f.right)}")
        marks.append(f"M{_n(f.left - TICK)} {_n(py)}h{TICK:g}")
        out.append(_text(f.left - TICK - 3, py + FONT * 0.35, label, anchor="end"))
    base = f.bottom + TICK + 3 + FONT * ASCENT
    if isinstance(x, Axis):
        ticks = [(f.x(x, v), label) for v, label in x.ticks]
    else:
        slot = (f.right - f.left) / max(1, len(x))
        ticks = [(f.left + (i + 0.5) * slot, label) for i, label in enumerate(x)]
    for px, label in ticks:
        grid.append(f"M{_n(px)} {_n(f.top)}V{_n(f.bottom)}")
        marks.append(f"M{_n(px)} {_n(f.bottom)}v{TICK:g}")
        if f.rotate:
            out.append(_text(px, base, label, anchor="end", extra=f' transform="rotate(-45 {_n(px)} {_n(base)})"'))
        else:
            out.append(_text(px, base, label, anchor="middle"))
    return [f'<path d="{"".join(grid)}" stroke="#b0b0b0" stroke-opacity="0.3" stroke-width="1.1" fill="none"/>',
            f'<rect x="{_n(f.left)}" y="{_n(f.top)}" width="{_n(f.right - f.left)}" '
            f'height="{_n(f.bottom - f.top)}" stroke="#000" stroke-width="1.1" fill="none"/>',
            f'<path d="{"".join(marks)}" stroke="#000" stroke-width="1.1"/>', *out]


def _lines(f: _Frame, x: Axis, y: Axis, pts: list[list[tuple[Any, float, float, float]]],
           cols: list[str]) -> list[str]:
    """Each series's error bars (with caps) under its line and round markers, in the series' colour."""
    bars, curves = [], []
    for p, c in zip(pts, cols):
        if not p:
            continue
        xy = [(f.x(x, px), f.y(y, py), f.y(y, lo), f.y(y, hi)) for px, py, lo, hi in p]
        d = "".join(f"M{_n(a)} {_n(lo)}V{_n(hi)}M{_n(a - 4)} {_n(lo)}h8M{_n(a - 4)} {_n(hi)}h8" for a, _, lo, hi in xy)
        bars.append(f'<path class="err" d="{d}" stroke="{c}" stroke-width="1.5" fill="none"/>')
        curves.append(f'<path d="M{"L".join(f"{_n(a)} {_n(b)}" for a, b, _, _ in xy)}" stroke="{c}" '
                      f'stroke-width="2" fill="none" stroke-linejoin="round"/>')
        curves.append(f'<g fill="{c}">' + "".join(f'<circle cx="{_n(a)}" cy="{_n(b)}" r="4"/>' for a, b, _, _ in xy)
                      + "</g>")
    return bars + curves


def _bars(f: _Frame, cats: list[str], y: Axis, spec: Any, pts: list[list[tuple[Any, float, float, float]]],
          cols: list[str]) -> list[str]:
    """Each series's bars side by side in each category, and a black error bar with caps where a bar has an
    interval (none where its low and high are its value)."""
    slot = (f.right - f.left) / max(1, len(cats))
    width = 0.8 * slot / max(1, len(pts))
    zero = f.y(y, y.lo) if y.log else f.y(y, min(max(0.0, y.lo), y.hi))
    out, errs = [], []
    for i, (p, c) in enumerate(zip(pts, cols)):
        rects = []
        for x, v, lo, hi in p:
            mid = f.left + (cats.index(str(x)) + 0.5) * slot + (i - (len(pts) - 1) / 2) * width
            top = f.y(y, v)
            rects.append(f'<rect x="{_n(mid - width / 2)}" y="{_n(min(top, zero))}" width="{_n(width)}" '
                         f'height="{_n(abs(zero - top))}"/>')
            if lo < v or hi > v:
                a, b = f.y(y, lo), f.y(y, hi)
                errs.append(f"M{_n(mid)} {_n(a)}V{_n(b)}M{_n(mid - 3)} {_n(a)}h6M{_n(mid - 3)} {_n(b)}h6")
        out.append(f'<g fill="{c}">' + "".join(rects) + "</g>")
    if errs:
        out.append(f'<path class="err" d="{"".join(errs)}" stroke="#000" stroke-width="1.3" fill="none"/>')
    return out


def _legend(f: _Frame, spec: Any, cols: list[str]) -> list[str]:
    """Right of the axes, from their top: the legend's title (spec.note, one row per line), then each series's
    line and marker (a line plot) or box (a bar plot) and its label, in the series' order."""
    x0 = f.right + 0.02 * WIDTH
    out = []
    rows = spec.note.split("\n") if spec.note else []
    for i, line in enumerate(rows):
        out.append(_text(x0, f.top + i * ROW + LEGEND_FONT * ASCENT, line, LEGEND_FONT))
    for i, (s, c) in enumerate(zip(spec.series, cols), start=len(rows)):
        mid = f.top + i * ROW + ROW / 2
        if spec.kind == "line":
            out.append(f'<path d="M{_n(x0)} {_n(mid)}h22" stroke="{c}" stroke-width="2"/>'
                       f'<circle cx="{_n(x0 + 11)}" cy="{_n(mid)}" r="4" fill="{c}"/>')
        else:
            out.append(f'<rect x="{_n(x0)}" y="{_n(mid - 5)}" width="22" height="10" fill="{c}"/>')
        out.append(_text(x0 + SWATCH, mid + LEGEND_FONT * 0.35, s.label, LEGEND_FONT))
    return out


def _titles(f: _Frame, spec: Any) -> list[str]:
    """The title above the axes, the x axis's label below them and the y axis's label left of them (turned),
    each centred on the axes and moved inside the picture where it is wider than they are."""
    title, xlabel, ylabel = one_line(spec.title), one_line(spec.xlabel), one_line(spec.ylabel)
    tx = _centred((f.left + f.right) / 2, text_width(title, TITLE_FONT), PAD, f.width - PAD)
    xx = _centred((f.left + f.right) / 2, text_width(xlabel, FONT), PAD, f.width - PAD)
    yy = _centred((f.top + f.bottom) / 2, text_width(ylabel, FONT), PAD, f.height - PAD)
    yx = PAD + FONT * ASCENT
    return [_text(tx, PAD + TITLE_FONT * ASCENT, title, TITLE_FONT, "middle"),
            _text(xx, f.height - PAD - FONT * (LINE - ASCENT), xlabel, anchor="middle"),
            _text(yx, yy, ylabel, anchor="middle", extra=f' transform="rotate(-90 {_n(yx)} {_n(yy)})"')]


def render_svg(spec: Any) -> bytes:
    """The SVG of one plot (a docs.plots.PlotSpec): the same bytes for the same spec, no ids, dates or
    random values; an image with its title as its accessible name."""
    pts = _points(spec)
    cols = colours([s.label for s in spec.series])
    y = _y_axis(spec, pts)
    cats = _x_axis(spec, pts, 0.0) if spec.kind != "line" else None
    f = _frame(spec, y, cats)
    x = cats if cats is not None else _x_axis(spec, pts, f.right - f.left)
    data = _lines(f, x, y, pts, cols) if isinstance(x, Axis) else _bars(f, x, y, spec, pts, cols)
    title = _e(one_line(spec.title))
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{f.width:g}" height="{f.height:g}" '
            f'viewBox="0 0 {f.width:g} {f.height:g}" role="img" aria-label="{title}" font-family="{FAMILY}" '
            f'font-size="{FONT:g}"><title>{title}</title><rect width="100%" height="100%" fill="#fff"/>')
    body = [*_axes(f, x, y), *data, *_titles(f, spec), *_legend(f, spec, cols)]
    return (head + "\n" + "\n".join(body) + "\n</svg>\n").encode()
