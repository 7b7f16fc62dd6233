"""Plots of measured runs: what each plot shows (PlotSpec), drawn as SVG by docs.svgplot and, for slides, as
PNG by matplotlib (Agg); both byte-identical for the same runs.

Points with the same settings are drawn as their median with the min-max range (or the published 95%
confidence interval of a single run) as error bars, so plots stay small for large knowledge bases."""
from __future__ import annotations

import functools
import hashlib
import io
import os
from pathlib import Path
import statistics
import sys
from typing import Any, Callable

from ..frozen import frozen
from ..model.run import META_OPS, Run
from ..util import atomic_write, cache_dir, home_dir, private_dir
from . import svgplot
from .svgplot import LEGEND_AT, LOG_SPAN, PALETTE, colour_of, colours  # noqa: F401  (the plots' style)

WIDTH_IN, HEIGHT_IN = 8.4, 3.8      # the PNG's size (inches at 100 dpi: svgplot's pixels)
MAX_SERIES = 12      # curves per line plot: those with the most points (a legend of 48 is unreadable, and drawing
                     # it took half of a plot's time)


@frozen
class Series:
    label: str
    x: tuple[Any, ...]
    y: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


@frozen
class PlotSpec:
    name: str            # file stem
    kind: str            # line | bar
    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    quantity: str = "bandwidth"   # bandwidth | metadata | iops: one per plot, so one unit per y axis
    unit: str = "MiB/s"
    integer_x: bool = False       # the x axis counts things (stripes, processes): integer ticks only
    note: str = ""                # legend title: how many of how many curves are shown, when not all are


QUANTITIES = {"bandwidth": "MiB/s", "metadata": "ops/s", "iops": "ops/s"}


def quantity_of(r: Any) -> str | None:
    """bandwidth (MiB/s), metadata (file and directory operations/s) or iops (data operations/s)."""
    if r.unit == "MiB/s":
        return "bandwidth"
    if r.unit == "ops/s":
        return "metadata" if r.op in META_OPS else "iops"
    return None


@functools.lru_cache(maxsize=1)
def _english() -> Any:
    from .i18n import catalogue, translator
    return translator(catalogue("en"))


def _aggregate(points: dict[str, dict[Any, list[Run]]]) -> tuple[Series, ...]:
    out = []
    for label in sorted(points):
        xs = sorted(points[label], key=lambda v: (isinstance(v, str), v))
        ys, lo, hi = [], [], []
        for x in xs:
            rs = points[label][x]
            vals = sorted(r.value for r in rs)
            m = statistics.median(vals)
            if len(rs) == 1 and rs[0].ci95_low is not None and rs[0].ci95_high is not None:
                lo.append(rs[0].ci95_low), hi.append(rs[0].ci95_high)
            elif len(rs) == 1 and rs[0].value_min is not None and rs[0].value_max is not None:
                lo.append(rs[0].value_min), hi.append(rs[0].value_max)
            else:
                lo.append(vals[0]), hi.append(vals[-1])
            ys.append(m)
        out.append(Series(label, tuple(xs), tuple(ys), tuple(lo), tuple(hi)))
    return tuple(out)


def _word(t: Any, key: str, default: str) -> str:
    """The catalogue's word for `key` (an operation, a layout), else `default` as the KB writes it."""
    try:
        return t(key)
    except KeyError:
        return default


@functools.lru_cache(maxsize=1024)
def _label_of(op: str, layout: str | None, api: str | None, t: Any) -> str:
    return " ".join(x for x in (_word(t, f"op_{op}", op), layout and _word(t, f"plot_layout_{layout}", layout),
                                api if api != "POSIX" else None) if x)


def _label(r: Run, t: Any = None) -> str:
    return _label_of(r.op, r.layout, r.api, t or _english())


def _label_clients(r: Run, t: Any = None) -> str:
    """A curve per client count too: bandwidth vs stripes from 1 client and from 24 is not one curve."""
    t = t or _english()
    clients = (t("plot_clients_unknown") if r.nodes is None
               else t("plot_client_one" if r.nodes == 1 else "plot_client_many", n=r.nodes))
    return f"{_label(r, t)}, {clients}"


def _label_stripes(r: Run, t: Any = None) -> str:
    """A curve per stripe count too, for the same reason along the other axis."""
    if r.stripe_count is None:
        return _label(r, t)
    t = t or _english()
    return f"{_label(r, t)}, {t('plot_stripe_one' if r.stripe_count == 1 else 'plot_stripe_many', n=r.stripe_count)}"


