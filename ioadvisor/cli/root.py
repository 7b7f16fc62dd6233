"""The root command group of `ioadvise` and the typer settings every command shares (`ioadvisor.cli`)."""
from __future__ import annotations

import contextlib
import copy
import importlib
from collections.abc import MutableMapping
from typing import Any, Callable, Iterator

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


try:  # typer 0.26 and later carry their own copy of click
    from typer._click import exceptions as _click_errors
except ImportError:  # pragma: no cover - older typer uses click itself
    from click import exceptions as _click_errors


@contextlib.contextmanager
def _one_line_usage_errors() -> Iterator[None]:
    """A usage error found while parsing (a bad option value, a missing argument, an unknown option) as one
    `Error:` line naming the help to read, instead of click's usage, hint and boxed message."""
    try:
        yield
    except _click_errors.ClickException as e:
        if type(e).__name__ == "NoArgsIsHelpError":   # no arguments at all: the help is the answer
            raise
        from .common import print_error
        ctx = getattr(e, "ctx", None)
        hint = f" (see '{ctx.command_path} -h')" if ctx is not None else ""
        print_error(e.format_message() + hint)
        raise typer.Exit(e.exit_code) from None


class _LazyGroup(TyperGroup):
    """Root group that imports a command's module only when that command is asked for. Usage errors found
    while parsing the command line, at any depth, are one line (_one_line_usage_errors)."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        from .common import sane_width
        sane_width()                    # before the help, a table or a sentence is laid out for $COLUMNS
        with _one_line_usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _one_line_usage_errors():
            return super().invoke(ctx)

    def list_commands(self, ctx: object) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: object, name: str) -> object | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        sub = importlib.import_module(f"{__package__}.{module}").app
        group = next((g for g in sub.registered_groups if g.name == name), None)
        if group is not None:
            return _lazy_group(sub, group)
        built = typer.main.get_command(sub)
        cmd = built.commands.get(name) if isinstance(built, TyperGroup) else built
        if cmd is not None:
            _unwrap_help(cmd)
        return cmd


class _LazyCommands(MutableMapping):
    """A group's subcommands by name, each built from its typer definition when it is first looked up: typer
    builds every subcommand of a group at once (inspecting each function's signature), which for `kb`'s
    eight costs more than `kb list`'s query. Listing them (`--help`) builds them all, in the same order."""

    def __init__(self, infos: dict[str, Any], build: Callable[[Any], Any]) -> None:
        self._infos, self._build, self._built = infos, build, {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            self._built[name] = self._build(self._infos[name])
        return self._built[name]

    def __setitem__(self, name: str, cmd: Any) -> None:
        self._infos.setdefault(name, None)
        self._built[name] = cmd

    def __delitem__(self, name: str) -> None:
        del self._infos[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)


def _lazy_group(sub: typer.Typer, info: Any) -> TyperGroup:
    """The click group typer would build for `sub`'s sub-app `info` (its help, options and callback), with
    subcommands built on demand."""
    settings = dict(pretty_exceptions_short=sub.pretty_exceptions_short, rich_markup_mode=sub.rich_markup_mode)
    inner = info.typer_instance
    shell = copy.copy(inner)
    shell.registered_commands = []              # the group alone; its commands are added below, unbuilt
    shell_info = copy.copy(info)
    shell_info.typer_instance = shell
    group = typer.main.get_group_from_info(shell_info, suggest_commands=sub.suggest_commands, **settings)
    infos = {(c.name or typer.main.get_command_name(c.callback.__name__)): c for c in inner.registered_commands}
    built = dict(group.commands)                # nested groups, built by typer as before

    def build(command_info: Any) -> Any:
        cmd = typer.main.get_command_from_info(command_info, **settings)
        _unwrap_help(cmd)
        return cmd
    lazy = _LazyCommands(infos, build)
    for name, cmd in built.items():
        _unwrap_help(cmd)
        lazy[name] = cmd
    group.commands = lazy
    _unwrap_help(group, recurse=False)
    return group


def _unwrap_help(cmd: object, recurse: bool = True) -> None:
    """Join the source line breaks inside each paragraph of a command's help, so the terminal wraps it."""
    text = getattr(cmd, "help", None)
    if text:
        cmd.help = "\n\n".join(" ".join(p.split()) for p in text.split("\n\n"))  # type: ignore[attr-defined]
    if recurse:
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
    """Console-script entry point: the command line read by typer and run (`common.run_command`)."""
    from .common import run_command
    run_command(app)
