"""The `ioadvise` command: thin typer commands that call one library function each and render the result.

Each command lives in a module of this package with a typer app of its own. The root group imports only the
module of the command being run, so `ioadvise advise` or `ioadvise submit` does not pay for the imports of
`docs` or `bench` (start-up time is a target: see benchmarks/bench_advise.py).
"""
from __future__ import annotations

import importlib

import typer
from typer.core import TyperGroup

# command name -> module of this package whose `app` defines it, in the order `--help` lists them
COMMANDS = {
    "advise": "advise",
    "wrap": "wrap",
    "submit": "wrap",
    "diagnose": "diagnose",
    "archive": "archive",
    "kb": "kb",
    "docs": "docs",
    "bench": "bench",
    "jobs": "jobs",
    "center": "center",
    "systems": "systems",
}


def command_app() -> typer.Typer:
    """A typer app for one command module, with the root's help settings."""
    return typer.Typer(rich_markup_mode="rich", no_args_is_help=True, add_completion=False)


class _LazyGroup(TyperGroup):
    """Root group that imports a command's module only when that command is asked for."""

    def list_commands(self, ctx: object) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: object, name: str) -> object | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        built = typer.main.get_command(importlib.import_module(f"{__name__}.{module}").app)
        cmd = built.commands.get(name) if isinstance(built, TyperGroup) else built
        if cmd is not None:
            _unwrap_help(cmd)
        return cmd


def _unwrap_help(cmd: object) -> None:
    """Join the source line breaks inside each paragraph of a command's help, so the terminal wraps it."""
    text = getattr(cmd, "help", None)
    if text:
        cmd.help = "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))  # type: ignore[attr-defined]
    for sub in getattr(cmd, "commands", {}).values():
        _unwrap_help(sub)


app = typer.Typer(
    name="ioadvise",
    cls=_LazyGroup,
    help="Parallel I/O advice for Slurm HPC centers, from measured runs.",
    rich_markup_mode="rich",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version
        try:
            v = version("ioadvisor")
        except PackageNotFoundError:
            v = "unknown (not installed)"
        typer.echo(f"ioadvise {v}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                      help="Print the version and exit."),
) -> None:
    """Parallel I/O advice for Slurm HPC centers, from measured runs."""


def main() -> None:
    """Console-script entry point."""
    app()