def _line(name: str, runs: list[Run], xattr: str, title: str, xlabel: str, ylabel: str,
          label=_label, quantity: str = "bandwidth", t: Any = None) -> PlotSpec | None:
    pts: dict[str, dict[Any, list[Run]]] = {}
    for r in runs:
        x = getattr(r, xattr)
        if x is not None:
            pts.setdefault(label(r), {}).setdefault(x, []).append(r)
    pts = {k: v for k, v in pts.items() if len(v) >= 2}
    if not pts:
        return None
    note = ""
    if len(pts) > MAX_SERIES:
        # the curves with the most points, then by label: the same choice from all runs or their stand-ins
        keep = sorted(pts, key=lambda k: (-len(pts[k]), k))[:MAX_SERIES]
        note = (t or _english())("plot_curves_shown", shown=MAX_SERIES, total=len(pts))
        pts = {k: pts[k] for k in keep}
    return PlotSpec(name, "line", title, xlabel, ylabel, _aggregate(pts), quantity, QUANTITIES[quantity], True,
                    note)


def section_plots(prefix: str, fs: str, runs: list[Run], t: Any = None,
                  points: dict[str, list[Any]] | None = None) -> list[PlotSpec]:
    """The plots one file system's runs support (none where there are too few points for a curve), with the
    texts of the language `t` translates to (English by default). Bandwidth, metadata rates and IOPS never
    share a plot.

    `points` (from docs.collect, for a file system with many runs) gives per plot ("stripes", "clients",
    "metadata", "iops", "layout") stand-in runs that yield the same points as all the runs; `runs` is then
    unused."""
    t = t or _english()
    bw = [r for r in runs if quantity_of(r) == "bandwidth"]
    meta = [r for r in runs if quantity_of(r) == "metadata"]
    iops = [r for r in runs if quantity_of(r) == "iops"]
    p = points or {"stripes": bw, "clients": bw, "metadata": meta, "iops": iops, "layout": bw}
    specs = [
        _line(f"{prefix}-stripes", p["stripes"], "stripe_count", t("plot_stripes_title", fs=fs),
              t("plot_stripes_x"), t("plot_bandwidth_y"), label=lambda r: _label_clients(r, t), t=t),
        _line(f"{prefix}-clients", p["clients"], "ranks", t("plot_clients_title", fs=fs), t("plot_clients_x"),
              t("plot_bandwidth_y"), label=lambda r: _label_stripes(r, t), t=t),
        _line(f"{prefix}-metadata", p["metadata"], "ranks", t("plot_metadata_title", fs=fs),
              t("plot_processes_x"), t("plot_metadata_y"), label=lambda r: _word(t, f"op_{r.op}", r.op),
              quantity="metadata", t=t),
        _line(f"{prefix}-iops", p["iops"], "ranks", t("plot_iops_title", fs=fs), t("plot_processes_x"),
              t("plot_iops_y"), label=lambda r: _label(r, t), quantity="iops", t=t),
    ]
    layouts: dict[str, dict[Any, list[Run]]] = {}
    for r in p["layout"]:
        # the best of each layout among runs without an evidence flag: a cache-sized or above-peak run is no
        # measure of what the layout does on the file system
        if r.layout in ("fpp", "shared") and not getattr(r, "flags", None):
            layouts.setdefault(r.layout, {}).setdefault(r.op, []).append(r)
    if len(layouts) == 2 and set(layouts["fpp"]) & set(layouts["shared"]):
        common = set(layouts["fpp"]) & set(layouts["shared"])
        # the best measured value of each layout per operation
        best = {_word(t, f"plot_layout_{lay}", lay):
                {_word(t, f"op_{op}", op): [max(rs, key=lambda r: (r.value, r.id or ""))]
                 for op, rs in ops.items() if op in common}
                for lay, ops in layouts.items()}
        specs.append(PlotSpec(f"{prefix}-layout", "bar", t("plot_layout_title", fs=fs), t("plot_operation_x"),
                              t("plot_bandwidth_y"), _aggregate(best)))
    return [s for s in specs if s is not None]


QUANTILE_MIN = 4     # runs of one bar from which its 25-75% quantiles are drawn (fewer: no interval)


