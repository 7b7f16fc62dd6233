"""Center configurations: TOML files describing file systems and scratch tiers, loaded into `Center`."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import UsageError
from ..lustre import mount_regex
from ..model.types import Center, FileSystem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

UNKNOWN_FS = "unknown"         # the file system of runs that do not name one


CENTERS_ENV = "IOADVISE_CENTERS"


def centers_dir() -> Path:
    """Directory of the shipped center configurations (data/centers)."""
    from ..resources import data_dir
    return data_dir() / "centers"


def center_dirs() -> list[Path]:
    """Where center files are looked up by name, first match winning: the directories of $IOADVISE_CENTERS
    (a colon-separated list, like PATH; a site's own center files), then the shipped data/centers."""
    site = [Path(d).expanduser() for d in os.environ.get(CENTERS_ENV, "").split(os.pathsep) if d.strip()]
    return site + [centers_dir()]


def is_shipped(path: str | Path) -> bool:
    """Whether a center file is one shipped with ioadvisor (not a site's own)."""
    try:
        return Path(path).resolve().parent == centers_dir().resolve()
    except OSError:
        return False


_LOADED: dict[tuple[str, int, int], Center] = {}


def load_center_file(path: str | Path) -> Center:
    """Load one center TOML file (a file unchanged since it was last loaded is not read again)."""
    p = Path(path)
    try:
        st = p.stat()
        key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None and key in _LOADED:
        return _LOADED[key]
    from .file import read_center_file
    c = read_center_file(p)
    if key is not None:
        _LOADED[key] = c
    return c


def center_from_dict(data: dict[str, Any], path: str = "<center>", text: str | None = None) -> Center:
    """A parsed center TOML document checked and built into a `Center` (`file.center_from_dict`)."""
    from .file import center_from_dict as read
    return read(data, path, text)


def available_centers(directory: Path | None = None) -> list[Path]:
    """The center files of `directory`, or of every directory of `center_dirs` (a file stem met again in a
    later directory is left out: $IOADVISE_CENTERS overrides a shipped file of the same name)."""
    out: list[Path] = []
    seen: set[str] = set()
    for d in ([directory] if directory is not None else center_dirs()):
        for p in (sorted(d.glob("*.toml")) if d.is_dir() else []):
            if p.stem.lower() not in seen:
                seen.add(p.stem.lower())
                out.append(p)
    return out


def find_center_file(name: str, directory: Path | None = None) -> Path | None:
    """The center file (a site's in $IOADVISE_CENTERS, else shipped) whose file stem or `name` matches `name`
    (case-insensitive), or None. This is the one place center names are resolved."""
    key = name.strip().lower()
    paths = available_centers(directory)
    for p in paths:
        if p.stem.lower() == key:
            return p
    for p in paths:
        if _may_be_named(p, key) and load_center_file(p).name.lower() == key:
            return p
    return None


def _may_be_named(path: Path, key: str) -> bool:
    """Whether the center file at `path` may be named `key` (lower case): its text holds `key`, or a backslash
    (a TOML string can spell a name with escapes). The others are not parsed: looking up a system that no
    center file names (one known from its runs) costs a read of each file, not a parse and a check of each."""
    try:
        text = path.read_bytes().decode("utf-8", "replace").lower()
    except OSError:
        return True                 # loaded, to be refused with the reason
    return key in text or "\\" in text


def find_center(name: str, directory: Path | None = None) -> Center | None:
    """The center named `name` (`find_center_file`), or None."""
    p = find_center_file(name, directory)
    return None if p is None else load_center_file(p)


def is_center_file(spec: str) -> bool:
    """Whether `spec` names a center file rather than a center: a name ending in .toml, holding a /, or of
    anything but a directory that exists (a device or a pipe is then refused as what it is)."""
    return spec.endswith(".toml") or os.sep in spec or (os.path.lexists(spec) and not os.path.isdir(spec))


def load_center(spec: str | Path) -> Center:
    """A center from a file path (`is_center_file`) or a center's name (`find_center`)."""
    s = str(spec)
    if is_center_file(s):
        return load_center_file(s)
    c = find_center(s)
    if c is None:
        known = ", ".join(load_center_file(p).name for p in available_centers())
        raise UsageError(f"unknown center {s!r} (known: {known}; or give a .toml file, or put NAME.toml in a "
                         f"directory of ${CENTERS_ENV})")
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
    return _derived(system, list(seen.values()))


def _derived(system: str, filesystems: list[FileSystem]) -> Center | None:
    if not filesystems:
        return None
    return Center(name=system, title=f"{system} (derived from its runs)", filesystems=tuple(filesystems))


def center_from_summary(system: str, summary: Iterable[dict[str, Any]]) -> Center | None:
    """The same Center as `center_from_runs`, from the KB's per-file-system summary of the system's runs
    (`KB.system_filesystems`): what a call reads does not grow with the number of runs."""
    fss = []
    for row in summary:
        fstype = (row["fs_type"] or "unknown").lower()
        fss.append(FileSystem(name=row["fsname"], type=fstype, ost_count=row["ost_count"],
                              striping="user" if fstype in ("lustre", "beegfs") else "none",
                              citation="derived from the knowledge base's runs"))
    return _derived(system, fss)


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
        match = next((s for s in kb.systems() if s.lower() == system.lower()), None)
        if match:
            derived = center_from_summary(match, kb.system_filesystems(match))
            if derived is not None:
                return derived
    known = sorted({load_center_file(p).name for p in available_centers()} | set(kb.systems() if kb else []))
    raise UsageError(f"unknown system {system!r} (known: {', '.join(known)})")


def place_of_path(center: Center, path: str | Path) -> tuple[str, str | None] | None:
    """(file system name, tier name or None) of the center whose mount (or tier mount) holds `path`, the
    longest mount winning; None when no mount of the center holds it."""
    p = str(path)
    best: tuple[int, str, str | None] | None = None
    candidates = [(fs.mount, fs.name, None) for fs in center.filesystems if fs.mount]
    candidates += [(t.mount, t.filesystem, t.name) for t in center.tiers if t.mount]
    for mount, fs, tier in candidates:
        if mount.startswith("/") and mount_regex(mount).match(p):
            score = len(mount)
            if best is None or score > best[0]:
                best = (score, fs, tier)
    return None if best is None else (best[1], best[2])


def default_system_name(center: Center | None = None, explicit: str | None = None) -> str | None:
    """The system runs are filed under: `explicit`, else the center's name, else $SLURM_CLUSTER_NAME."""
    return explicit or (center.name if center is not None else None) or os.environ.get("SLURM_CLUSTER_NAME") or None


def center_for(spec: str | Path | None, system: str | None) -> Center | None:
    """The center named by `spec` (file or name) or, without one, the center whose name is `system` (a site's
    in $IOADVISE_CENTERS, else shipped); None when there is neither."""
    if spec is not None:
        return load_center(spec)
    return find_center(system) if system else None
