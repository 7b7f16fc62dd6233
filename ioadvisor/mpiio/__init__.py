"""Render MPI-IO hints for each MPI flavour, plus the Lustre striping command. Pure functions: text in, text out.

ROMIO (MPICH, Intel MPI, Open MPI's romio component) reads a hints file named by $ROMIO_HINTS with one
`key value` per line; Cray MPICH reads $MPICH_MPIIO_HINTS; Open MPI's default OMPIO component reads neither
and takes MCA parameters instead.
"""
from __future__ import annotations

import re
import shlex
from typing import Mapping

from ..model.units import format_size

# ROMIO hint -> Open MPI OMPIO MCA parameter
OMPIO_MCA = {
    "cb_buffer_size": "io_ompio_bytes_per_agg",
    "cb_nodes": "io_ompio_num_aggregators",
    "striping_unit": "fs_lustre_stripe_size",
    "striping_factor": "fs_lustre_stripe_width",   # OMPIO's "width" is the stripe count
}
FLAVOURS = ("mpich", "openmpi", "cray", "intel")


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


def openmpi_commands(hints: Mapping[str, object], hints_path: str = "romio-hints", romio: str = "romio341") -> list[str]:
    """Open MPI environment. OMPIO is used when every hint maps onto an OMPIO parameter; ROMIO-only hints
    (two-phase on/off, aggregator lists) need the romio component and a $ROMIO_HINTS file."""
    lines, rest = ompio_exports(hints)
    if not rest:
        return lines
    return [f"export OMPI_MCA_io={romio}", f"export ROMIO_HINTS={shlex.quote(hints_path)}"]


def intel_commands(hints: Mapping[str, object], fs_type: str | None, hints_path: str = "romio-hints") -> list[str]:
    """Intel MPI: enable its file-system-specific driver and pass the hints through $ROMIO_HINTS."""
    lines = []
    if fs_type in ("lustre", "gpfs", "panfs"):
        lines += ["export I_MPI_EXTRA_FILESYSTEM=on", f"export I_MPI_EXTRA_FILESYSTEM_FORCE={fs_type}"]
    if hints:
        lines.append(f"export ROMIO_HINTS={shlex.quote(hints_path)}")
    return lines


def h5py_kwargs(alignment: int | None, threshold: int | None = None) -> dict[str, int]:
    """h5py.File keyword arguments that align datasets on stripe (or block) boundaries."""
    if not alignment:
        return {}
    thr = threshold if threshold is not None else min(alignment, 1 << 20)
    return {"alignment_threshold": int(thr), "alignment_interval": int(alignment)}


def lfs_setstripe(directory: str, count: int | None, size: int | None) -> str:
    """`lfs setstripe -c N -S SIZE DIR` (sizes written the way lfs reads them: 1M, 4M, 64K)."""
    parts = ["lfs", "setstripe"]
    if count is not None:
        parts += ["-c", str(count)]
    if size:
        parts += ["-S", _lfs_size(size)]
    parts.append(directory)
    return " ".join(_shell_word(p) for p in parts)


def _shell_word(p: str) -> str:
    """Quote for the shell, keeping $VARIABLES expandable: `$OUTDIR` bare, `"/lustre/$USER"` in double quotes."""
    if "$" not in p:
        return shlex.quote(p)
    if re.fullmatch(r"\$[A-Za-z_][A-Za-z0-9_]*", p):
        return p
    return '"' + p.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lfs_size(n: int) -> str:
    for suffix, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)


def render_all(hints: Mapping[str, object], *, fs_type: str | None = None, hints_path: str = "romio-hints",
               directory: str | None = None, stripe_count: int | None = None, stripe_size: int | None = None,
               hdf5_alignment: int | None = None) -> dict[str, object]:
    """Every rendering at once, keyed by flavour (mpich, openmpi, cray, intel) plus lfs/romio_hints/h5py."""
    romio = romio_hints_file(hints)
    out: dict[str, object] = {
        "romio_hints_file": romio,
        "mpich": [f"export ROMIO_HINTS={shlex.quote(hints_path)}"] if hints else [],
        "openmpi": openmpi_commands(hints, hints_path),
        "cray": [mpich_mpiio_hints(hints)] if hints else [],
        "intel": intel_commands(hints, fs_type, hints_path),
    }
    if directory and (stripe_count is not None or stripe_size):
        out["lfs"] = lfs_setstripe(directory, stripe_count, stripe_size)
    if hdf5_alignment:
        out["h5py"] = h5py_kwargs(hdf5_alignment)
    return out


__all__ = ["romio_hints_file", "mpich_mpiio_hints", "ompio_exports", "openmpi_commands", "intel_commands",
           "h5py_kwargs", "lfs_setstripe", "render_all", "OMPIO_MCA", "FLAVOURS", "format_size"]