def ci_plots(prefix: str, system: str, runs: list[Run], t: Any = None) -> list[PlotSpec]:
    """Runs with published 95% confidence intervals (e.g. open/create rates): one bar per file system and
    comparable runs (same operation, API and layout), one plot per quantity (bandwidth, metadata rates, IOPS).
    A run with an evidence flag (cache-sized, above-peak) is left out. A bar of one run shows its value and its
    published interval; of several, their median and, from QUANTILE_MIN runs on, their 25-75% quantiles (with
    fewer, no interval: the smallest and largest of two runs are no interval of anything). The legend's title
    says so."""
    t = t or _english()
    out = []
    for quantity in QUANTITIES:
        pts: dict[str, dict[Any, list[Run]]] = {}
        for r in runs:
            if quantity_of(r) == quantity and not getattr(r, "flags", None) and r.ci95_low is not None \
                    and r.ci95_high is not None:
                pts.setdefault(_label(r, t), {}).setdefault(r.filesystem or "-", []).append(r)
        if pts:
            out.append(PlotSpec(f"{prefix}-ci95-{quantity}", "bar",
                                t("plot_ci_title", system=system, quantity=t(f"plot_q_{quantity}")),
                                t("plot_fs_x"), t(f"plot_{quantity}_y"),
                                tuple(_ci_series(label, pts[label]) for label in sorted(pts)), quantity,
                                QUANTITIES[quantity], note=t("plot_ci_note", n=QUANTILE_MIN)))
    return out


def _ci_series(label: str, points: dict[Any, list[Run]]) -> Series:
    """Per file system: one run's value and published interval, or the median of several with their 25-75%
    quantiles (QUANTILE_MIN runs or more) or no interval (low = high = the median)."""
    xs = sorted(points, key=str)
    ys, lo, hi = [], [], []
    for x in xs:
        rs = points[x]
        if len(rs) == 1:
            ys.append(rs[0].value), lo.append(rs[0].ci95_low), hi.append(rs[0].ci95_high)
            continue
        vals = sorted(r.value for r in rs)
        m = statistics.median(vals)
        q1, _, q3 = statistics.quantiles(vals, n=4, method="inclusive") if len(vals) >= QUANTILE_MIN else (m, m, m)
        ys.append(m), lo.append(q1), hi.append(q3)
    return Series(label, tuple(xs), tuple(ys), tuple(lo), tuple(hi))


_use_log = svgplot.use_log


def _tick(v: float, _pos: object = None) -> str:
    return svgplot.tick_label(v)


_RC = {"font.size": 9, "figure.dpi": 100, "path.simplify": True}
LATIN = ["DejaVu Sans"]
# Japanese labels need a CJK font; DejaVu Sans stays first so Latin text looks the same in every language
CJK = ["DejaVu Sans", "Noto Sans CJK JP"]
_FIGURE: list[Any] = []          # one figure per process, cleared for each plot


def _texts(spec: PlotSpec) -> list[str]:
    return [spec.title, spec.xlabel, spec.ylabel, spec.note, *(s.label for s in spec.series),
            *(str(x) for s in spec.series for x in s.x)]


def _figure() -> Any:
    """This process's figure, emptied. Reusing it keeps the Agg renderer and its text-metrics cache from one
    plot to the next (the same tick labels and legend words recur); the bytes are those of a new figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    if not _FIGURE:
        fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN))
        FigureCanvasAgg(fig)
        _FIGURE.append(fig)
    fig = _FIGURE[0]
    # the last plot's axes removed before the figure is cleared: Figure.clear would first clear them, only to
    # throw them away (an axes' clearing cost a tenth of a plot's drawing)
    for ax in tuple(fig.axes):
        fig.delaxes(ax)
    fig.clear()
    return fig


def _draw_lines(ax: Any, spec: PlotSpec, cols: list[str]) -> list[Any]:
    """Each curve as one line with its markers and one line of cap markers, all error bars as one collection;
    the legend's handles (line and marker)."""
    from matplotlib import ticker
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    # error bars from min(low, y) to max(high, y), as errorbar() draws them, and their caps
    bars, bar_cols, caps = [], [], []
    for s, c in zip(spec.series, cols):
        lows = [min(lo, y) for y, lo in zip(s.y, s.low)]
        highs = [max(hi, y) for y, hi in zip(s.y, s.high)]
        bars += [((x, lo), (x, hi)) for x, lo, hi in zip(s.x, lows, highs)]
        bar_cols += [c] * len(s.x)
        caps.append(([*s.x, *s.x], [*lows, *highs]))
    ax.add_collection(LineCollection(bars, colors=bar_cols, linewidths=1.5), autolim=True)
    handles = []
    for s, c, (cx, cy) in zip(spec.series, cols, caps):
        ax.plot(cx, cy, linestyle="none", marker="_", markersize=6, color=c)
        ax.plot(s.x, s.y, marker="o", color=c)
        handles.append(Line2D([], [], marker="o", color=c, label=s.label))
    if _use_log([float(x) for s in spec.series for x in s.x]):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(ticker.NullLocator())   # powers of two label themselves
    elif spec.integer_x:
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    return handles


