"""Build the guide: pages from Jinja2 templates, plots from docs.plots, strings from the message catalogues.

Output is deterministic (sorted iteration, no timestamps, fixed plot metadata) and every file is written
atomically, so the same KB and centers always give byte-identical files."""
from __future__ import annotations

import html
from collections import namedtuple
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator

import jinja2
from markupsafe import Markup

from ..errors import UsageError
from ..frozen import frozen
from ..kb import KB
from ..model.types import Center
from ..mpiio.render import explain_hint
from ..util import atomic_write
from . import collect, decisions, plots, recipes
from .escape import code_parts, href, md_block, md_code, md_code_spans, md_text, one_line
from .i18n import catalogue, translator

HERE = Path(__file__).resolve().parent
ARCHIVE_ROWS = 20          # rows per ranking on the archive page
FORMATS = ("html", "md")


@frozen
class BuildResult:
    out: str
    langs: tuple[str, ...]
    formats: tuple[str, ...]
    systems: tuple[str, ...]
    files: int
    plots: int
    runs: int


def _md_cell(v: Any) -> str:
    """A table cell's value: "-" for none (the text rule, escape.md_text, applies to it as to every value)."""
    return "-" if v is None or v == "" else v


def _md_text(v: Any) -> Any:
    """Every value printed into a Markdown page: the text rule of escape.md_text (Markdown and HTML markup
    escaped, one line); what a filter of escape's rule made (Markup: code spans, blocks, link targets) is left
    alone."""
    if isinstance(v, Markup) or v is None:
        return v
    return md_text(v)


def _command(v: Any) -> Markup:
    """HTML of a command that breaks across lines only at its spaces: each word unbreakable, so a browser never
    splits `--constraint=X` after its `--` or a path at a hyphen (the text copies as written)."""
    return Markup(" ").join(Markup('<span class="nw">{}</span>').format(w) if w else Markup("")
                            for w in str(v).split(" "))


def _code_spans(v: Any) -> Markup:
    """HTML of a text whose `backquoted` parts are code (diagnosis messages and fixes write commands so): the
    text escaped, each complete pair of backquotes made a <code> element."""
    return Markup("").join(Markup("<code>{}</code>").format(_command(p)) if i % 2 else Markup.escape(p)
                           for i, p in enumerate(code_parts(v)))


def environment(fmt: str = "html") -> jinja2.Environment:
    """The Jinja environment of one output format, both following escape's one rule for every value: HTML
    pages are autoescaped; Markdown pages escape every value as Markdown text (escape.md_text). The filters
    `code` (a text with backquoted code), `command` (one code span), `block` (a code block) and `href` (a link
    target: relative or http(s)) mean the same in both."""
    html = fmt == "html"
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(HERE / "templates")),
        autoescape=html, finalize=None if html else _md_text,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["mdcell"] = _md_cell
    env.filters["n"] = lambda v: f"{v:,}"          # a count, as every count of the guide: 100,000
    if html:
        env.filters["href"] = href
        env.filters["code"] = _code_spans
        env.filters["command"] = _command
        env.filters["block"] = lambda v: v
    else:
        env.filters["href"] = lambda v: Markup(href(v))
        env.filters["code"] = lambda v: Markup(md_code_spans(v))
        env.filters["command"] = lambda v, cell=False: Markup(md_code(v, cell))
        env.filters["block"] = lambda v: Markup(md_block(v))
    return env


def mkdocs_config(lang: str, cat: dict[str, str], systems: list[Any], archive: bool = False) -> str:
    """mkdocs.yml for one language's Markdown pages: the nav lists the overview and every system page; the
    HTML files of the same directory are excluded. Plain YAML built from quoted scalars. MkDocs's theme prints
    nav titles into its pages unescaped, so a title (a system's name) is HTML-escaped here, on one line."""
    q = lambda v: '"' + html.escape(one_line(v)).replace("\\", "\\\\").replace('"', '\\"') + '"'  # noqa: E731
    lines = [f"site_name: {q(cat['site_title'])}", f"docs_dir: {lang}", f"site_dir: site-{lang}",
             "use_directory_urls: false", "exclude_docs: |", "  *.html", "  style.css", "  plots/*.png",
             "theme:", "  name: mkdocs", f"  locale: {lang}", "nav:", f"  - {q(cat['nav_home'])}: index.md"]
    lines += [f"  - {q(s.name)}: systems/{s.slug}.md" for s in systems]
    lines += [f"  - {q(cat['provenance_link'] + ': ' + s.name)}: provenance/{s.slug}.md" for s in systems]
    if archive:
        lines.append(f"  - {q(cat['ar_title'])}: archive.md")
    return "\n".join(lines) + "\n"


