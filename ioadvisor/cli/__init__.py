"""The `ioadvise` command: thin typer commands that call one library function each and render the result.

Each command lives in a module of this package with a typer app of its own. The root group (cli/root.py) imports
only the module of the command being run, so `ioadvise advise` or `ioadvise submit` does not pay for the imports of
`docs` or `bench` (start-up time is a target: see benchmarks/bench_advise.py). The package itself does not import
typer: `ioadvise advise` read without typer (cli/advise.py) loads its own modules only.
"""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def main() -> None:
    """Console-script entry point: the command line read by typer and run (`common.run_command`)."""
    from .root import main as run
    run()


def __getattr__(name: str) -> Any:
    """The root's typer app (`app`), its commands (`COMMANDS`) and the settings of the commands' own apps
    (`command_app`), from cli/root.py."""
    if name not in ("app", "command_app", "COMMANDS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import root
    return getattr(root, name)