def _draw_bars(ax: Any, spec: PlotSpec, cols: list[str]) -> None:
    """Each series as bars side by side per category, with error bars."""
    cats = sorted({x for s in spec.series for x in s.x}, key=str)
    width = 0.8 / max(1, len(spec.series))
    for i, (s, c) in enumerate(zip(spec.series, cols)):
        pos = [cats.index(x) + (i - (len(spec.series) - 1) / 2) * width for x in s.x]
        ax.bar(pos, s.y, width=width, label=s.label, color=c)
        # error bars only where there is an interval (a bar with none gets no cap either)
        bars = [(p, y, max(0.0, y - lo), max(0.0, hi - y)) for p, y, lo, hi in zip(pos, s.y, s.low, s.high)
                if lo < y or hi > y]
        if bars:
            ax.errorbar([b[0] for b in bars], [b[1] for b in bars], yerr=[[b[2] for b in bars], [b[3] for b in bars]],
                        fmt="none", ecolor="black", elinewidth=1, capsize=4)
    ax.set_xticks(range(len(cats)), [str(c) for c in cats])


def _axes_text(ax: Any, spec: PlotSpec, handles: list[Any] | None) -> None:
    """The y scale, tick labels, title, axis labels, grid and legend."""
    from matplotlib import ticker
    if _use_log([v for s in spec.series for v in (*s.y, *s.low, *s.high)]):
        ax.set_yscale("log")
    # plain tick labels (no mathtext): faster, and readable as numbers
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_formatter(ticker.FuncFormatter(_tick))
            # no minor ticks: unlabelled, and laying them out took a fifth of a plot's drawing time
            axis.set_minor_locator(ticker.NullLocator())
    # at the top of the axes, where it would go by itself (the top axis has no labels); placed, not searched
    # for, which took a tenth of a plot's drawing time
    ax.set_title(spec.title, y=1.0)
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    ax.grid(True, which="major", alpha=0.3)
    # the legend sits right of the axes, never over the data
    ax.legend(**({"handles": handles} if handles is not None else {}), fontsize=8, loc="upper left",
              bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False, title=spec.note or None,
              title_fontsize=8, alignment="left")


def _matplotlib_home() -> None:
    """Where the user's home cannot hold matplotlib's configuration and font list (~/.config/matplotlib: no home,
    a missing or read-only one), they go to ioadvisor's cache, else to a directory of this process's own;
    matplotlib would otherwise warn of a home the user need not have. Before matplotlib is first imported."""
    if os.environ.get("MPLCONFIGDIR") or os.environ.get("XDG_CONFIG_HOME") or "matplotlib" in sys.modules:
        return
    home = home_dir()
    if home is not None and os.path.isdir(home) and os.access(home, os.W_OK | os.X_OK):
        return
    os.environ["MPLCONFIGDIR"] = str(cache_dir("matplotlib") or private_dir("ioadvise-matplotlib-"))


def _fit(fig: Any, ax: Any, pad: float = 4.0) -> None:
    """Margins that hold every text inside the figure: the left one widened until the y axis's tick labels and
    label fit (wide tick labels such as 10,000,000 pushed the label out of the picture), the right one narrowed
    until the legend does. Measured, not guessed, with the figure's own renderer (`pad` pixels to spare)."""
    r = fig.canvas.get_renderer()
    width = fig.bbox.width
    left, right = fig.subplotpars.left, fig.subplotpars.right
    x0 = ax.yaxis.get_tightbbox(r).x0
    if x0 < pad:
        left += (pad - x0) / width
    legend = ax.get_legend()
    if legend is not None:
        x1 = legend.get_window_extent(r).x1
        if x1 > width - pad:
            right -= (x1 - width + pad) / width
    if (left, right) != (fig.subplotpars.left, fig.subplotpars.right):
        fig.subplots_adjust(left=left, right=right)


def render(spec: PlotSpec, png: bool = True) -> tuple[bytes, bytes | None]:
    """SVG and (with `png`) PNG bytes of one plot; no dates, creator strings or random ids in either."""
    return svgplot.render_svg(spec), render_png(spec) if png else None


