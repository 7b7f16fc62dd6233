"""The canonical CSV (docs/canonical-csv.md): what centers fill by hand and `kb export` writes; its reader
and its writer (`export_csv`)."""
from __future__ import annotations

import csv as _csv
import io
import math
from typing import Any, BinaryIO, Callable, Iterable, Iterator, TypeVar

from ..errors import ImportFormatError, IOAdvisorError
from ..frozen import from_dict
from ..model.run import Provenance, Run
from ..model.validate import make_run
from . import MAX_CELL, SNIFF_BYTES, ImportContext, decode, register

_csv.field_size_limit(MAX_CELL)
T = TypeVar("T")

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
    if not text:
        return None
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
        raise ValueError(f"column {col}: not a number: {t!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"column {col}: not a finite number: {t!r}")
    if v != int(v):
        raise ValueError(f"column {col}: not a whole number: {t!r}")
    if v < 0 and col not in ("stripe_count",):
        raise ValueError(f"column {col}: must not be negative: {t!r}")
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
        raise ValueError(f"column {col}: not a number: {t!r}") from None


def parse_hints(text: str) -> dict[str, str]:
    """`k=v;k=v` (or comma-separated) into a dict."""
    out: dict[str, str] = {}
    if not text:
        return out
    for part in text.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        if "=" not in part:
            raise ValueError(f"hint without '=': {part!r}")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


class _Rows:
    """Runs from the cells of CSV rows with a given header: the header is looked up once, each row is then read
    by position (a dict per row cost a third of an import's parsing time). The header names each column once
    (`_read` refuses it otherwise)."""

    def __init__(self, header: list[str], ctx: ImportContext):
        at = {name: i for i, name in enumerate(header)}
        self.ctx = ctx
        self.ints = tuple((at[col], col, attr) for col, attr in _INT_COLS.items() if col in at)
        self.none_ints = {attr: None for col, attr in _INT_COLS.items() if col not in at}
        self.strs = tuple((at[col], attr) for col, attr in _STR_COLS.items() if col in at)
        self.none_strs = {attr: None for col, attr in _STR_COLS.items() if col not in at}
        self.spread = tuple((at[c], c) for c in _SPREAD if c in at)
        self.prov = tuple((at[c], c) for c in ("citation", "command", "tool", "tool_version", "date", "job_id")
                          if c in at)
        # the other columns by position, -1 when the header lacks them (read as an empty cell)
        self.at = tuple(at.get(c, -1) for c in ("system", "op", "value", "unit", "collective", "direct", "hints",
                                                  "source", "kind"))

    def run(self, row: list[str]) -> Run:
        """One row to a Run; ValueError / IOAdvisorError with the reason."""
        ctx = self.ctx
        # plain digits (the usual cell) converted here, anything else by _int
        kw: dict[str, Any] = {attr: int(t) if t.isdigit() and t.isascii() else _int(t, col)
                              for i, col, attr in self.ints for t in (row[i],)}
        kw.update(self.none_ints)
        for i, attr in self.strs:
            kw[attr] = row[i].strip() or None
        kw.update(self.none_strs)
        system, op, value, unit, coll, direct, hints, source, kind = (
            "" if i < 0 else row[i].strip() for i in self.at)
        kw["collective"] = _bool(coll, "collective")
        kw["direct"] = _bool(direct, "direct")
        kw["hints"] = parse_hints(hints)
        system = system or ctx.system
        if not system:
            raise ValueError("column system is empty (or pass --system)")
        if not op:
            raise ValueError("column op is empty")
        value = _float(value, "value")
        if value is None:
            raise ValueError("column value is empty")
        if not unit:
            raise ValueError("column unit is empty")
        spread = {c: _float(row[i], c) for i, c in self.spread if row[i]}
        given = {c: row[i].strip() or None for i, c in self.prov}
        given.update(source=source or ctx.source, kind=kind or ctx.kind, importer="csv/1")
        prov = from_dict(Provenance, given)
        return make_run(system=system, op=op.lower(), value=value, unit=unit, spread=spread, provenance=prov, **kw)


def _read(lines: Iterable[str], ctx: ImportContext,
          reader_for: Callable[[list[str], ImportContext], Callable[[list[str]], T]]) -> Iterator[T]:
    """What `reader_for(header, ctx)` makes of each row of a canonical CSV given as lines, one at a time; its
    ValueError or IOAdvisorError is the row's error, named with the line."""
    # strict: a quote that is never closed, or text after a closing quote, is an error (not a cell that runs on
    # through the following rows)
    reader = _csv.reader(lines, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise ImportFormatError("empty CSV file", ctx.source) from None
    except _csv.Error as e:
        raise ImportFormatError(f"not a CSV line: {e}", ctx.source, 1) from None
    if header:   # spreadsheet programs start a UTF-8 CSV with a byte-order mark
        header[0] = header[0].removeprefix(BOM)
    header = [h.strip().lower() for h in header]
    twice = sorted({h for h in header if h and header.count(h) > 1})
    if twice:
        raise ImportFormatError(f"CSV header names column(s) more than once: {', '.join(twice)}", ctx.source, 1)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ImportFormatError(f"CSV header lacks column(s): {', '.join(missing)}", ctx.source, 1)
    convert = reader_for(header, ctx)
    width = len(header)
    n = 0
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except _csv.Error as e:
            if "unexpected end of data" in str(e):
                raise ImportFormatError("a quoted cell of the row starting here has no closing quote",
                                        ctx.source, start) from None
            # e.g. a cell longer than MAX_CELL: the csv module stops there, so does the import
            raise ImportFormatError(f"not a CSV line: {e}", ctx.source, reader.line_num) from None
        except UnicodeDecodeError:
            raise ImportFormatError("not UTF-8 text", ctx.source, reader.line_num + 1) from None
        line = reader.line_num
        if not (row and row[0].strip()) and not "".join(row).strip():      # only blank cells
            continue
        if len(row) != width:
            raise ImportFormatError(f"expected {width} cells, found {len(row)}", ctx.source, line)
        try:
            item = convert(row)
        except (ValueError, IOAdvisorError) as e:
            raise ImportFormatError(str(e), ctx.source, line) from None
        n += 1
        yield item
    if not n:
        raise ImportFormatError("CSV file has a header but no rows", ctx.source)


def _runs(lines: Iterable[str], ctx: ImportContext) -> Iterator[Run]:
    """Runs of a canonical CSV given as lines, one at a time."""
    return _read(lines, ctx, lambda header, c: _Rows(header, c).run)


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    return list(_runs(io.StringIO(decode(data, ctx.source), newline=""), ctx))


def stream(f: BinaryIO, ctx: ImportContext,
           reader_for: Callable[[list[str], ImportContext], Callable[[list[str]], Any]] | None = None) -> Iterator:
    """The runs of a canonical CSV read from an open binary file, one at a time (memory does not grow with
    the file; the caller has checked line lengths). With `reader_for(header, ctx)`, what the row reader it
    returns makes of each row instead of a Run (the KB reads rows straight into its stored form so)."""
    if b"\x00" in f.read(SNIFF_BYTES):
        raise ImportFormatError("binary file, not a text benchmark output", ctx.source)
    f.seek(0)
    text = io.TextIOWrapper(f, encoding="utf-8", newline="")
    try:
        yield from _read(text, ctx, reader_for or (lambda header, c: _Rows(header, c).run))
    finally:
        text.detach()


register("csv", sniff, parse, stream=stream)


# ---- the other way: runs written as the canonical CSV (`kb export`), which reads back as the same runs ----

def _cell_text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def run_csv_row(r: Run) -> dict[str, str]:
    """A Run as one canonical-CSV row; the value in the unit it was given in."""
    p = r.provenance
    factor = (r.value_given / r.value) if (r.value_given is not None and r.value) else 1.0
    given = lambda v: None if v is None else v * factor  # noqa: E731
    d = {
        "source": p.source, "system": r.system, "filesystem": r.filesystem, "ost_count": r.ost_count,
        "op": r.op, "api": r.api, "layout": r.layout, "collective": r.collective, "nodes": r.nodes,
        "ranks": r.ranks, "transfer_size_bytes": r.transfer_size, "block_size_bytes_per_rank": r.block_size,
        "stripe_count": r.stripe_count, "stripe_size_bytes": r.stripe_size,
        "value": r.value_given if r.value_given is not None else r.value, "unit": r.unit_given or r.unit,
        "notes": r.notes, "fs_type": r.fs_type, "tier": r.tier, "ranks_per_node": r.ranks_per_node,
        "segments": r.segments, "file_size_bytes": r.file_size, "total_bytes": r.total_bytes,
        "files_per_dir": r.files_per_dir, "items_per_rank": r.items_per_rank, "access": r.access,
        "direct": r.direct, "reps": r.reps, "value_min": given(r.value_min), "value_max": given(r.value_max),
        "value_sd": given(r.value_sd), "ci95_low": given(r.ci95_low), "ci95_high": given(r.ci95_high),
        "hints": ";".join(f"{k}={v}" for k, v in sorted(r.hints.items())), "tool": p.tool,
        "tool_version": p.tool_version, "command": p.command, "citation": p.citation, "date": p.date,
        "job_id": p.job_id, "kind": p.kind,
    }
    return {k: _cell_text(d[k]) for k in COLUMNS}


def export_csv(runs: list[Run]) -> str:
    buf = io.StringIO()
    w = _csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in runs:
        w.writerow(run_csv_row(r))
    return buf.getvalue()
