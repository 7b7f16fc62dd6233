"""MPI flavours as data: for each MPI and version range, what makes its MPI-IO layer read the advised hints.

Every rule names where the fact comes from. Versions are compared as tuples of integers, so Intel MPI's
`5.0.1` and `2021.11` order correctly (the year-numbered releases came after 5.x).
"""
from __future__ import annotations

import re

from ..errors import UsageError
from ..frozen import NamedTuple

FLAVOURS = ("mpich", "openmpi", "cray", "intel", "mvapich2")


class FlavourRule(NamedTuple):
    """How one MPI flavour, in one version range, is told about MPI-IO hints."""

    flavour: str
    since: tuple[int, ...] | None = None        # first version the rule covers (inclusive)
    until: tuple[int, ...] | None = None        # first version it no longer covers (exclusive)
    env: tuple[tuple[str, str], ...] = ()       # exports; "{fs}" is replaced by the file system type
    fs_env: bool = False                        # the exports apply only on lustre, gpfs or panfs
    hints_file: bool = True                     # ROMIO reads the file named by $ROMIO_HINTS
    hints_env: str | None = None                # a variable carrying the hints themselves (Cray MPICH)
    ompio: bool = False                         # no ROMIO: hints go to OMPIO's MCA parameters
    label: str = ""
    source: str = ""

    def covers(self, version: tuple[int, ...] | None) -> bool:
        if version is None:
            return False
        return (self.since is None or version >= self.since) and (self.until is None or version < self.until)


_ROMIO_FILE = ("ROMIO reads the file named by $ROMIO_HINTS when a file is opened "
               "(MPICH src/mpi/romio/adio/common/system_hints.c)")

RULES: tuple[FlavourRule, ...] = (
    FlavourRule(flavour="mpich", label="MPICH", source=_ROMIO_FILE),
    FlavourRule(flavour="mvapich2", label="MVAPICH2",
                source="MVAPICH2 is derived from MPICH and ships its ROMIO; " + _ROMIO_FILE),
    # Open MPI: $ROMIO_HINTS is read only by its ROMIO component, whose name carries the ROMIO release it
    # bundles; the default component OMPIO ignores the file (ompi/mca/io/ in each release's source tree).
    FlavourRule(flavour="openmpi", until=(2, 0), env=(("OMPI_MCA_io", "romio"),), label="Open MPI 1.x",
                source="Open MPI 1.x source tree: ompi/mca/io/romio"),
    FlavourRule(flavour="openmpi", since=(2, 0), until=(4, 0), env=(("OMPI_MCA_io", "romio314"),),
                label="Open MPI 2.x-3.x",
                source="Open MPI 2.0-3.1 source trees: ompi/mca/io/romio314 (ROMIO of MPICH 3.1.4; "
                       "open-mpi/ompi issue 1970)"),
    FlavourRule(flavour="openmpi", since=(4, 0), until=(5, 0), env=(("OMPI_MCA_io", "romio321"),),
                label="Open MPI 4.x",
                source="Open MPI 4.0-4.1 source trees: ompi/mca/io/romio321 (ROMIO of MPICH 3.2.1; the 4.1 "
                       "branch was not refreshed, open-mpi/ompi issue 8271); `ompi_info` of Debian's 4.1.4 lists "
                       "io components romio321 and ompio"),
    FlavourRule(flavour="openmpi", since=(5, 0), until=(6, 0), env=(("OMPI_MCA_io", "romio341"),),
                label="Open MPI 5.x",
                source="Open MPI 5.0 documentation, ROMIO page: ROMIO is used through the romio341 component"),
    FlavourRule(flavour="openmpi", since=(6, 0), hints_file=False, ompio=True, label="Open MPI 6+",
                source="Open MPI 6.0 changelog (docs/release-notes/changelog/v6.0.x.rst): the ROMIO package was "
                       "removed; OMPIO takes striping and buffer sizes as MCA parameters (docs/mca.rst: "
                       "OMPI_MCA_<param>)"),
    # Intel MPI is built on ROMIO; its file-system drivers are switched on by variables that changed names.
    FlavourRule(flavour="intel", until=(2019,), fs_env=True,
                env=(("I_MPI_EXTRA_FILESYSTEM", "on"), ("I_MPI_EXTRA_FILESYSTEM_LIST", "{fs}")),
                label="Intel MPI 5.x-2018",
                source="Intel MPI Library 5.x-2018 reference manuals: I_MPI_EXTRA_FILESYSTEM=on with "
                       "I_MPI_EXTRA_FILESYSTEM_LIST; " + _ROMIO_FILE),
    FlavourRule(flavour="intel", since=(2019,), until=(2021, 11), fs_env=True,
                env=(("I_MPI_EXTRA_FILESYSTEM", "on"), ("I_MPI_EXTRA_FILESYSTEM_FORCE", "{fs}")),
                label="Intel MPI 2019-2021.10",
                source="Intel MPI Library 2019-2021 developer references: I_MPI_EXTRA_FILESYSTEM, "
                       "I_MPI_EXTRA_FILESYSTEM_FORCE=<ufs|nfs|gpfs|panfs|lustre>; " + _ROMIO_FILE),
    FlavourRule(flavour="intel", since=(2021, 11), fs_env=True,
                env=(("I_MPI_FILESYSTEM", "on"), ("I_MPI_FILESYSTEM_FORCE", "{fs}")),
                label="Intel MPI 2021.11+",
                source="Intel MPI Library 2021.11 (oneAPI 2024.0) release notes: I_MPI_EXTRA_FILESYSTEM* "
                       "deprecated in favour of I_MPI_FILESYSTEM, I_MPI_FILESYSTEM_FORCE; " + _ROMIO_FILE),
    FlavourRule(flavour="cray", hints_file=False, hints_env="MPICH_MPIIO_HINTS", label="Cray MPICH",
                source="HPE Cray MPICH intro_mpi: MPICH_MPIIO_HINTS=\"pattern:key=value:...\"; site examples "
                       "at NERSC and ARCHER2 (docs/user-guide/io.md)"),
)