def parse_list(value: str | None, allowed: tuple[str, ...], what: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(x.strip() for x in (value or "").split(",") if x.strip()))
    if not items:
        raise UsageError(f"--{what}: give at least one of {', '.join(allowed)}")
    bad = [x for x in items if x not in allowed]
    if bad:
        raise UsageError(f"--{what}: unknown {bad[0]!r} (use {', '.join(allowed)})")
    return items


def _centers(spec: str | None) -> list[Center]:
    """The centers the guide describes: every known one (a site's in $IOADVISE_CENTERS and the shipped) when
    `spec` is None, else the one `spec` names (a file or a name). Each is read by the center loader, so a center
    file with an error stops the build with that loader's one-line message (file, line, key)."""
    from ..center import available_centers, load_center, load_center_file
    if spec is not None:
        return [load_center(spec)]
    return sorted((load_center_file(p) for p in available_centers()), key=lambda c: c.name.lower())


def build_site(out: str | Path, *, kb: KB, center: str | None = None, langs: tuple[str, ...] = ("en",),
               formats: tuple[str, ...] = ("html",), plot_cache: bool = True, archive: bool = False,
               png: bool = False, progress: Callable[[str, int, int], None] | None = None,
               workers: int | None = None) -> BuildResult:
    """Write the guide for `center` (a file or a name; None = every system) into `out`/<lang>/.

    The archive report page (users' ids, job ids, applications) is written only with `archive`, and only when
    the KB holds archived jobs. Plots are SVG, written in this process; with `png` each is also drawn as a PNG
    (for slides) by matplotlib, linked under the plot: most of a cold `png` build's time. With plot_cache, PNGs
    identical to ones drawn before are reused from the user's cache directory.
    `progress(stage, done, total)` is called as systems are read, plots drawn and pages written. The systems are
    read in `workers` processes (default: one per core this process may use); the site is the same however
    many."""
    report = progress or (lambda stage, done, total: None)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    centers = _centers(center)
    names = collect.system_names(kb, centers, only=center is not None)
    # page and plot names: unique among the systems, and among each system's file systems
    slugs = collect.unique_slugs(list(names))
    site = _Site(out, langs, formats, [NavEntry(n, slugs[n]) for n in names],
                 centers[0].name if center is not None else None, png, report)
    # each system's SVG plots are drawn (in this process) as soon as it is read; with `png`, its PNGs go to worker
    # processes and are drawn while the next is read
    renderer = plots.Renderer(cache=plot_cache, png=png)
    try:
        read: dict[str, collect.SystemData] = {}
        guide: dict[str, Any] = {}
        recs: dict[str, Any] = {}
        arch, n_specs = None, 0
        # each system's decision guide (which may fit the models), recipes and pages are made as soon as it is
        # read, while the worker processes read the next ones; the archive page's report before the first
        for s in _read_systems(kb, names, slugs, centers, workers, report):
            if archive and not read:
                arch = _archive(kb, names if center is not None else None, centers, report)
            n_specs += _submit_plots(s, langs, renderer)
            report("decision guides", len(read), len(names))
            guide[s.name] = decisions.decision_guide(kb, s.center)
            recs[s.name] = recipes.recipes(s.center, guide[s.name])
            site.system_pages(s, recs, guide, arch)
            read[s.name] = s
        if archive and not read:
            arch = _archive(kb, names if center is not None else None, centers, report)
        systems = [read[n] for n in names]
        site.rest(systems, recs, guide, arch)

        report("drawing plots", 0, n_specs)
        renderer.progress = lambda done: report("drawing plots", done, n_specs)
        drawn = renderer.results()
    finally:
        renderer.close()
    files, n_plots = _write_plots(out, drawn, langs[0])
    return BuildResult(str(out), tuple(langs), tuple(formats), tuple(s.name for s in systems), site.files + files,
                       n_plots, sum(s.total_runs for s in systems))


