"""Center descriptions for the guide: from `ioadvisor.center` when it is available, else read directly from the
center TOML files ($IOADVISE_CENTERS, data/centers/*.toml) as plain dicts."""
from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from typing import Any

from ..errors import ConfigError, UsageError

FS_KEYS = ("name", "type", "mount", "ost_count", "default_stripe_count", "default_stripe_size", "striping",
           "persistent", "quota", "purpose", "citation")
TIER_KEYS = ("name", "filesystem", "kind", "request", "mount", "capacity_per_node", "stage", "notes")


def _plain(obj: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if isinstance(obj, dict):
        return {k: obj.get(k) for k in keys}
    return {k: getattr(obj, k, None) for k in keys}


def _normalise(raw: Any, path: Path | None) -> dict[str, Any]:
    """A center (dict from TOML or an `ioadvisor.model.types.Center`) as the plain dict the templates use."""
    get = raw.get if isinstance(raw, dict) else (lambda k, d=None: getattr(raw, k, d))
    name = get("name")
    if not name:
        raise ConfigError(f"{path}: center has no 'name'")
    return {
        "name": str(name),
        "title": get("title"),
        "source": get("source"),
        "mpi": get("mpi"),
        "ranks_per_node": get("ranks_per_node"),
        "path": str(path) if path else None,
        "filesystems": [_plain(f, FS_KEYS) for f in (get("filesystems") or ())],
        "tiers": [_plain(t, TIER_KEYS) for t in (get("tiers") or ())],
        "object": None if isinstance(raw, dict) else raw,
    }


def _load_with_center_module(path: Path) -> Any | None:
    """The `ioadvisor.center` loader's Center for `path`, or None if that module is not installed."""
    if importlib.util.find_spec("ioadvisor.center") is None:
        return None
    import ioadvisor.center as center_mod
    for fn_name in ("load_center", "load"):
        fn = getattr(center_mod, fn_name, None)
        if callable(fn):
            return fn(path)
    return None


def load_center_file(path: Path) -> dict[str, Any]:
    """One center TOML as a plain dict; a bad file is a ConfigError naming it."""
    try:
        obj = _load_with_center_module(path)
    except (ConfigError, UsageError):
        raise
    except Exception:           # a loader that cannot read this file: fall back to the plain TOML
        obj = None
    if obj is not None:
        return _normalise(obj, path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such center file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read ({e})") from None
    return _normalise(raw, path)


def shipped_center_files() -> list[Path]:
    """The center files by name: a site's ($IOADVISE_CENTERS) and the shipped ones (`center.available_centers`)."""
    from ..center import available_centers
    return available_centers()


def load_centers(spec: str | None) -> list[dict[str, Any]]:
    """Centers for the guide: all known ones (spec None: a site's in $IOADVISE_CENTERS and the shipped), one
    file (an existing path), or one by name."""
    if spec is None:
        return sorted((load_center_file(p) for p in shipped_center_files()), key=lambda c: c["name"].lower())
    p = Path(spec)
    if p.is_file():
        return [load_center_file(p)]
    if p.suffix == ".toml" or "/" in spec:
        raise UsageError(f"{spec}: no such center file")
    for f in shipped_center_files():
        c = load_center_file(f)
        if spec.lower() in (c["name"].lower(), f.stem.lower()):
            return [c]
    names = ", ".join(load_center_file(f)["name"] for f in shipped_center_files())
    raise UsageError(f"unknown center {spec!r} (known: {names}; or give a TOML file)")