# the rule used when the version is not known: the release series most installations run
ASSUMED = {"openmpi": (4, 1), "intel": (2021, 10)}


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """`4.1.4` -> (4, 1, 4); `2021.11` -> (2021, 11); `5.0 Update 1` -> (5, 0). None or '' -> None."""
    if text is None or not str(text).strip():
        return None
    m = re.match(r"^\s*(\d+(?:\.\d+)*)", str(text))
    if not m:
        raise UsageError(f"MPI version {str(text)[:40]!r}: expected numbers like 4.1.4 or 2021.11")
    return tuple(int(x) for x in m.group(1).split("."))


def parse_mpi(spec: str | None, default: str = "mpich") -> tuple[str, str | None]:
    """`openmpi@4.1.4` -> ("openmpi", "4.1.4"); `mpich` -> ("mpich", None). UsageError for an unknown flavour."""
    text = (spec or default).strip()
    name, _, version = text.partition("@")
    name = name.strip().lower()
    if name not in FLAVOURS:
        raise UsageError(f"unknown MPI flavour {name!r} (use {', '.join(FLAVOURS)}, optionally with @VERSION)")
    version = version.strip() or None
    parse_version(version)
    return name, version


def rule_for(flavour: str, version: str | None = None) -> tuple[FlavourRule, str | None]:
    """The rule for a flavour and version, and a note when the version had to be assumed."""
    rules = [r for r in RULES if r.flavour == flavour]
    if not rules:
        raise UsageError(f"unknown MPI flavour {flavour!r} (use {', '.join(FLAVOURS)})")
    if len(rules) == 1:
        return rules[0], None
    v = parse_version(version)
    note = None
    if v is None:
        v = ASSUMED[flavour]
        r = next(r for r in rules if r.covers(v))
        others = "; ".join(f"{x.label}: {' '.join(f'{k}={val}' for k, val in x.env) or 'no ROMIO'}"
                           for x in rules if x is not r)
        note = (f"{r.label} assumed (no MPI version given; set mpi_version in the center file or use "
                f"--mpi {flavour}@VERSION). Other versions differ: {others}.")
        return r, note
    r = next((r for r in rules if r.covers(v)), rules[-1])
    return r, note
