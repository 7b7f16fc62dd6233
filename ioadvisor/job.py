"""What a job is, for the advisor: one type (`JobSpec`), one key table (`KEYS`) and one parser (`describe`).

The description is read from, in increasing precedence:
  1. the script's `#SBATCH` lines (-N/--nodes, -n/--ntasks, --ntasks-per-node),
  2. its `#IOADVISE key=value` lines (their grammar: `ioadvise_lines`),
  3. a workload TOML file (the same keys, optionally under `[workload]`),
  4. sbatch-style options given to the command (-N/--nodes, -n/--ntasks, --ntasks-per-node),
  5. explicit flags (--ranks-per-node, --bytes-per-rank, ...).
Ranks per node come from the highest source that says anything about ranks: its ranks_per_node or
--ntasks-per-node, else its task count divided over the nodes (rounded up).

`KEYS` is the one table of keys: `advise`, `wrap`, `submit` and the Lua hook (its table is generated from this
one, `lua_keys_block`) all read it. Pure: text and values in, a JobSpec out; errors name the file and line.
"""
from __future__ import annotations

import math
import re
from types import MappingProxyType

from .errors import ImportFormatError, UsageError
from .frozen import NamedTuple
from .lustre import stripe_count_problem, stripe_size_problem
from .util import loads_toml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping, Sequence


class Key(NamedTuple):
    """One key of a job description: how its value is read, and the Lua pattern the hook checks it with."""

    name: str
    kind: str                     # int | count | size | choice | bool | path | hint | hints | mpi | name
    help: str
    lua: str                      # anchored Lua pattern for the value (the hook ignores values that do not match)
    choices: tuple[str, ...] = ()
    script: bool = True           # allowed in #IOADVISE lines
    repeat: bool = False          # repeatable; values accumulate


KEYS: tuple[Key, ...] = (
    Key("nodes", "int", "nodes of the job (else #SBATCH -N)", "^%d+$"),
    Key("ranks_per_node", "int", "MPI ranks per node (else --ntasks-per-node, or -n over -N)", "^%d+$"),
    Key("bytes_per_rank", "size", "bytes each rank writes or reads (4GiB, 512MiB)", "^[%w%.]+$"),
    Key("total_bytes", "size", "all ranks together, instead of bytes_per_rank", "^[%w%.]+$"),
    Key("api", "choice", "POSIX, MPIIO or HDF5", "^[%w%-]+$", ("posix", "mpiio", "mpi-io", "hdf5")),
    Key("layout", "choice", "shared (one file), fpp (file per process) or any", "^%a+$", ("shared", "fpp", "any")),
    Key("op", "choice", "write or read", "^%a+$", ("write", "read")),
    Key("pattern", "choice", "sequential or random", "^%a+$", ("sequential", "random")),
    Key("random", "bool", "true: random access (the same as pattern=random)", "^%a+$"),
    Key("access_size", "size", "bytes per I/O request (4MiB)", "^[%w%.]+$"),
    Key("files", "int", "files per rank (metadata load)", "^%d+$"),
    Key("lifetime", "choice", "job (scratch is fine) or after-job (must persist)", "^[%a%-]+$", ("job", "after-job")),
    Key("outdir", "path", "persistent directory for results and the record (relative to the start directory)",
        "^[%w%._%-/]+$"),
    Key("stage_in", "path", "file or directory copied to the scratch tier before the commands (repeatable)",
        "^[%w%._%-/]+$", repeat=True),
    Key("hint", "hint", "an MPI-IO hint KEY:VALUE (repeatable)", "^[%w_]+:[%w%._%-]+$", repeat=True),
    Key("hints", "hints", "MPI-IO hints KEY=VALUE,KEY=VALUE (workload files and --hints)", "^[%w_=,%.%-]+$",
        script=False),
    Key("stripe_count", "count", "pin the Lustre stripe count (-1: all OSTs)", "^%-?%d+$"),
    Key("stripe_size", "size", "pin the Lustre stripe size (a multiple of 64KiB)", "^[%w%.]+$"),
    Key("tier", "name", "pin the tier or file system by name", "^[%w%._%-]+$"),
    Key("collective", "bool", "pin collective (true) or independent (false) MPI-IO", "^%a+$"),
    Key("mpi", "mpi", "MPI flavour for the commands, optionally @VERSION (openmpi@4.1.4)", "^[%w@%.]+$"),
    Key("system", "name", "system to advise for (a shipped center or a system in the KB)", "^[%w%._%-]+$"),
    Key("center", "path", "center file or shipped center name", "^[%w%._%-/]+$"),
)
KEY = {k.name: k for k in KEYS}
SCRIPT_KEYS = tuple(k.name for k in KEYS if k.script)
_TRUE = {"1", "true", "yes", "on", "collective"}
_FALSE = {"0", "false", "no", "off", "independent"}


