"""Reading one center file: its TOML parsed, its shape checked against the key table (`schema`), each value read
as its kind says; every error names the file, the line where known, and the key. Only a command that reads a
center file imports this: advice for a system no center file names (one known from its runs) does not."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from ..errors import ConfigError, UsageError
from ..lustre import MAX_STRIPE_COUNT, constraint_of, stripe_count_problem, stripe_size_problem
from ..model.types import Center, FileSystem, Tier
from ..model.units import parse_size
from ..model.validate import INT_RANGES, MAX_NAME, _name, _text
from ..tomlschema import Field, Problem, Table, dotted, first_problem, key_line
from ..util import loads_toml

from .schema import KEYS, keys_of

_FEATURES = re.compile(r"^[A-Za-z0-9_-]+(?:[&|,][A-Za-z0-9_-]+)*$")
MAX_PATH = 4096                # characters of a mount path
_VERSION = re.compile(r"^[0-9]+(?:\.[0-9]+){0,3}[A-Za-z0-9._-]*$")

def _key_path(key: str) -> tuple[str | int, ...]:
    """("filesystems", 1, "ost_count") from "filesystems[1].ost_count"; ("tiers", 0) from "tiers[0]"."""
    m = re.match(r"^(\w+)\[(\d+)\](?:\.(\w+))?$", key)
    if m is None:
        return (key.split(".")[0],)
    return (m.group(1), int(m.group(2))) + ((m.group(3),) if m.group(3) else ())


_TYPES = {"integer": "int", "boolean": "bool", "size": "any"}      # every other kind is text


def _table(section: str, *more: Field) -> Table:
    return Table(tuple(Field(k.name, _TYPES.get(k.kind, "str"), required=k.default == "required")
                       for k in KEYS if k.section == section) + more)


#: the center file's shape, from the key table
SCHEMA = _table("", Field("filesystems", "tables", table=_table("filesystems")),
                Field("tiers", "tables", table=_table("tiers")))


class _Reader:
    """Reads one parsed center document; every error names the file, the line where known, and the key."""

    def __init__(self, path: str, text: str | None):
        self.path, self.text = path, text

    def fail(self, key: str, message: str) -> ConfigError:
        line = key_line(self.text, _key_path(key)) if self.text is not None else None
        err = ConfigError(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")
        err.key = key  # type: ignore[attr-defined]
        return err

    def check_shape(self, data: dict[str, Any]) -> None:
        """Unknown and missing keys, values of the wrong type: the first, as users of center files know it."""
        p = first_problem(data, SCHEMA)
        if p is not None:
            raise self.shape_error(p, data)

    def shape_error(self, p: Problem, data: dict[str, Any]) -> ConfigError:
        at = dotted(p.path)
        where = f"{at}." if at else ""
        if p.code == "unknown":
            return self.fail(f"{where}{p.keys[0]}", f"unknown key {where}{p.keys[0]!r} "
                                                    f"(allowed: {', '.join(sorted(p.allowed))})")
        if p.code == "missing":
            table = dotted(p.path[:-1])
            if not table:
                return self.fail(at, f"missing key {at!r}")
            return self.fail(table, f"missing key {at}")
        if p.expected == "tables":
            if not isinstance(p.value, list):
                return self.fail(at, f"{at} must be an array of tables ([[{at}]])")
            i = next(i for i, t in enumerate(p.value) if not isinstance(t, dict))
            return self.fail(at, f"{at}[{i}] must be a table")
        return self.fail(at, f"{at} must be {p.expected}, got {p.value!r}")

    def value(self, table: dict[str, Any], section: str, key: str, where: str) -> Any:
        """The key's value read as its schema kind says (None when absent)."""
        spec = keys_of(section)[key]
        v = table.get(key)
        if v is None:
            return None
        at = f"{where}{key}"
        if spec.kind in ("string", "text", "choice", "version", "bandwidth"):
            # what a job script, an #SBATCH line, the KB or a terminal would refuse later is refused here: a
            # value of one line has no control character at all, free text no escape, NUL ...
            try:
                if spec.kind == "text":
                    _text(v, at)
                else:
                    _name(v, at, limit=MAX_PATH if key == "mount" else MAX_NAME)
            except UsageError as e:
                raise self.fail(at, str(e)) from None
        if spec.kind == "choice":
            v = v.lower()
            if v not in spec.choices:
                raise self.fail(at, f"{at} must be one of {', '.join(spec.choices)}, got {v!r}")
        if spec.kind == "version" and not _VERSION.match(v):
            raise self.fail(at, f"{at} is not a version such as 4.1.4: {v!r}")
        if spec.kind == "size":
            try:
                v = parse_size(v)
            except UsageError:
                raise self.fail(at, f"{at} is not a size: {v!r} (use e.g. 1MiB)") from None
        if spec.kind == "bandwidth":
            v = self.bandwidth(v, at)
        return v

    def bandwidth(self, v: str, at: str) -> float:
        """Bytes/s from '40 GB/s', '12.5GiB/s'."""
        from ..model.units import BANDWIDTH_UNIT, normalize
        m = re.match(r"^\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]+/s)\s*$", v)
        try:
            if m is None:
                raise UsageError(v)
            mib, unit = normalize(float(m.group(1)), m.group(2))
            if unit != BANDWIDTH_UNIT or mib <= 0:
                raise UsageError(v)
        except UsageError:
            raise self.fail(at, f"{at} is not a bandwidth: {v!r} (use e.g. 40GB/s or 12.5GiB/s)") from None
        return mib * (1 << 20)

    def tables(self, data: dict[str, Any], section: str) -> Iterable[tuple[str, dict[str, Any]]]:
        """The tables of an array such as `filesystems` (their shape checked by `check_shape`)."""
        for i, table in enumerate(data.get(section) or []):
            yield f"{section}[{i}].", table


