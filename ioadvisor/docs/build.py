"""Build the guide: pages from Jinja2 templates, plots from matplotlib, strings from the message catalogues.

Output is deterministic (sorted iteration, no timestamps, fixed plot metadata) and every file is written
atomically, so the same KB and centers always give byte-identical files."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jinja2

from ..errors import UsageError
from ..kb import KB
from ..util import atomic_write
from . import collect, decisions, plots, recipes
from .centers import load_centers

HERE = Path(__file__).resolve().parent
LANGS = ("en", "ja")
FORMATS = ("html", "md")


@dataclass(frozen=True)
class BuildResult:
    out: str
    langs: tuple[str, ...]
    formats: tuple[str, ...]
    systems: tuple[str, ...]
    files: int
    plots: int
    runs: int


def catalogue(lang: str) -> dict[str, str]:
    """The message catalogue of one language (i18n/<lang>.toml)."""
    path = HERE / "i18n" / f"{lang}.toml"
    if not path.is_file():
        raise UsageError(f"no message catalogue for language {lang!r} (have: {', '.join(LANGS)})")
    with path.open("rb") as f:
        return {k: str(v) for k, v in tomllib.load(f).items()}


def _translator(cat: dict[str, str]) -> Callable[..., str]:
    def t(key: str, **kw: Any) -> str:
        return cat[key].format(**kw) if kw else cat[key]
    return t


def _md_cell(v: Any) -> str:
    return str("-" if v is None or v == "" else v).replace("|", "\\|").replace("\n", " ")


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE / "templates")),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",), default_for_string=True,
                                            default=True),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["mdcell"] = _md_cell
    return env


def parse_list(value: str | None, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(x.strip() for x in (value or "").split(",") if x.strip()))
    if not items:
        raise UsageError(f"--{what}: give at least one of {', '.join(allowed)}")
    bad = [x for x in items if x not in allowed]
    if bad:
        raise UsageError(f"--{what}: unknown {bad[0]!r} (use {', '.join(allowed)})")
    return items


def build_site(out: str | Path, *, kb: KB, center: str | None = None, langs: tuple[str, ...] = ("en",),
               formats: tuple[str, ...] = ("html",), plot_cache: bool = True) -> BuildResult:
    """Write the guide for `center` (a file or a name; None = every system) into `out`/<lang>/.

    With plot_cache, plots identical to ones drawn before are reused from the user's cache directory."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    centers = load_centers(center)
    by_name = {c["name"].lower(): c for c in centers}
    names = collect.system_names(kb, centers, only=center is not None)
    runs = collect.lite_runs(kb, names)
    systems = [collect.collect_system(kb, n, by_name.get(n.lower()), runs.pop(n.lower())) for n in names]

    # plots: rendered once, written into every language directory
    specs: list[plots.PlotSpec] = []
    for s in systems:
        for sec in s.sections:
            for spec in plots.section_plots(f"{s.slug}-{sec.slug}", f"{s.name} {sec.name}", sec.runs):
                specs.append(spec)
                sec.plots.append({"name": spec.name, "title": spec.title})
            sec.runs = []                         # the tables and plot data are done; free the runs
        ci = plots.ci_plot(s.slug, s.name, s.ci_runs)
        if ci:
            specs.append(ci)
            s.plots.append({"name": ci.name, "title": ci.title})
        s.ci_runs = []
    rendered = plots.render_all(specs, cache=plot_cache)
    recs = {s.name: recipes.recipes(s.center, s.comparisons) for s in systems}
    guide = {s.name: decisions.decision_guide(kb, s.center) for s in systems}

    env = environment()
    files = 0

    def write(path: Path, data: str | bytes) -> None:
        nonlocal files
        atomic_write(path, data)
        files += 1

    css = (HERE / "templates" / "style.css").read_text(encoding="utf-8")
    for lang in langs:
        cat = catalogue(lang)
        root = out / lang
        for name, (svg, png) in sorted(rendered.items()):
            write(root / "plots" / f"{name}.svg", svg)
            write(root / "plots" / f"{name}.png", png)
        for fmt in formats:
            ctx = {"t": _translator(cat), "lang": lang, "ext": fmt, "systems": systems, "recipes": recs,
                   "guide": guide, "langs": langs, "limits": {"rows": collect.ROW_LIMIT,
                                                              "groups": collect.GROUP_LIMIT,
                                                              "provenance": collect.PROVENANCE_LIMIT}}
            if fmt == "html":
                write(root / "style.css", css)
            write(root / f"index.{fmt}", env.get_template(f"index.{fmt}.j2").render(**ctx))
            for s in systems:
                write(root / "systems" / f"{s.slug}.{fmt}",
                      env.get_template(f"system.{fmt}.j2").render(**ctx, s=s))
                write(root / "provenance" / f"{s.slug}.{fmt}",
                      env.get_template(f"provenance.{fmt}.j2").render(**ctx, s=s))
    if "html" in formats:
        write(out / "index.html", env.get_template("languages.html.j2").render(
            langs=langs, names={lang: catalogue(lang)["language_name"] for lang in langs},
            title=catalogue(langs[0])["site_title"]))
    return BuildResult(str(out), tuple(langs), tuple(formats), tuple(s.name for s in systems), files,
                       len(rendered), sum(s.total_runs for s in systems))