def render_png(spec: PlotSpec) -> bytes:
    """The PNG of one plot, drawn by matplotlib (imported here only: a guide without PNGs never loads it).

    Drawn with few artists (matplotlib's cost grows with them): each curve is one line with its markers and one
    line of cap markers, all error bars of the plot are one collection, and the legend shows each curve's line
    and marker."""
    _matplotlib_home()
    import matplotlib
    # the CJK font only where a text needs it: looking glyphs up through a fallback font costs every text
    fonts = LATIN if all(t.isascii() for t in _texts(spec)) else CJK
    with matplotlib.rc_context({**_RC, "font.family": fonts}):
        fig = _figure()
        ax = fig.add_subplot()
        cols = colours([s.label for s in spec.series])
        handles = None
        if spec.kind == "line":
            handles = _draw_lines(ax, spec, cols)
        else:
            _draw_bars(ax, spec, cols)
        _axes_text(ax, spec, handles)
        fig.subplots_adjust(left=0.1, right=LEGEND_AT, top=0.91, bottom=0.13)
        _fit(fig, ax)
        raster = io.BytesIO()
        fig.savefig(raster, format="png", metadata={"Software": None})
    return raster.getvalue()


def _cache_key(spec: PlotSpec) -> str:
    """Same spec, same drawing code and same matplotlib -> same PNG bytes, so the PNG can be reused."""
    h = hashlib.sha256(repr(spec).encode())
    h.update(_code_version())
    return h.hexdigest()[:32]


@functools.lru_cache(maxsize=1)
def _code_version() -> bytes:
    """What a PNG's bytes depend on besides its spec (read once a build): matplotlib's version, this module's
    code and the SVG writer's (the palette and tick format)."""
    import matplotlib
    return matplotlib.__version__.encode() + Path(__file__).read_bytes() + Path(svgplot.__file__).read_bytes()


def _cached(path: Path | None) -> bytes | None:
    try:
        return path.read_bytes() if path is not None else None
    except OSError:
        return None


def _keep(path: Path | None, data: bytes) -> None:
    """Store a drawn plot in the cache (one that cannot be written only costs time)."""
    if path is not None:
        try:
            atomic_write(path, data)
        except OSError:
            pass


class Renderer:
    """Draws plots as they are handed over. SVGs are written at once (a few milliseconds each: not cached, as
    writing them to the cache cost more than drawing them); with `png`, PNGs are drawn by matplotlib, reused from
    the plot cache when an identical plot was drawn before, else drawn in worker processes when there are several
    CPUs (the bytes depend on neither), while the caller goes on reading the next system. `results()` waits for
    them all."""

    def __init__(self, cache: bool = True, progress: Callable[[int], None] | None = None, png: bool = False):
        self.cache, self.progress, self.png = cache, progress, png
        if png:
            _matplotlib_home()
        self.ready: dict[Any, tuple[bytes, bytes | None]] = {}
        self.todo: list[tuple[Any, bytes, Path | None, Any]] = []   # (key, SVG, PNG cache file, drawing)
        self.workers = os.cpu_count() or 1
        self.pool: Any = None

    def submit(self, spec: PlotSpec, key: Any = None) -> None:
        """Draw `spec`; its bytes come back from `results()` under `key` (default: the plot's name)."""
        key = spec.name if key is None else key
        svg = svgplot.render_svg(spec)
        if not self.png:
            self.ready[key] = (svg, None)
            return
        where = cache_dir("plots") if self.cache else None     # None: no usable cache, every PNG drawn
        at = where / f"{_cache_key(spec)}.png" if where is not None else None
        png = _cached(at)
        if png is not None:
            self.ready[key] = (svg, png)
            return
        future = None
        if self.workers > 1:
            if self.pool is None:
                from concurrent.futures import ProcessPoolExecutor
                # matplotlib imported once here rather than in each worker: forked workers inherit it
                import matplotlib.backends.backend_agg  # noqa: F401
                from ..util import die_with_parent
                self.pool = ProcessPoolExecutor(max_workers=self.workers, initializer=die_with_parent)
            future = self.pool.submit(render_png, spec)
        self.todo.append((key, svg, at, future or spec))

    def results(self) -> dict[Any, tuple[bytes, bytes | None]]:
        """Every plot handed over, by key: its SVG and its PNG (None unless the renderer was made with `png`; a PNG
        no worker process draws is drawn here)."""
        out = dict(self.ready)
        try:
            for key, svg, at, job in self.todo:
                png = render_png(job) if isinstance(job, PlotSpec) else job.result()
                out[key] = (svg, png)
                _keep(at, png)
                if self.progress is not None:
                    self.progress(len(out))
        finally:
            self.close()
        if self.progress is not None:
            self.progress(len(out))
        return out

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None