def _write_plots(out: Path, drawn: dict[Any, tuple[bytes, bytes | None]], lang0: str) -> tuple[int, int]:
    """Each plot's SVG (and PNG) into its language's plots/; the number of files and of plots in `lang0`."""
    files = n_plots = 0
    for (lang, name), (svg, png) in sorted(drawn.items()):
        atomic_write(out / lang / "plots" / f"{name}.svg", svg)
        files += 1
        if png is not None:
            atomic_write(out / lang / "plots" / f"{name}.png", png)
            files += 1
        n_plots += lang == lang0
    return files, n_plots


def _read_systems(kb: KB, names: list[str], slugs: dict[str, str], centers: list[Center], workers: int | None,
                  report: Callable[[str, int, int], None]) -> Iterator[collect.SystemData]:
    """Each system, its page named (`slugs`), as soon as it is read.

    The systems are read in `workers` processes (default: one per core this process may use), the costliest
    first; a system larger than one worker's share is read in parts, its file systems shared out, and assembled
    here (`collect.reading_plan`). What a system shows does not depend on how the reading was shared out."""
    from ..archive.pool import default_workers, kb_items
    by_name = {c.name.lower(): c for c in centers}
    plan = collect.reading_plan(kb, names, default_workers() if workers is None else workers)
    parts: dict[str, list[collect.Part]] = {}
    work = partial(collect.read_item, centers=by_name)
    done = 0
    for (n, _, shares), got in kb_items(kb, work, plan, workers, what="reading system"):
        if shares:
            parts.setdefault(n, []).append(got)
            if len(parts[n]) <= len(shares):
                continue
            got = collect.assemble(kb, n, by_name.get(n.lower()), parts.pop(n))
        report(f"reading {n}", done, len(names))
        done += 1
        got.slug = slugs[n]
        sec_pages = collect.unique_slugs([sec.name for sec in got.sections])
        for sec in got.sections:
            sec.slug = sec_pages[sec.name]
        yield got


def _submit_plots(s: collect.SystemData, langs: tuple[str, ...], renderer: plots.Renderer) -> int:
    """Hand the plots of one system (each file system's, then the CI runs') in every language to `renderer`,
    list them on the system's pages and free the runs they were drawn from; the number submitted."""
    n_specs = 0
    for sec in s.sections:
        for lang in langs:
            t = translator(catalogue(lang))
            for spec in plots.section_plots(f"{s.slug}-{sec.slug}", f"{s.name} {sec.name}", sec.runs, t,
                                            sec.points):
                renderer.submit(spec, (lang, spec.name))
                n_specs += 1
                _plot_entry(sec.plots, spec, lang)
        sec.runs, sec.points = [], None
    for lang in langs:
        for spec in plots.ci_plots(s.slug, s.name, s.ci_runs, translator(catalogue(lang))):
            renderer.submit(spec, (lang, spec.name))
            n_specs += 1
            _plot_entry(s.plots, spec, lang)
    s.ci_runs = []
    return n_specs


def _archive(kb: KB, systems: list[str] | None, centers: list[Center],
             report: Callable[[str, int, int], None]) -> dict[str, Any] | None:
    """The archive page's report (of `systems`, None: all), None when the KB holds no archived jobs for them."""
    from ..archive.report import center_report, has_jobs
    if not has_jobs(kb):
        return None
    report("archive", 0, 1)
    archive = center_report(kb, top=ARCHIVE_ROWS, systems=systems,
                            center_rpn={c.name: c.ranks_per_node for c in centers})
    return archive if archive["totals"]["jobs"] else None


def site_catalogue(lang: str, center: str | None) -> dict[str, str]:
    """The language's catalogue, its site title naming `center` (a guide built for one center)."""
    cat = catalogue(lang)
    if center is not None:
        cat = {**cat, "site_title": cat["site_title_center"].format(center=center)}
    return cat


# a system as the navigation bar of every page names it: known before any system is read
NavEntry = namedtuple("NavEntry", ("name", "slug"))