def center_from_dict(data: dict[str, Any], path: str = "<center>", text: str | None = None) -> Center:
    """Validate a parsed center TOML document and build a `Center`; errors name the file, line and key.

    `text`, the document's TOML source, lets errors give the line of the key."""
    rd = _Reader(path, text)
    rd.check_shape(data)
    name = rd.value(data, "", "name", "")
    fss = [_filesystem(rd, where, fs) for where, fs in rd.tables(data, "filesystems")]
    names = _unique(rd, "filesystems", "file system", [f.name for f in fss])
    tiers = [_tier(rd, where, t, names) for where, t in rd.tables(data, "tiers")]
    _unique(rd, "tiers", "tier", [t.name for t in tiers])
    return Center(name=name, title=rd.value(data, "", "title", ""), source=rd.value(data, "", "source", ""),
                  mpi=rd.value(data, "", "mpi", "") or "mpich", mpi_version=rd.value(data, "", "mpi_version", ""),
                  node_memory=rd.value(data, "", "node_memory", ""), filesystems=tuple(fss), tiers=tuple(tiers),
                  ranks_per_node=_ranks_per_node(rd, data))


def _unique(rd: _Reader, section: str, what: str, names: list[str]) -> dict[str, int]:
    """Each name's index in `section`, in order; ConfigError at the first table whose name an earlier table
    has. In time linear in the names (a set, not a count per name): a file may hold a hundred thousand tables."""
    first: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in first:
            raise rd.fail(f"{section}[{i}].name", f"{what} names must be unique, got {n!r} twice")
        first[n] = i
    return first


def _ranks_per_node(rd: _Reader, data: dict[str, Any]) -> int | None:
    v = rd.value(data, "", "ranks_per_node", "")
    if v is not None and v < 1:
        raise rd.fail("ranks_per_node", f"ranks_per_node must be at least 1, got {v}")
    return v


