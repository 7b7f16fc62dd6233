"""The canonical CSV (docs/canonical-csv.md): what centers fill by hand and `kb export` writes."""
from __future__ import annotations

import csv as _csv
import io
import math
from typing import Any, BinaryIO, Iterable, Iterator

from ..errors import ImportFormatError, IOAdvisorError
from ..model.run import Provenance, Run, make_run
from . import MAX_CELL, SNIFF_BYTES, ImportContext, decode, register

_csv.field_size_limit(MAX_CELL)

REQUIRED = ("source", "system", "filesystem", "ost_count", "op", "api", "layout", "collective", "nodes", "ranks",
            "transfer_size_bytes", "block_size_bytes_per_rank", "stripe_count", "stripe_size_bytes", "value",
            "unit", "notes")
OPTIONAL = ("fs_type", "tier", "ranks_per_node", "segments", "file_size_bytes", "total_bytes", "files_per_dir",
            "items_per_rank", "access", "direct", "reps", "value_min", "value_max", "value_sd", "ci95_low",
            "ci95_high", "hints", "tool", "tool_version", "command", "citation", "date", "job_id", "kind")
COLUMNS = REQUIRED + OPTIONAL

_INT_COLS = {"ost_count": "ost_count", "nodes": "nodes", "ranks": "ranks", "transfer_size_bytes": "transfer_size",
             "block_size_bytes_per_rank": "block_size", "stripe_count": "stripe_count",
             "stripe_size_bytes": "stripe_size", "ranks_per_node": "ranks_per_node", "segments": "segments",
             "file_size_bytes": "file_size", "total_bytes": "total_bytes", "files_per_dir": "files_per_dir",
             "items_per_rank": "items_per_rank", "reps": "reps"}
_STR_COLS = {"filesystem": "filesystem", "fs_type": "fs_type", "tier": "tier", "api": "api", "layout": "layout",
             "access": "access", "notes": "notes"}
_SPREAD = ("value_min", "value_max", "value_sd", "ci95_low", "ci95_high")


BOM = "\ufeff"


def sniff(head: bytes) -> bool:
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").lower().lstrip(BOM)
    cols = {c.strip() for c in first.split(",")}
    return {"system", "op", "value", "unit"} <= cols


def _bool(text: str, col: str) -> bool | None:
    t = text.strip().lower()
    if t == "":
        return None
    if t in ("true", "yes", "1", "y", "collective", "on"):
        return True
    if t in ("false", "no", "0", "n", "independent", "off"):
        return False
    raise ValueError(f"column {col}: not true/false: {text!r}")


def _int(text: str, col: str) -> int | None:
    if not text:
        return None
    t = text.strip()
    if t == "":
        return None
    if t.isascii() and t.isdigit():     # the common case, without the float round trip
        return int(t)
    try:
        v = float(t)
    except ValueError:
        raise ValueError(f"column {col}: not a number: {text!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"column {col}: not a finite number: {text!r}")
    if v != int(v):
        raise ValueError(f"column {col}: not a whole number: {text!r}")
    if v < 0 and col not in ("stripe_count",):
        raise ValueError(f"column {col}: must not be negative: {text!r}")
    if abs(v) >= 2**53 and t.lstrip("+-").isdigit():
        return int(t)  # beyond a float's exact integers: keep every digit for the range check
    return int(v)


def _float(text: str, col: str) -> float | None:
    t = text.strip()
    if t == "":
        return None
    try:
        return float(t)
    except ValueError:
        raise ValueError(f"column {col}: not a number: {text!r}") from None


def parse_hints(text: str) -> dict[str, str]:
    """`k=v;k=v` (or comma-separated) into a dict."""
    out: dict[str, str] = {}
    for part in text.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"hint without '=': {part!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def row_to_run(row: dict[str, str], ctx: ImportContext) -> Run:
    """One CSV row (lower-case keys) to a Run; ValueError / IOAdvisorError with the reason."""
    cells = {k: v.strip() for k, v in row.items() if v}
    g = cells.get
    # empty cells were dropped above: a missing key is an empty cell (no call for it)
    kw: dict[str, Any] = {attr: _int(cells[col], col) if col in cells else None for col, attr in _INT_COLS.items()}
    for col, attr in _STR_COLS.items():
        kw[attr] = g(col) or None
    kw["collective"] = _bool(g("collective", ""), "collective")
    kw["direct"] = _bool(g("direct", ""), "direct")
    kw["hints"] = parse_hints(g("hints", ""))
    system = g("system", "") or ctx.system
    if not system:
        raise ValueError("column system is empty (or pass --system)")
    op = g("op", "")
    if not op:
        raise ValueError("column op is empty")
    value = _float(g("value", ""), "value")
    if value is None:
        raise ValueError("column value is empty")
    unit = g("unit", "")
    if not unit:
        raise ValueError("column unit is empty")
    spread = {c: _float(cells[c], c) for c in _SPREAD if c in cells}
    prov = Provenance(source=g("source", "") or ctx.source, citation=g("citation") or None,
                      command=g("command") or None, tool=g("tool") or None, tool_version=g("tool_version") or None,
                      date=g("date") or None, job_id=g("job_id") or None, kind=g("kind") or ctx.kind,
                      importer="csv/1")
    return make_run(system=system, op=op.lower(), value=value, unit=unit, spread=spread, provenance=prov, **kw)


def _runs(lines: Iterable[str], ctx: ImportContext) -> Iterator[Run]:
    """Runs of a canonical CSV given as lines, one at a time."""
    reader = _csv.reader(lines)
    try:
        header = next(reader)
    except StopIteration:
        raise ImportFormatError("empty CSV file", ctx.source) from None
    except _csv.Error as e:
        raise ImportFormatError(f"not a CSV line: {e}", ctx.source, 1) from None
    if header:   # spreadsheet programs start a UTF-8 CSV with a byte-order mark
        header[0] = header[0].removeprefix(BOM)
    header = [h.strip().lower() for h in header]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ImportFormatError(f"CSV header lacks column(s): {', '.join(missing)}", ctx.source, 1)
    n = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except _csv.Error as e:
            # e.g. a cell longer than MAX_CELL: the csv module stops there, so does the import
            raise ImportFormatError(f"not a CSV line: {e}", ctx.source, reader.line_num) from None
        except UnicodeDecodeError:
            raise ImportFormatError("not UTF-8 text", ctx.source, reader.line_num + 1) from None
        line = reader.line_num
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise ImportFormatError(f"expected {len(header)} cells, found {len(row)}", ctx.source, line)
        try:
            run = row_to_run(dict(zip(header, row)), ctx)
        except (ValueError, IOAdvisorError) as e:
            raise ImportFormatError(str(e), ctx.source, line) from None
        n += 1
        yield run
    if not n:
        raise ImportFormatError("CSV file has a header but no rows", ctx.source)


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    return list(_runs(io.StringIO(decode(data, ctx.source), newline=""), ctx))


def stream(f: BinaryIO, ctx: ImportContext) -> Iterator[Run]:
    """The runs of a canonical CSV read from an open binary file, one at a time (memory does not grow with
    the file; the caller has checked line lengths)."""
    if b"\x00" in f.read(SNIFF_BYTES):
        raise ImportFormatError("binary file, not a text benchmark output", ctx.source)
    f.seek(0)
    text = io.TextIOWrapper(f, encoding="utf-8", newline="")
    try:
        yield from _runs(text, ctx)
    finally:
        text.detach()


register("csv", sniff, parse, stream=stream)
