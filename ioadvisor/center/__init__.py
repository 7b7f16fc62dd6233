"""Center configurations: TOML files describing file systems and scratch tiers, loaded into `Center`."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Iterable

from ..errors import ConfigError, UsageError
from ..model.types import Center, FileSystem, Tier
from ..model.units import parse_size

_TOP_KEYS = {"name", "title", "source", "mpi", "filesystems", "tiers"}
_FS_KEYS = {"name", "type", "mount", "ost_count", "default_stripe_count", "default_stripe_size", "striping",
            "persistent", "quota", "purpose", "citation"}
_TIER_KEYS = {"name", "filesystem", "kind", "request", "mount", "capacity_per_node", "stage", "notes"}
_MPIS = ("mpich", "openmpi", "cray", "intel")
UNKNOWN_FS = "unknown"         # the file system of runs that do not name one
_STRIPING = ("user", "pfl-managed", "none")


def centers_dir() -> Path:
    """Directory of the shipped center configurations (data/centers)."""
    from ..kb.reference import data_dir
    return data_dir() / "centers"


def _check_keys(table: dict[str, Any], allowed: set[str], where: str, path: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{path}: unknown key {where}{unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _typed(table: dict[str, Any], key: str, kind: type | tuple, where: str, path: str) -> Any:
    v = table.get(key)
    if v is not None and (not isinstance(v, kind) or (kind is int and isinstance(v, bool))):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ConfigError(f"{path}: {where}{key} must be {name}, got {v!r}")
    return v


def _tables(data: dict[str, Any], key: str, allowed: set[str], required: tuple[str, ...],
            path: str) -> Iterable[tuple[str, dict[str, Any]]]:
    """The tables of an array such as `filesystems`, each checked for unknown and missing keys."""
    for i, table in enumerate(data.get(key) or []):
        where = f"{key}[{i}]."
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {key}[{i}] must be a table")
        _check_keys(table, allowed, where, path)
        for req in required:
            if not table.get(req):
                raise ConfigError(f"{path}: missing key {where}{req}")
        yield where, table


def _size(table: dict[str, Any], key: str, where: str, path: str) -> int | None:
    v = table.get(key)
    if v is None:
        return None
    try:
        return parse_size(v)
    except UsageError:
        raise ConfigError(f"{path}: {where}{key} is not a size: {v!r} (use e.g. 1MiB)") from None


def center_from_dict(data: dict[str, Any], path: str = "<center>") -> Center:
    """Validate a parsed center TOML document and build a `Center`; errors name the file and key."""
    _check_keys(data, _TOP_KEYS, "", path)
    name = _typed(data, "name", str, "", path)
    if not name:
        raise ConfigError(f"{path}: missing key 'name'")
    mpi = (_typed(data, "mpi", str, "", path) or "mpich").lower()
    if mpi not in _MPIS:
        raise ConfigError(f"{path}: mpi must be one of {', '.join(_MPIS)}, got {mpi!r}")
    fss: list[FileSystem] = []
    for where, fs in _tables(data, "filesystems", _FS_KEYS, ("name", "type"), path):
        for k in ("name", "type", "mount", "striping", "quota", "purpose", "citation"):
            _typed(fs, k, str, where, path)
        for k in ("ost_count", "default_stripe_count"):
            v = _typed(fs, k, int, where, path)
            if v is not None and v < (1 if k == "ost_count" else -1):
                raise ConfigError(f"{path}: {where}{k} must be positive, got {v}")
        striping = fs.get("striping") or ("user" if fs["type"].lower() in ("lustre", "beegfs") else "none")
        if striping not in _STRIPING:
            raise ConfigError(f"{path}: {where}striping must be one of {', '.join(_STRIPING)}, got {striping!r}")
        persistent = _typed(fs, "persistent", bool, where, path)
        fss.append(FileSystem(
            name=fs["name"], type=fs["type"].lower(), mount=fs.get("mount"), ost_count=fs.get("ost_count"),
            default_stripe_count=fs.get("default_stripe_count"),
            default_stripe_size=_size(fs, "default_stripe_size", where, path), striping=striping,
            persistent=True if persistent is None else persistent, quota=fs.get("quota"),
            purpose=fs.get("purpose"), citation=fs.get("citation")))
    names = [f.name for f in fss]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: file system names must be unique, got {names}")
    tiers: list[Tier] = []
    for where, t in _tables(data, "tiers", _TIER_KEYS, ("name", "filesystem"), path):
        if t["filesystem"] not in names:
            raise ConfigError(f"{path}: {where}filesystem {t['filesystem']!r} is not one of the file systems "
                              f"({', '.join(names) or 'none'})")
        for k in ("name", "kind", "request", "mount", "notes"):
            _typed(t, k, str, where, path)
        stage = _typed(t, "stage", bool, where, path)
        tiers.append(Tier(name=t["name"], filesystem=t["filesystem"], kind=t.get("kind") or "per-job",
                          request=t.get("request"), mount=t.get("mount"),
                          capacity_per_node=_size(t, "capacity_per_node", where, path),
                          stage=True if stage is None else stage, notes=t.get("notes")))
    return Center(name=name, title=_typed(data, "title", str, "", path), source=_typed(data, "source", str, "", path),
                  mpi=mpi, filesystems=tuple(fss), tiers=tuple(tiers))


def load_center_file(path: str | Path) -> Center:
    """Load one center TOML file."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"{p}: no such center file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p}: cannot read: {e}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p}: not valid TOML: {e}") from None
    return center_from_dict(data, str(p))


