"""MPI-IO hints and Lustre striping as commands: one renderer (`render`), MPI flavours as data (`flavours`).

ROMIO (MPICH, MVAPICH2, Intel MPI, Open MPI's romio component) reads a hints file named by $ROMIO_HINTS with
one `key value` per line; Cray MPICH reads $MPICH_MPIIO_HINTS; Open MPI's default OMPIO component reads
neither. Which variables and component names apply to which version is in `flavours.RULES`.
"""
from __future__ import annotations

import shlex

from .flavours import FLAVOURS, FlavourRule, parse_mpi, parse_version, rule_for
from .render import OMPIO_MCA, Commands, Plan, check_hints, path_fragment, render, render_flavours

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Mapping


def _items(hints: Mapping[str, object]) -> list[tuple[str, str]]:
    out = []
    for k, v in hints.items():
        val = str(v)
        if not k or any(c.isspace() for c in k + val):
            raise ValueError(f"hint {k}={val!r}: keys and values must not contain spaces")
        out.append((k, val))
    return out


def romio_hints_file(hints: Mapping[str, object]) -> str:
    """Text of a $ROMIO_HINTS file: one `key value` per line."""
    return "".join(f"{k} {v}\n" for k, v in _items(hints))


def mpich_mpiio_hints(hints: Mapping[str, object], pattern: str = "*") -> str:
    """`export MPICH_MPIIO_HINTS=...` line (Cray MPICH): `pattern:k=v:k=v`."""
    if not hints:
        return ""
    body = ":".join(f"{k}={v}" for k, v in _items(hints))
    return f"export MPICH_MPIIO_HINTS={shlex.quote(pattern + ':' + body)}"


def ompio_exports(hints: Mapping[str, object]) -> tuple[list[str], dict[str, str]]:
    """`export OMPI_MCA_...` lines for the hints OMPIO understands, and the hints it has no parameter for."""
    lines, rest = [], {}
    for k, v in _items(hints):
        if k in OMPIO_MCA:
            lines.append(f"export OMPI_MCA_{OMPIO_MCA[k]}={v}")
        else:
            rest[k] = v
    return lines, rest


__all__ = ["render", "render_flavours", "Plan", "Commands", "check_hints", "path_fragment", "OMPIO_MCA", "FLAVOURS", "FlavourRule", "parse_mpi", "parse_version",
           "rule_for", "romio_hints_file", "mpich_mpiio_hints", "ompio_exports"]
