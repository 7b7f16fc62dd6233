"""The `ioadvise` command: thin typer commands that call one library function each and render the result."""
from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="ioadvise",
    help="Parallel I/O advice for Slurm HPC centers, from measured runs.",
    rich_markup_mode="rich",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)

# Command modules; each registers its commands on `app` when imported.
COMMAND_MODULES = ("kb", "advise", "wrap", "docs", "diagnose", "bench")

for _mod in COMMAND_MODULES:
    try:
        importlib.import_module(f"{__name__}.{_mod}")
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_mod}":
            raise


def main() -> None:
    """Console-script entry point."""
    app()