def available_centers(directory: Path | None = None) -> list[Path]:
    d = directory or centers_dir()
    return sorted(d.glob("*.toml")) if d.is_dir() else []


def find_center(name: str, directory: Path | None = None) -> Center | None:
    """The shipped center whose `name` or file stem matches `name` (case-insensitive), or None."""
    key = name.strip().lower()
    for p in available_centers(directory):
        if p.stem.lower() == key:
            return load_center_file(p)
    for p in available_centers(directory):
        c = load_center_file(p)
        if c.name.lower() == key:
            return c
    return None


def load_center(spec: str | Path) -> Center:
    """A center from a file path (anything that exists or ends in .toml) or a shipped center's name."""
    s = str(spec)
    if s.endswith(".toml") or Path(s).is_file():
        return load_center_file(s)
    c = find_center(s)
    if c is None:
        known = ", ".join(load_center_file(p).name for p in available_centers())
        raise UsageError(f"unknown center {s!r} (known: {known}; or give a .toml file)")
    return c


def center_from_runs(system: str, runs: Iterable[Any]) -> Center | None:
    """A minimal Center derived from a system's runs (file system names, types, OST counts), or None."""
    seen: dict[str, FileSystem] = {}
    for r in runs:
        fsname = r.filesystem or r.fs_type or UNKNOWN_FS
        prev = seen.get(fsname)
        fstype = (r.fs_type or (prev.type if prev else "unknown")).lower()
        osts = max(filter(None, [r.ost_count, prev.ost_count if prev else None]), default=None)
        seen[fsname] = FileSystem(name=fsname, type=fstype, ost_count=osts,
                                  striping="user" if fstype in ("lustre", "beegfs") else "none",
                                  citation="derived from the knowledge base's runs")
    if not seen:
        return None
    return Center(name=system, title=f"{system} (derived from its runs)", filesystems=tuple(seen.values()))


def resolve_center(system: str | None, center: str | Path | None, kb: Any | None = None) -> Center:
    """The center to advise for: `center` (file or name) if given, else the shipped config named `system`,
    else one derived from the system's runs in `kb`. Raises UsageError for an unknown system."""
    if center is not None:
        c = load_center(center)
        if system and c.name.lower() != system.lower():
            raise UsageError(f"center {c.name!r} does not describe system {system!r}")
        return c
    if not system:
        raise UsageError("give --system NAME or --center FILE|NAME")
    c = find_center(system)
    if c is not None:
        return c
    if kb is not None:
        from ..kb import RunFilter
        match = next((s for s in kb.systems() if s.lower() == system.lower()), None)
        if match:
            derived = center_from_runs(match, kb.runs(RunFilter(system=match)))
            if derived is not None:
                return derived
    known = sorted({load_center_file(p).name for p in available_centers()} | set(kb.systems() if kb else []))
    raise UsageError(f"unknown system {system!r} (known: {', '.join(known)})")
