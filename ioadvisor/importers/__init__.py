"""Importers: each module turns one tool's output into `Run`s.

An importer is registered with `register(name, sniff, parse)`:
- `sniff(head: bytes) -> bool` says from the first bytes of a file whether it is this format (content, not name);
- `parse(data: bytes, ctx: ImportContext) -> list[Run]` is pure and raises ImportFormatError (with a line where
  known) for truncated, foreign or invalid input;
- optionally `stream(f: BinaryIO, ctx) -> Iterator[Run]`, the same runs read from an open file as they come, so
  that a file of any size imports in bounded memory (the canonical CSV has one);
- `text=False` for binary formats (no line-length cap applies to them);
- optionally `check(path)`, a cheap look at a regular file before it is read whole (a Darshan log's header
  against the file's size), raising ImportFormatError.
Modules are imported on first use, so a missing optional dependency (e.g. darshan) only affects its format.
"""
from __future__ import annotations

import importlib
import json
import sys
from typing import Any, BinaryIO, Callable, Iterator

from ..errors import ImportFormatError, UsageError
from ..frozen import field, frozen
from ..model.run import Run

# Order matters for detection: the most specific formats first, the canonical CSV last.
MODULES = ("darshan", "jobrecord", "bench", "ior", "mdtest", "fio", "iozone", "csv")
SNIFF_BYTES = 64 << 10        # bytes a format is recognised from
MAX_LINE = 1 << 20            # bytes in one line of a text format: longer is not a benchmark output
MAX_CELL = 128 << 10          # characters in one CSV cell
MAX_WHOLE_FILE = 256 << 20    # bytes an importer without `stream` reads at once


@frozen
class ImportContext:
    """What an importer needs to know besides the file's content."""

    source: str = ""                 # path or label, for provenance and errors
    system: str | None = None        # --system: the machine the runs were measured on
    filesystem: str | None = None
    kind: str = "benchmark"
    center: Any = None               # --center (a Center, a center file or a name): where a Darshan log's files
                                     # must lie for it to measure the center, and which file system an IOR,
                                     # mdtest or fio test path lies on (`place`)
    # what the import should tell the user although it succeeds (one line each): `parse` appends to it
    warnings: list[str] = field(default_factory=list, compare=False, hash=False)
    _found: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)   # looked up once

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


class NoMeasurement(Exception):
    """Raised by `parse` for a readable file that measures nothing of the center it is imported for (a Darshan
    log of a job that ran elsewhere): not an error; the import adds nothing and says why (`reason`)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def context_center(ctx: ImportContext) -> Any:
    """The Center a file is read for: `ctx.center` (a Center, a center file or a name), else the center named
    like `ctx.system` (a site's in $IOADVISE_CENTERS, else shipped); None when there is neither."""
    from ..center import center_for
    if ctx.center is not None and hasattr(ctx.center, "filesystems"):
        return ctx.center
    if "center" not in ctx._found:
        ctx._found["center"] = center_for(ctx.center, ctx.system)
    return ctx._found["center"]


def system_of(ctx: ImportContext) -> str:
    """The system a benchmark's runs are filed under: `--system`, else the name of the center given (`--center`,
    as a Darshan log's runs are), else "local"."""
    if ctx.system:
        return ctx.system
    return context_center(ctx).name if ctx.center is not None else "local"


def place(ctx: ImportContext, path: str | None, tool: str) -> tuple[str | None, str | None]:
    """(file system, tier) of the runs of a benchmark that wrote below `path` (an IOR test file, an mdtest
    directory, a fio job's file or directory): `--filesystem` when given; else the file system (and tier) of the center (`context_center`) whose
    mount holds the path. Where a center is known but holds no such mount, or the output names no path, the runs
    name no file system and `ctx` gets a warning naming the path and `--filesystem`."""
    if ctx.filesystem is not None:
        return ctx.filesystem, None
    center = context_center(ctx)
    if center is None:
        return None, None
    if path:
        from ..center import place_of_path
        found = place_of_path(center, path)
        if found is not None:
            return found
    names = "|".join(f.name for f in center.filesystems) or "NAME"
    mounts = ", ".join(m for m in [f.mount for f in center.filesystems] + [t.mount for t in center.tiers] if m)
    if path and len(path) > 200:
        path = path[:200] + "..."
    where = (f"{tool}'s test path {path} lies under no mount of {center.name} ({mounts or 'its center file gives none'})"
             if path else f"the {tool} output names no test path")
    ctx.warn(f"{where}: its runs name no file system; pass --filesystem {names}")
    return None, None


@frozen
class Importer:
    name: str
    version: int
    sniff: Callable[[bytes], bool]
    parse: Callable[[bytes, ImportContext], list[Run]]
    stream: Callable[[BinaryIO, ImportContext], Iterator[Run]] | None = None
    text: bool = True
    check: Callable[[str], None] | None = None


_REGISTRY: dict[str, Importer] = {}


def register(name: str, sniff: Callable[[bytes], bool], parse: Callable[[bytes, ImportContext], list[Run]],
             version: int = 1, *, stream: Callable[[BinaryIO, ImportContext], Iterator[Run]] | None = None,
             text: bool = True, check: Callable[[str], None] | None = None) -> Importer:
    """Register an importer; a second importer of the same name is an error."""
    if name in _REGISTRY:
        raise ValueError(f"importer {name!r} registered twice")
    imp = Importer(name, version, sniff, parse, stream, text, check)
    _REGISTRY[name] = imp
    return imp


def _load_all() -> None:
    for mod in MODULES:
        if mod in _REGISTRY:
            continue
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as e:
            # a format whose module is not there (yet) or whose optional dependency is missing
            if e.name not in (f"{__name__}.{mod}", "darshan"):
                raise


def get(name: str) -> Importer:
    _load_all()
    if name not in _REGISTRY:
        raise UsageError(f"unknown format {name!r} (known: {', '.join(names())})")
    return _REGISTRY[name]


def names() -> list[str]:
    _load_all()
    return [m for m in MODULES if m in _REGISTRY]


def detect(head: bytes, source: str = "") -> Importer:
    """The importer whose sniff accepts `head`; ImportFormatError naming the source if none does."""
    for name in names():
        imp = _REGISTRY[name]
        if imp.sniff(head):
            return imp
    raise ImportFormatError(
        f"unrecognised format (known: {', '.join(names())}; pass --format to force one)", source)


def decode(data: bytes, source: str = "") -> str:
    """Text of a file; ImportFormatError if it is binary or not UTF-8."""
    if b"\x00" in data[:SNIFF_BYTES]:
        raise ImportFormatError("binary file, not a text benchmark output", source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ImportFormatError("not UTF-8 text", source, line) from None


def load_json(text: str, source: str, what: str, first_line: int = 1) -> object:
    """A JSON document (`what` names it in errors, e.g. "fio JSON") whose text starts at line `first_line` of
    `source`; ImportFormatError for invalid JSON, nesting deeper than Python's recursion allows, and integers of
    more digits than Python converts (neither is a tool's output)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ImportFormatError(f"invalid or truncated {what}: {e.msg}", source, e.lineno + first_line - 1) from None
    except RecursionError:
        raise ImportFormatError(f"{what}: arrays or objects nested too deep", source) from None
    except ValueError:      # int('9' * 5000): beyond the conversion limit of int from text
        raise ImportFormatError(f"{what}: an integer of more than {sys.get_int_max_str_digits()} digits",
                                source) from None
