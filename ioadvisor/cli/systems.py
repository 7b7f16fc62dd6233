"""`ioadvise systems`: the systems the knowledge base and the center files (a site's, shipped) know."""
from __future__ import annotations

from pathlib import Path


from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, print_json, table

app = command_app()


def _quoted(name: str) -> str:
    """A file-system name as one item of a comma-separated list: quoted when it holds a comma, a quote or a
    space, so `a, b` reads as one name and not two."""
    return '"' + name.replace('"', '\\"') + '"' if any(c in name for c in ',"') or name != name.strip() else name


@app.command("systems")
def systems(kb: KBOption = None, json_out: JsonOption = False) -> None:
    """List every known system: its runs (yours and the reference data's), their sources, and its center file."""
    with cli_errors():
        from ..kb import KB
        from ..center.systems import known_systems
        from ..kb.queries import system_summaries
        with KB.open(kb, create=False) as store:
            rows = known_systems(system_summaries(store))
    if json_out:
        print_json(rows)
        return
    t = table(("system", "runs", "yours", "sources", "file systems", "center file"), right=("runs", "yours", "sources"))
    for r in rows:
        t.add_row(r["system"], str(r["runs"]), str(r["user_runs"]), str(len(r["sources"])),
                  ", ".join(_quoted(f) for f in r["filesystems"]) or "-", _center_file(r))
    console.print(t)


def _center_file(r: dict) -> str:
    """A shipped center by its file name, a site's own (from $IOADVISE_CENTERS) by its whole path."""
    if not r["center_file"]:
        return "-"
    return Path(r["center_file"]).name if r["center_origin"] == "shipped" else r["center_file"]