class JobSpec(NamedTuple):
    """A job as the advisor sees it. `sources` says where each field came from (file:line or the option)."""

    nodes: int | None = None
    ranks_per_node: int | None = None
    bytes_per_rank: int | None = None
    total_bytes: int | None = None
    api: str | None = None
    layout: str | None = None
    op: str | None = None
    pattern: str | None = None
    access_size: int | None = None
    files: int | None = None
    lifetime: str | None = None
    outdir: str | None = None
    stage_in: tuple[str, ...] = ()
    hints: Mapping[str, str] = MappingProxyType({})
    stripe_count: int | None = None
    stripe_size: int | None = None
    tier: str | None = None
    collective: bool | None = None
    mpi: str | None = None
    system: str | None = None
    center: str | None = None
    sources: Mapping[str, str] = MappingProxyType({})
    warnings: tuple[str, ...] = ()

    def workload(self) -> Any:
        """The `Workload` to advise for; UsageError naming what is missing or impossible."""
        from .model.types import Workload
        if self.nodes is None or self.ranks_per_node is None:
            raise UsageError("give the nodes and ranks per node (--nodes/-N and --ranks-per-node, --ntasks-per-node "
                             "or -n, or #SBATCH lines, or a --workload file)")
        if self.nodes < 1 or self.ranks_per_node < 1:
            raise UsageError(f"impossible workload: {self.nodes} node(s) x {self.ranks_per_node} rank(s) per node")
        ranks = self.nodes * self.ranks_per_node
        if self.bytes_per_rank is not None:
            bpr = self.bytes_per_rank
        elif self.total_bytes is not None:
            bpr = self.total_bytes // ranks
        else:
            raise UsageError("give --bytes-per-rank or --total-bytes (or #IOADVISE bytes_per_rank=SIZE)")
        if self.files is not None and self.files < 1:
            raise UsageError("files must be at least 1")
        return Workload(nodes=self.nodes, ranks_per_node=self.ranks_per_node, bytes_per_rank=bpr,
                        api=(self.api or "posix").replace("-", ""), layout=self.layout or "any",
                        op=self.op or "write", access=self.pattern or "sequential", access_size=self.access_size,
                        files_per_rank=self.files or 1, lifetime=self.lifetime or "after-job")

    def pins(self) -> dict[str, Any]:
        """Settings the user fixed; the advisor keeps them."""
        out: dict[str, Any] = {}
        for k in ("stripe_count", "stripe_size", "tier", "collective"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.hints:
            out["hints"] = dict(self.hints)
        return out


def _fail(msg: str, where: tuple[str | None, int | None]) -> ImportFormatError:
    return ImportFormatError(msg, where[0], where[1])


def _size(key: str, raw: Any, where: tuple[str | None, int | None]) -> int:
    """A size value in bytes; a stripe size Lustre refuses or a 0 access size is an error here, at its line."""
    from .model.units import parse_size
    try:
        n = parse_size(str(raw).strip())
    except (UsageError, ValueError):
        raise _fail(f"{key}={str(raw)[:40]!r} is not a size (use e.g. 1GiB)", where) from None
    if key == "stripe_size" and stripe_size_problem(n):
        raise _fail(f"{key}={stripe_size_problem(n)}", where)
    if key == "access_size" and n < 1:
        raise _fail(f"{key}={n}: must be at least 1 byte", where)
    return n


def read_value(key: str, raw: Any, where: tuple[str | None, int | None] = (None, None)) -> Any:
    """One key's value, checked; ImportFormatError naming `where` (file, line) for a bad one."""
    k = KEY[key]
    text = str(raw).strip() if not isinstance(raw, (dict, bool)) else raw
    if k.kind in ("int", "count"):
        if isinstance(raw, bool) or not re.fullmatch(r"-?\d+", str(text)):
            raise _fail(f"{key}={str(raw)[:40]!r} is not a whole number", where)
        n = int(text)
        if k.kind == "count" and stripe_count_problem(n):
            raise _fail(f"{key}={stripe_count_problem(n)}", where)
        if k.kind == "int" and n < 1:           # nodes, ranks per node, files: no job has none
            raise _fail(f"{key}={n}: must be at least 1", where)
        return n
    if k.kind == "size":
        return _size(key, raw, where)
    if k.kind == "choice":
        v = str(text).lower()
        if v not in k.choices:
            word = {"api": "API", "op": "op"}.get(key, key)
            raise _fail(f"unknown {word} {str(raw)[:40]!r} (use {', '.join(c for c in k.choices if c != 'mpi-io')})",
                        where)
        return "mpiio" if v == "mpi-io" else v
    if k.kind == "bool":
        v = str(text).lower() if not isinstance(raw, bool) else str(raw).lower()
        if v not in _TRUE | _FALSE:
            raise _fail(f"{key}={str(raw)[:40]!r}: use true or false", where)
        return v in _TRUE
    if k.kind == "hint":
        name, colon, value = str(text).partition(":")
        if not colon:
            raise _fail(f"hint={str(raw)[:40]!r}: use hint=KEY:VALUE", where)
        return _hints({name: value}, where)
    if k.kind == "hints":
        if isinstance(raw, dict):
            return _hints(raw, where)
        out: dict[str, str] = {}
        for part in str(text).split(","):
            part = part.strip()
            name, eq, value = part.partition("=")
            if part and (not eq or not name.strip() or not value.strip()):
                raise _fail(f"bad hint {part!r} (use KEY=VALUE,KEY=VALUE)", where)
            if part:
                out[name.strip()] = value.strip()
        return _hints(out, where)
    if k.kind == "mpi":
        from .mpiio.flavours import parse_mpi
        try:
            flavour, version = parse_mpi(str(text))
        except UsageError as e:
            raise _fail(str(e), where) from None
        return f"{flavour}@{version}" if version else flavour
    if not str(text):
        raise _fail(f"{key} is empty", where)
    return str(text)


def _hints(hints: Mapping[str, Any], where: tuple[str | None, int | None]) -> dict[str, str]:
    from .mpiio.render import check_hints
    try:
        return check_hints(hints)
    except UsageError as e:
        raise _fail(f"bad hint: {e}", where) from None


def workload_table() -> Any:
    """The workload file's shape (a `tomlschema.Table`): the keys of KEYS (a - read as _), their values read by
    `read_value`. Made when a workload file is read: advice from options alone loads no TOML schema."""
    from .tomlschema import Field, Table
    return Table(tuple(Field(k.name) for k in KEYS), dashes=True)


def _script_layers(script: str, path: str, strict: bool) -> tuple[dict, dict, dict, list[str]]:
    """(#SBATCH job sizes, #IOADVISE values, their sources, warnings) of a script."""
    from .ioadvise_lines import ioadvise_lines, read_line     # here, not at import: advise without a script reads none
    from .slurm.jobscript import parse_jobscript
    js = parse_jobscript(script)
    warnings = list(js.warnings)
    sb: dict[str, Any] = {}
    src: dict[str, str] = {}
    for d in js.directives:
        if d.option in ("nodes", "ntasks", "ntasks-per-node") and d.value is not None:
            m = re.match(r"^(\d+)", d.value.strip())
            if not m:
                raise ImportFormatError(f"#SBATCH --{d.option}={d.value[:40]!r} is not a number", path, d.line)
            sb[d.option.replace("-", "_")] = int(m.group(1))
            src[d.option.replace("-", "_")] = f"{path}:{d.line} (#SBATCH)"
    io: dict[str, Any] = {}
    for n, line in ioadvise_lines(script):
        try:
            reading = read_line(line)
        except ValueError as e:
            raise ImportFormatError(str(e), path, n) from None
        problems = [f"expected key=value, got {w[:40]!r}" for w in reading.bare] + [
            f"unknown key {key[:40]!r} (known: {', '.join(SCRIPT_KEYS)})" for key, _ in reading.items
            if key not in SCRIPT_KEYS]
        if problems and strict:
            raise ImportFormatError(problems[0], path, n)
        warnings += [f"{path}:{n}: {msg}" for msg in problems]
        for key, value in reading.items:
            if key not in SCRIPT_KEYS:
                continue
            v = read_value(key, value, (path, n))
            if KEY[key].repeat and key in io:
                io[key] = {**io[key], **v} if isinstance(v, dict) else (*io[key], v)
            else:
                io[key] = v if not KEY[key].repeat or isinstance(v, dict) else (v,)
            src[key] = f"{path}:{n}"
    return sb, io, src, warnings


def sbatch_sizes(args: Sequence[str]) -> dict[str, int]:
    """-N/--nodes, -n/--ntasks, --ntasks-per-node from sbatch-style arguments (the last one wins)."""
    out: dict[str, int] = {}
    if not args:                 # (advise without -n or --ntasks-per-node: sbatch's grammar is not loaded)
        return out
    from .slurm.jobscript import parse_sbatch_args
    for d in parse_sbatch_args(list(args)):
        if d.option in ("nodes", "ntasks", "ntasks-per-node") and d.value is not None:
            m = re.match(r"^(\d+)", d.value.strip())
            if not m:
                raise UsageError(f"--{d.option} {d.value[:40]!r} is not a number")
            out[d.option.replace("-", "_")] = int(m.group(1))
    return out


def _toml_layer(toml: str, toml_path: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The workload file's values and, per key, where it was set (file:line)."""
    import tomllib

    from .tomlschema import first_problem, key_line
    try:
        data = loads_toml(toml)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise ImportFormatError(f"not valid TOML: {e}", toml_path, int(m.group(1)) if m else None) from None
    at: tuple[str, ...] = ("workload",) if "workload" in data else ()
    data = data.get("workload", data)
    if not isinstance(data, dict):
        raise ImportFormatError("workload must be a table ([workload])", toml_path, key_line(toml, at))
    bad = first_problem(data, workload_table())
    if bad is not None:
        raise ImportFormatError(f"unknown key {bad.keys[0]!r} (known: {', '.join(KEY)})", toml_path,
                                key_line(toml, at + bad.keys[0:1]))
    vals: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, raw in data.items():
        k = key.replace("-", "_")
        where = (toml_path, key_line(toml, at + (key,)))
        if KEY[k].repeat and isinstance(raw, list):
            vals[k] = tuple(read_value(k, x, where) for x in raw) if k != "hint" else {
                a: b for x in raw for a, b in read_value(k, x, where).items()}
        else:
            v = read_value(k, raw, where)
            vals[k] = (v,) if KEY[k].repeat and not isinstance(v, dict) else v
        sources[k] = f"{toml_path}:{where[1]}" if where[1] else toml_path
    return vals, sources


def _explicit_layer(explicit: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The values given as options (None: not given) and the option that set each."""
    vals: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for k, raw in explicit.items():
        if raw is None:
            continue
        vals[k] = read_value(k, raw, (None, None)) if k in KEY else raw
        sources[k] = "--" + k.replace("_", "-")
    return vals, sources


def _merge(layers: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The layers' values, each key from the highest layer that sets it; ranks per node from the highest layer
    that says anything about ranks."""
    merged: dict[str, Any] = {}
    for _, vals in layers:
        for k, v in vals.items():
            if k in ("ntasks", "ntasks_per_node"):
                continue
            merged[k] = v
    for _, vals in reversed(layers):
        if "ranks_per_node" in vals or "ntasks_per_node" in vals:
            merged["ranks_per_node"] = vals.get("ranks_per_node", vals.get("ntasks_per_node"))
            break
        if "ntasks" in vals:
            nodes = merged.get("nodes") or 1
            merged["ranks_per_node"] = max(1, math.ceil(vals["ntasks"] / nodes))
            break
    return merged


def describe(*, script: str | None = None, script_path: str = "<script>", toml: str | None = None,
             toml_path: str = "<workload>", sbatch: Mapping[str, int] | None = None,
             explicit: Mapping[str, Any] | None = None, strict: bool = True) -> JobSpec:
    """Merge the sources into one JobSpec (precedence in the module docstring). `strict`: an unknown
    #IOADVISE key is an error (exit 2, file and line) rather than a warning."""
    layers: list[tuple[str, dict[str, Any]]] = []      # (source, values), lowest precedence first
    sources: dict[str, str] = {}
    warnings: list[str] = []
    if script is not None:
        sb, io, src, warns = _script_layers(script, script_path, strict)
        warnings += warns
        layers += [("sbatch-script", sb), ("ioadvise", io)]
        sources.update(src)
    if toml is not None:
        vals, src = _toml_layer(toml, toml_path)
        layers.append(("toml", vals))
        sources.update(src)
    if sbatch:
        layers.append(("sbatch-options", dict(sbatch)))
        sources.update({k: "sbatch option" for k in sbatch})
    if explicit:
        vals, src = _explicit_layer(explicit)
        layers.append(("explicit", vals))
        sources.update(src)
    merged = _merge(layers)
    if script is not None:
        # what sbatch does when the script says nothing: one node, one task per node
        if "nodes" not in merged:
            merged["nodes"] = 1
            sources.setdefault("nodes", "sbatch default")
        if "ranks_per_node" not in merged:
            merged["ranks_per_node"] = 1
            sources.setdefault("ranks_per_node", "sbatch default")
    hints = dict(merged.pop("hints", {}) or {})
    hints.update(merged.pop("hint", {}) or {})
    if merged.pop("random", None):
        merged.setdefault("pattern", "random")
    names = set(JobSpec._fields)
    return JobSpec(**{k: v for k, v in merged.items() if k in names}, hints=hints, sources=sources,
                   warnings=tuple(warnings))


def lua_keys_block() -> str:
    """The key table of slurm/job_submit.lua, generated from KEYS (a test checks the hook carries exactly this)."""
    items = [f'{k.name} = "{k.lua}"' for k in KEYS if k.script]
    lines, cur = [], "  "
    for it in items:
        if len(cur) + len(it) + 2 > 110:
            lines.append(cur.rstrip())
            cur = "  "
        cur += it + ", "
    lines.append(cur.rstrip())
    return ("-- >>> IOADVISE KEYS: generated from ioadvisor/job.py (KEYS); the #IOADVISE keys and how each value "
            "must look\nlocal KEYS = {\n" + "\n".join(lines) + "\n}\n-- <<< IOADVISE KEYS")