class _Site:
    """The pages, style sheets and MkDocs configurations of the site (not the plots), written as they are made:
    each system's pages as soon as it is read (`system_pages`; their navigation names every system, which is
    known before any is read), the overview and the rest once all are (`rest`). `files` counts them. The site's
    title names `title` (the center), where the guide is one center's; each plot links its PNG with `png`."""

    def __init__(self, out: Path, langs: tuple[str, ...], formats: tuple[str, ...], nav: list[NavEntry],
                 title: str | None, png: bool, report: Callable[[str, int, int], None]):
        self.out, self.langs, self.formats, self.nav, self.title, self.png = out, langs, formats, nav, title, png
        self.report = report
        self.envs = {fmt: environment(fmt) for fmt in formats}
        self.cats = {lang: site_catalogue(lang, title) for lang in langs}
        self.files = 0

    def write(self, path: Path, data: str | bytes) -> None:
        atomic_write(path, data)
        self.files += 1
        self.report("writing pages", self.files, 0)     # a count: pages are quick next to reading and drawing

    def context(self, lang: str, fmt: str, systems: list[Any], recs: dict[str, Any], guide: dict[str, Any],
                archive: dict[str, Any] | None) -> dict[str, Any]:
        cat = self.cats[lang]
        return {"t": translator(cat), "lang": lang, "ext": fmt, "systems": systems, "recipes": recs,
                "lang_names": {x: catalogue(x)["language_name"] for x in self.langs},
                "tv": lambda prefix, v, cat=cat: cat.get(f"{prefix}{v}", v),
                "t_or": lambda key, default, cat=cat: cat.get(key, default),
                "explain_hint": lambda key, value, lang=lang: explain_hint(key, value, lang),
                "guide": guide, "langs": self.langs, "archive": archive, "png": self.png,
                "limits": {"rows": collect.ROW_LIMIT, "groups": collect.GROUP_LIMIT,
                           "provenance": collect.PROVENANCE_LIMIT}}

    def system_pages(self, s: Any, recs: dict[str, Any], guide: dict[str, Any],
                     archive: dict[str, Any] | None) -> None:
        """System `s`'s page and provenance page in every language and format."""
        for lang in self.langs:
            for fmt in self.formats:
                ctx = self.context(lang, fmt, self.nav, recs, guide, archive)
                env, root = self.envs[fmt], self.out / lang
                self.write(root / "systems" / f"{s.slug}.{fmt}",
                           env.get_template(f"system.{fmt}.j2").render(**ctx, s=s, page=f"systems/{s.slug}"))
                self.write(root / "provenance" / f"{s.slug}.{fmt}",
                           env.get_template(f"provenance.{fmt}.j2").render(**ctx, s=s, page=f"provenance/{s.slug}"))

    def rest(self, systems: list[Any], recs: dict[str, Any], guide: dict[str, Any],
             archive: dict[str, Any] | None) -> None:
        """Every file but the systems' pages: overviews, archive pages, style sheets, MkDocs configurations and
        the language choice."""
        css = (HERE / "templates" / "style.css").read_text(encoding="utf-8")
        for lang in self.langs:
            root = self.out / lang
            for fmt in self.formats:
                ctx = self.context(lang, fmt, systems, recs, guide, archive)
                env = self.envs[fmt]
                if fmt == "html":
                    self.write(root / "style.css", css)
                self.write(root / f"index.{fmt}", env.get_template(f"index.{fmt}.j2").render(**ctx, page="index"))
                if archive is not None:
                    self.write(root / f"archive.{fmt}",
                               env.get_template(f"archive.{fmt}.j2").render(**ctx, page="archive"))
                if fmt == "md":
                    self.write(self.out / f"mkdocs-{lang}.yml",
                               mkdocs_config(lang, self.cats[lang], systems, archive is not None))
        if "html" in self.formats:
            self.write(self.out / "index.html", self.envs["html"].get_template("languages.html.j2").render(
                langs=self.langs, names={lang: catalogue(lang)["language_name"] for lang in self.langs},
                titles={lang: self.cats[lang]["site_title"] for lang in self.langs},
                title=self.cats[self.langs[0]]["site_title"]))
            self.write(self.out / "style.css", css)


def _plot_entry(entries: list[dict[str, Any]], spec: plots.PlotSpec, lang: str) -> None:
    """Record a plot for the templates: its file stem, quantity and unit, and its title per language."""
    for e in entries:
        if e["name"] == spec.name:
            e["title"][lang] = spec.title
            return
    entries.append({"name": spec.name, "quantity": spec.quantity, "unit": spec.unit, "title": {lang: spec.title}})
