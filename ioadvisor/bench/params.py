"""Benchmark parameters and their validation, shared by `bench run`, `bench md` and sweeps.

Validation is pure and runs before any file or MPI process is touched; errors name the offending key.
"""
from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from ..errors import UsageError
from ..frozen import asdict, field, fields, frozen
from ..lustre import check_stripe_count, check_stripe_size
from ..model.units import parse_size

APIS = ("posix", "mpiio", "hdf5")
LAYOUTS = ("fpp", "shared")
DATA_OPS = ("write", "read")
PAGE = 4096


def parse_hints(text: str | Mapping[str, Any] | None) -> dict[str, str]:
    """`k=v,k=v` (or a mapping) into a dict of strings; MPI_Info keys and values are strings."""
    if text is None or text == "":
        return {}
    if isinstance(text, Mapping):
        return {str(k): _hint_value(v) for k, v in text.items()}
    out: dict[str, str] = {}
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"hint {part!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _hint_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


@frozen(kw_only=True)
class DataParams:
    """One data benchmark (IOR-like). Sizes are bytes; `block_size` is per rank and segment."""

    api: str = "posix"
    layout: str = "fpp"
    collective: bool = False
    hints: dict[str, str] = field(default_factory=dict)
    transfer_size: int = 1 << 20
    block_size: int = 16 << 20
    segments: int = 1
    reps: int = 1
    random: bool = False
    direct: bool = False
    ops: tuple[str, ...] = DATA_OPS
    dir: str = "."
    fsync: bool = True
    rank_shift: bool = True
    keep: bool = False
    drop_caches: bool = False
    system: str | None = None
    filesystem: str | None = None  # the center's name for the file system under dir (default: from the center)
    center: str | None = None      # center file or shipped name: system name and mount -> file system
    seed: int = 12345
    hdf5_alignment: int = 0       # H5Pset_alignment for the dataset (IOR's setAlignment); 0: HDF5's default
    stripe_count: int = 0         # Lustre: `lfs setstripe -c` on dir before the files are made (0: as it is)
    stripe_size: int = 0          # Lustre: `lfs setstripe -S` (0: as it is)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ops"] = list(self.ops)
        return d


@frozen(kw_only=True)
class MdParams:
    """One metadata benchmark (mdtest-like, -F/-D with -u for unique directories)."""

    files_per_dir: int = 100
    dirs_per_rank: int = 1
    unique_dir: bool = False
    file_size: int = 0
    items: str = "files"          # files | dirs | both
    reps: int = 1
    dir: str = "."
    system: str | None = None
    filesystem: str | None = None
    center: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


DATA_KEYS = tuple(f.name for f in fields(DataParams))
MD_KEYS = tuple(f.name for f in fields(MdParams))


def _bool(key: str, v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "yes", "on", "1"):
        return True
    if isinstance(v, str) and v.strip().lower() in ("false", "no", "off", "0"):
        return False
    raise UsageError(f"{key}: expected true or false, got {v!r}")


