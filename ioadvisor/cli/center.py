"""`ioadvise center check`: check center files before they are deployed to the hooks and the guide."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import IOAdvisorError, UsageError
from . import command_app
from .common import JsonOption, console, escape, print_error, print_json, printable

app = command_app()
center_app = typer.Typer(help="Center files (docs/center.md).", no_args_is_help=True, rich_markup_mode="rich")
app.add_typer(center_app, name="center")


@center_app.command("check")
def check(
    files: Annotated[Optional[list[str]], typer.Argument(
        help="Center TOML files or names (found in $IOADVISE_CENTERS, then the shipped ones); none: every "
             "center file found by name.", show_default=False)] = None,
    json_out: JsonOption = False,
) -> None:
    """Load each center file as every command will and list what it leaves out.

    An error (type, unit, stripe size not a multiple of 64 KiB, tier on an unknown file system, MPI flavour,
    tier request or mount the wrapped job and the hooks cannot use) prints one line naming the file, line and
    key, and the exit code is 2. Warnings leave the exit code 0.
    """
    from ..center import available_centers, find_center_file
    from ..center.check import check_center
    reports = []
    failed = False
    for f in files or [str(p) for p in available_centers()]:
        try:
            path = Path(f)
            if not path.exists() and path.suffix != ".toml" and "/" not in f:
                found = find_center_file(f)
                if found is None:
                    raise UsageError(f"unknown center {f!r} (no {f}.toml in $IOADVISE_CENTERS or the shipped "
                                     f"centers; or give a .toml file)")
                path = found
            reports.append(check_center(path))
        except IOAdvisorError as e:
            failed = True
            reports.append({"file": str(f), "ok": False, "error": str(e)})
            print_error(str(e))
    if json_out:
        print_json(reports)
    else:
        for r in reports:
            if not r["ok"]:
                continue
            console.print(f"{printable(r['file'])}: ok, {printable(r['name'])}: {len(r['filesystems'])} file system(s), "
                          f"{len(r['tiers'])} tier(s), {len(r['warnings'])} warning(s)", highlight=False)
            for w in r["warnings"]:
                console.print(f"  [yellow]warning:[/] {escape(w)}", highlight=False, soft_wrap=True, markup=True)
    if failed:
        raise typer.Exit(2)
