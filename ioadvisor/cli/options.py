"""Command-line options declared once, as data: typer builds a command's options from them (`annotated`), and a
command as common as `advise` is also read without typer (`parse`), whose import costs about 45 ms of a cold
process.

`parse` reads only what it fully understands: each option at most once, as `--name value`, `--name=value` or
`-N value`; a flag as its own spelling; a whole number as plain digits; a path that exists only if it can be read
(as click's Path type demands). Anything else (--help, an unknown option, a bad value, a missing one, an argument,
a shell-completion request) is None: the caller leaves the command line to typer, which answers it as before.
tests/test_cli_quick.py holds both readers to the same values for valid and invalid command lines.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..frozen import NamedTuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence

_INT = re.compile(r"-?[0-9]+")


class Opt(NamedTuple):
    """One option of a command: the parameter's name, its spellings as typer takes them (a flag's off spelling
    after a slash), the type of its value (`bool` for a flag), its help, and where typer reads it from too."""

    name: str
    decls: tuple[str, ...]
    kind: type
    help: str
    default: Any = None
    envvar: str | None = None
    show_default: bool = True


def annotated(opt: Opt) -> Any:
    """The parameter annotation typer reads `opt` from."""
    from typing import Annotated, Optional

    import typer
    kind = opt.kind if opt.default is not None else Optional[opt.kind]
    extra = {"envvar": opt.envvar} if opt.envvar else {}
    return Annotated[kind, typer.Option(*opt.decls, help=opt.help, show_default=opt.show_default, **extra)]


def signature_of(opts: Sequence[Opt]) -> tuple[Any, dict[str, Any]]:
    """(signature, annotations) of a command function taking `opts` as keyword parameters, for typer."""
    import inspect
    params = [inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=annotated(o))
              for o in opts]
    return inspect.Signature(params), {p.name: p.annotation for p in params}


def _spellings(opts: Sequence[Opt]) -> dict[str, tuple[Opt, Any]]:
    """Each spelling of each option -> (option, the value a flag spelled so stands for; None for a value)."""
    out: dict[str, tuple[Opt, Any]] = {}
    for o in opts:
        for decl in o.decls:
            on, _, off = decl.partition("/")
            out[on] = (o, True if o.kind is bool else None)
            if off:
                out[off] = (o, False)
    return out


def _value(opt: Opt, text: str) -> tuple[bool, Any]:
    """(understood, the value) of an option's text as typer would read it."""
    if opt.kind is int:
        return (True, int(text)) if _INT.fullmatch(text) else (False, None)
    if opt.kind is Path:
        try:
            os.stat(text)
        except OSError:
            return True, Path(text)
        except ValueError:
            return False, None
        return (True, Path(text)) if os.access(text, os.R_OK) else (False, None)
    return True, text


def parse(args: Sequence[str], opts: Sequence[Opt], environ: Mapping[str, str] = os.environ) -> dict | None:
    """The command's parameters from `args` as typer would pass them, or None where typer must read them."""
    if any(k.endswith("_COMPLETE") and v for k, v in environ.items()):
        return None
    known = _spellings(opts)
    given: dict[str, Any] = {}
    rest = list(args)
    while rest:
        token = rest.pop(0)
        name, eq, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        if name not in known:
            return None
        opt, flag = known[name]
        if opt.name in given or (flag is not None and eq):
            return None
        if flag is not None:
            given[opt.name] = flag
            continue
        if not eq:
            if not rest:
                return None
            attached = rest.pop(0)
        ok, given[opt.name] = _value(opt, attached)
        if not ok:
            return None
    for o in opts:
        if o.name not in given:
            env = environ.get(o.envvar) if o.envvar else None
            ok, given[o.name] = _value(o, env) if env else (True, o.default)
            if not ok:
                return None
    return {o.name: given[o.name] for o in opts}


# the options several commands share
KB = Opt("kb", ("--kb",), Path, "Knowledge base file (default: $IOADVISE_KB, else ~/.local/share/ioadvisor/kb.sqlite).",
         envvar="IOADVISE_KB", show_default=False)
JSON = Opt("json_out", ("--json",), bool, "Print the complete result as JSON.", default=False)
# the workload options `advise`, `wrap` and `submit` share (in wrap and submit they beat the script's #IOADVISE
# lines)
RANKS_PER_NODE = Opt("ranks_per_node", ("--ranks-per-node",), int,
                     "MPI ranks per node (wins over -n and --ntasks-per-node).")
BYTES_PER_RANK = Opt("bytes_per_rank", ("--bytes-per-rank",), str, "Data each rank writes or reads, e.g. 1GiB.")
TOTAL_BYTES = Opt("total_bytes", ("--total-bytes",), str, "Total data instead of --bytes-per-rank.")
API = Opt("api", ("--api",), str, "posix, mpiio or hdf5.")
LAYOUT = Opt("layout", ("--layout",), str, "shared (one file), fpp (file per process) or any.")
OP = Opt("op", ("--op",), str, "write or read.")
ACCESS_SIZE = Opt("access_size", ("--access-size",), str, "Bytes per I/O request, e.g. 4MiB.")
RANDOM = Opt("random", ("--random",), bool, "Random rather than sequential access.")
FILES = Opt("files", ("--files",), int, "Files each rank creates (metadata load).")
LIFETIME = Opt("lifetime", ("--lifetime",), str, "job (scratch only) or after-job (must persist).")
COLLECTIVE = Opt("collective", ("--collective/--independent",), bool, "Pin collective or independent MPI-IO.")