def _pos_int(key: str, v: Any, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise UsageError(f"{key}: expected a whole number, got {v!r}")
    try:
        n = int(v)
    except ValueError:
        raise UsageError(f"{key}: expected a whole number, got {v!r}") from None
    if n < minimum:
        raise UsageError(f"{key}: must be at least {minimum}, got {n}")
    return n


def _size(key: str, v: Any) -> int:
    try:
        return parse_size(v)
    except UsageError as e:
        raise UsageError(f"{key}: {e}") from None


def _given(values: Mapping[str, Any], known: Sequence[str]) -> Iterator[tuple[str, Any]]:
    """The keys of `values` that hold a value (not None), with it; UsageError naming every key not `known`."""
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise UsageError(f"unknown key(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return ((k, v) for k, v in values.items() if v is not None)


def data_params(values: Mapping[str, Any]) -> DataParams:
    """Build and validate DataParams from loose values (CLI strings, TOML values); UsageError names the key."""
    kw: dict[str, Any] = {}
    for key, v in _given(values, DATA_KEYS):
        if key in ("api", "layout"):
            v = str(v).strip().lower().replace("-", "")
            if key == "layout":
                v = {"n1": "shared", "ssf": "shared", "nn": "fpp", "fileperprocess": "fpp"}.get(v, v)
            allowed = APIS if key == "api" else LAYOUTS
            if v not in allowed:
                raise UsageError(f"{key}: {v!r} is not one of {', '.join(allowed)}")
        elif key in ("collective", "random", "direct", "fsync", "rank_shift", "keep", "drop_caches"):
            v = _bool(key, v)
        elif key == "hints":
            v = parse_hints(v)
        elif key in ("transfer_size", "block_size"):
            v = _size(key, v)
        elif key == "hdf5_alignment":
            v = 0 if str(v).strip() in ("0", "") else _size(key, v)
        elif key == "stripe_count":
            v = -1 if str(v).strip() == "-1" else _pos_int(key, v, 0)
        elif key == "stripe_size":
            v = 0 if str(v).strip() in ("0", "") else _size(key, v)
        elif key in ("segments", "reps"):
            v = _pos_int(key, v)
        elif key == "seed":
            v = _pos_int(key, v, 0)
        elif key == "ops":
            items = [o.strip().lower() for o in (v.split(",") if isinstance(v, str) else v)]
            bad = [o for o in items if o not in DATA_OPS]
            if bad or not items:
                raise UsageError(f"ops: {', '.join(bad) or 'nothing'} is not one of {', '.join(DATA_OPS)}")
            v = tuple(o for o in DATA_OPS if o in items)   # write always before read
        elif key in ("dir", "system", "filesystem", "center"):
            v = str(v)
        kw[key] = v
    p = DataParams(**kw)
    check_data(p)
    return p


def check_data(p: DataParams) -> None:
    """Reject impossible combinations, naming the key that makes them impossible."""
    if p.transfer_size <= 0:
        raise UsageError("transfer_size: must be positive")
    if p.block_size <= 0 or p.block_size % p.transfer_size:
        raise UsageError(f"block_size: {p.block_size} is not a positive multiple of transfer_size {p.transfer_size}")
    if p.collective and p.api == "posix":
        raise UsageError("collective: POSIX has no collective I/O (use api mpiio or hdf5)")
    if p.collective and p.api == "hdf5" and p.layout == "fpp":
        raise UsageError("collective: HDF5 file per process is serial; collective needs layout shared")
    if p.hints and p.api == "posix":
        raise UsageError("hints: MPI-IO hints need api mpiio or hdf5")
    if p.direct and p.api != "posix":
        raise UsageError("direct: O_DIRECT is only available with api posix (ROMIO has direct_write/direct_read "
                         "hints for MPI-IO)")
    if p.hdf5_alignment and p.api != "hdf5":
        raise UsageError("hdf5_alignment: only for api hdf5")
    if p.hdf5_alignment < 0:
        raise UsageError("hdf5_alignment: must not be negative")
    if p.stripe_size:                   # 0: as it is
        check_stripe_size(p.stripe_size, "stripe_size:")
    if p.stripe_count:                  # 0: as it is
        check_stripe_count(p.stripe_count, "stripe_count:")
    if p.direct and (p.transfer_size % PAGE or p.block_size % PAGE):
        raise UsageError(f"direct: O_DIRECT needs transfer_size and block_size multiples of {PAGE} bytes")


def md_params(values: Mapping[str, Any]) -> MdParams:
    """Build and validate MdParams from loose values; UsageError names the key."""
    kw: dict[str, Any] = {}
    for key, v in _given(values, MD_KEYS):
        if key in ("files_per_dir", "dirs_per_rank", "reps"):
            v = _pos_int(key, v)
        elif key == "unique_dir":
            v = _bool(key, v)
        elif key == "file_size":
            v = _size(key, v)
        elif key == "items":
            v = str(v).lower()
            if v not in ("files", "dirs", "both"):
                raise UsageError(f"items: {v!r} is not one of files, dirs, both")
        else:
            v = str(v)
        kw[key] = v
    return MdParams(**kw)


def data_command(p: DataParams, ranks: int = 1) -> str:
    """The `ioadvise bench run` command line that repeats this benchmark (under mpiexec for several ranks)."""
    import shlex
    args = ["ioadvise", "bench", "run", "--api", p.api, "--layout", p.layout,
            "--transfer-size", str(p.transfer_size), "--block-size", str(p.block_size),
            "--segments", str(p.segments), "--reps", str(p.reps), "--ops", ",".join(p.ops), "--dir", p.dir]
    if p.collective:
        args.append("--collective")
    if p.hints:
        args += ["--hints", ",".join(f"{k}={v}" for k, v in p.hints.items())]
    if p.stripe_count:
        args += ["--stripe-count", str(p.stripe_count)]
    if p.stripe_size:
        args += ["--stripe-size", str(p.stripe_size)]
    for flag, on in (("--random", p.random), ("--direct", p.direct), ("--drop-caches", p.drop_caches),
                     ("--keep", p.keep)):
        if on:
            args.append(flag)
    args += _naming_args(p)
    if ranks > 1:
        args = ["mpiexec", "-n", str(ranks)] + args
    return shlex.join(args)


def md_command(p: MdParams, ranks: int = 1) -> str:
    """The `ioadvise bench md` command line that repeats this benchmark."""
    import shlex
    args = ["ioadvise", "bench", "md", "--files-per-dir", str(p.files_per_dir), "--dirs-per-rank",
            str(p.dirs_per_rank), "--file-size", str(p.file_size), "--items", p.items, "--reps", str(p.reps),
            "--dir", p.dir]
    if p.unique_dir:
        args.append("--unique-dir")
    args += _naming_args(p)
    if ranks > 1:
        args = ["mpiexec", "-n", str(ranks)] + args
    return shlex.join(args)


def _naming_args(p: DataParams | MdParams) -> list[str]:
    out: list[str] = []
    for flag, v in (("--system", p.system), ("--filesystem", p.filesystem), ("--center", p.center)):
        if v:
            out += [flag, v]
    return out