def _filesystem(rd: _Reader, where: str, fs: dict[str, Any]) -> FileSystem:
    v = {k: rd.value(fs, "filesystems", k, where) for k in fs}
    osts, count, size = v.get("ost_count"), v.get("default_stripe_count"), v.get("default_stripe_size")
    if osts is not None and osts < 1:
        raise rd.fail(f"{where}ost_count", f"{where}ost_count must be positive, got {osts}")
    if osts is not None and osts > INT_RANGES["ost_count"][1]:
        raise rd.fail(f"{where}ost_count", f"{where}ost_count must be between 1 and {INT_RANGES['ost_count'][1]}, "
                                           f"got {osts}")
    if count is not None and stripe_count_problem(count):
        raise rd.fail(f"{where}default_stripe_count", f"{where}default_stripe_count must be -1 (all OSTs) or "
                                                      f"1 to {MAX_STRIPE_COUNT}, got {count}")
    if count is not None and osts is not None and count > osts:
        raise rd.fail(f"{where}default_stripe_count", f"{where}default_stripe_count {count} is more than "
                                                      f"ost_count {osts}")
    if size is not None and stripe_size_problem(size):
        raise rd.fail(f"{where}default_stripe_size", f"{where}default_stripe_size {stripe_size_problem(size)}; "
                                                     f"Lustre refuses it")
    fstype = v["type"].lower()
    mount = v.get("mount")
    if mount is not None and not mount.startswith(("/", "$")):
        raise rd.fail(f"{where}mount", f"{where}mount must be an absolute path, got {mount!r}")
    striping = v.get("striping") or ("user" if fstype in ("lustre", "beegfs") else "none")
    return FileSystem(
        name=v["name"], type=fstype, mount=mount, ost_count=osts, default_stripe_count=count,
        default_stripe_size=size, striping=striping,
        persistent=True if v.get("persistent") is None else v["persistent"], quota=v.get("quota"),
        purpose=v.get("purpose"), citation=v.get("citation"), rated_write_bandwidth=v.get("rated_write_bandwidth"),
        rated_read_bandwidth=v.get("rated_read_bandwidth"))


def _tier(rd: _Reader, where: str, t: dict[str, Any], fs_names: dict[str, int]) -> Tier:
    v = {k: rd.value(t, "tiers", k, where) for k in t}
    if v["filesystem"] not in fs_names:
        raise rd.fail(f"{where}filesystem", f"{where}filesystem {v['filesystem']!r} is not one of the file "
                                            f"systems ({', '.join(fs_names) or 'none'})")
    request = v.get("request")
    if request is not None:
        features = constraint_of(request)
        if features is not None and not _FEATURES.match(features):
            raise rd.fail(f"{where}request", f"{where}request: {features!r} is not a feature list (letters, "
                                              f"digits, _ and - joined by &, | or ,)")
        if features is None and not re.match(r"^--[a-z][a-z-]*(?:[= ]\S+)?$", request.strip()):
            raise rd.fail(f"{where}request", f"{where}request {request!r} is not one sbatch option such as "
                                              f"--constraint=BEEOND or --gres=nvme:1")
        if '"' in request or "'" in request or "#" in request:
            raise rd.fail(f"{where}request", f"{where}request {request!r}: quotes and # cannot go in an #SBATCH "
                                              f"line")
    if v.get("mount") is not None:
        if not v["mount"].startswith(("/", "$")):
            raise rd.fail(f"{where}mount", f"{where}mount must be an absolute path or start with a variable "
                                           f"such as $TMPDIR, got {v['mount']!r}")
        from ..slurm.rewrite import mount_expr
        try:
            mount_expr(v["mount"])
        except UsageError as e:
            raise rd.fail(f"{where}mount", f"{where}mount: {e}") from None
    return Tier(name=v["name"], filesystem=v["filesystem"], kind=v.get("kind") or "per-job", request=request,
                mount=v.get("mount"), capacity_per_node=v.get("capacity_per_node"),
                stage=True if v.get("stage") is None else v["stage"], notes=v.get("notes"))


def read_center_file(p: Path) -> Center:
    """The center file at `p`, read and checked (`load_center_file` keeps what it read)."""
    import tomllib
    from ..inputs import TOML, read_input
    if not p.exists() and not p.is_symlink():
        raise UsageError(f"{p}: no such center file")
    data = read_input(p, TOML, ConfigError)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{p}: cannot read: {e}") from None
    try:
        data = loads_toml(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"at line (\d+)", str(e))
        line = int(m.group(1)) if m else None
        raise ConfigError(f"{p}:{line}: not valid TOML: {e}" if line
                          else f"{p}: not valid TOML: {e}") from None
    return center_from_dict(data, str(p), text)
