"""`ioadvise docs build`: the center's I/O guide as a static site."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..frozen import asdict
from ..kb import KB
from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, print_json, printable, progress_bar

app = command_app()

docs_app = typer.Typer(help="The center's I/O guide, generated from the knowledge base.", no_args_is_help=True)
app.add_typer(docs_app, name="docs")


@docs_app.command("build")
def build(
    out: Annotated[Path, typer.Option("--out", "-o", help="Output directory (one subdirectory per language).")]
    = Path("site"),
    center: Annotated[Optional[str], typer.Option(
        "--center", help="Center TOML file or name (in $IOADVISE_CENTERS or shipped; default: every system).",
        show_default=False)] = None,
    lang: Annotated[str, typer.Option("--lang", help="Languages, comma-separated: en, ja.")] = "en",
    fmt: Annotated[str, typer.Option("--format", help="Output formats, comma-separated: html, md.")] = "html",
    kb: KBOption = None,
    archive: Annotated[bool, typer.Option(
        "--archive", help="Add the archive report page (jobs ranked by I/O time at stake, from `ioadvise archive "
        "scan`): it names users' ids, job ids and applications, so it is left out unless asked for.")] = False,
    png: Annotated[bool, typer.Option(
        "--png", help="Also draw each plot as a PNG (for slides), linked under the plot; plots are SVG otherwise "
        "(PNGs are drawn with matplotlib: 75-160 ms a plot, against about 2 ms for its SVG).")] = False,
    json_out: JsonOption = False,
) -> None:
    """Write the guide: an overview of the systems and their file systems and tiers, one page per system with
    measured tables (each value linked to its provenance), plots, published comparisons and recipes."""
    with cli_errors():
        from ..docs.build import FORMATS, build_site, parse_list
        from ..docs.i18n import LANGS
        langs = parse_list(lang, LANGS, "lang")
        formats = parse_list(fmt, FORMATS, "format")
        with KB.open(kb, create=False) as k, progress_bar(json_out) as prog:
            task = prog.add_task("docs build", total=None)

            def step(stage: str, done: int, total: int) -> None:
                prog.update(task, description=stage, completed=done, total=total or None)
            result = build_site(out, kb=k, center=center, langs=langs, formats=formats,
                                archive=archive, png=png, progress=step)
        if json_out:
            print_json(asdict(result))
            return
        console.print(f"Wrote {result.files} files ({len(result.systems)} systems, {result.plots} plots, "
                      f"{result.runs:,} runs) to {printable(str(result.out))}", highlight=False)
        for lg in result.langs:
            for f in result.formats:
                console.print(printable(f"  {Path(result.out) / lg / ('index.' + f)}"), highlight=False)
