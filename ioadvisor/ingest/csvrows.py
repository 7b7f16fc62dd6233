"""The canonical CSV read straight into the rows the KB stores, each with its content key.

`importers.csv` reads a row into a `Run` (two frozen records, `make_run`, `check_run`), from which the KB
takes the row it stores and the content key the run's id derives from: most of the cost of importing a large
CSV. Here a row goes to both at once. Every cell except the value and its spread is converted through a cache
per column, by the same functions the importer and `check_run` use: the same text in the same column always
gives the same stored value and the same text in the content key, so the few distinct systems, ops, sizes and
notes of a large file are converted and checked once. A row with anything this reading does not take on itself
(a number with spaces or a sign, a value out of range, a cell the checks refuse) is read by the importer
(`_Rows.run`) instead, which gives the same row or the error that names the line. The tests hold both readings
to the same rows and keys (tests/test_csvrows.py).
"""
from __future__ import annotations

import json
import marshal
import math
import os
import pickle
from operator import itemgetter
from typing import Any, BinaryIO, Callable, Iterator

from ..errors import ImportFormatError, IOAdvisorError
from ..importers import ImportContext
from ..importers.csv import _INT_COLS, _SPREAD, _STR_COLS, _Rows, _bool, _float, parse_hints
from ..kb.rows import VALUES, keyed_row
from ..model.run import _JSON_STR, APIS, KEY_ORDER, KEY_TEMPLATE, KINDS, LAYOUTS, OPS, norm_api, norm_layout
from ..model.units import normalize
from ..model.validate import _HINT_KEY, ACCESS, INT_RANGES, MAX_VALUE, MIN_VALUE, _name, _text, check_date
CACHE_CELLS = 4096       # distinct cells remembered per column (then its cache starts again)
CACHE_CELL_CHARS = 256   # a longer cell is converted each time it comes
ROW_CACHE = 1 << 14      # distinct rows (all cells but the value and its spread) remembered, then started again
ROW_CACHE_CHARS = 1024   # a row whose remembered cells are longer in all is converted each time it comes

Pair = tuple[Any, str | None]     # (stored value, its text in the content key)


class _NotHere(Exception):
    """A cell this reading leaves to the importer."""


def _json(v: str | None) -> str:
    return "null" if v is None else _JSON_STR(v)


def _column_readers(ctx: ImportContext) -> dict[str, tuple[str, Callable[[str], Pair]]]:
    """Per CSV column, the run field it fills and the conversion of one cell (raising where the importer or
    check_run would refuse the cell, or would read it in a way not repeated here)."""

    def system(cell: str) -> Pair:
        v = cell.strip() or ctx.system
        if not v:
            raise _NotHere
        _name(v, "system", required=True)
        return v, _json(v)

    def source(cell: str) -> Pair:
        v = cell.strip() or ctx.source
        _text(v, "source")
        return v, None

    def kind(cell: str) -> Pair:
        v = cell.strip() or ctx.kind
        if v not in KINDS:
            raise _NotHere
        return v, _json(v)

    readers: dict[str, tuple[str, Callable[[str], Pair]]] = {
        "system": ("system", system), "op": ("op", _op), "unit": ("unit", _unit), "hints": ("hints", _hints),
        "collective": ("collective", _flag("collective")), "direct": ("direct", _flag("direct")),
        "source": ("source", source), "kind": ("kind", kind),
        "api": ("api", _one_of("api", APIS, lambda v: norm_api(v) or "")),
        "layout": ("layout", _one_of("layout", LAYOUTS, norm_layout)),
        "access": ("access", _one_of("access", ACCESS, lambda v: v)),
        "notes": ("notes", _text_cell("notes")), "citation": ("citation", _text_cell("citation")),
        "command": ("command", _text_cell("command")),
    }
    for col in ("filesystem", "fs_type", "tier"):
        readers[col] = (_STR_COLS[col], _name_cell(col))
    for col in ("tool", "tool_version", "job_id"):
        readers[col] = (col, _name_cell(col))
    readers["date"] = ("date", _date)
    for col, field in _INT_COLS.items():
        readers[col] = (field, _whole(field))
    return readers


# ---- the conversion of one cell, per kind of column -----------------------------------------------------------

def _name_cell(field: str) -> Callable[[str], Pair]:
    def read(cell: str) -> Pair:
        v = cell.strip() or None
        if v is not None:
            _name(v, field)
        return v, _json(v)
    return read


def _text_cell(field: str) -> Callable[[str], Pair]:
    def read(cell: str) -> Pair:
        v = cell.strip() or None
        _text(v, field)
        return v, _json(v)
    return read


def _whole(field: str) -> Callable[[str], Pair]:
    lo, hi = INT_RANGES[field]

    def read(cell: str) -> Pair:
        if not cell:
            return None, "null"
        if cell == "-1" and lo == -1:           # a stripe count over all OSTs
            return -1, "-1"
        if not (cell.isdigit() and cell.isascii()):
            raise _NotHere
        v = int(cell)
        if not lo <= v <= hi:
            raise _NotHere
        return v, int.__repr__(v)
    return read


def _flag(field: str) -> Callable[[str], Pair]:
    def read(cell: str) -> Pair:
        v = _bool(cell, field)
        return (None, "null") if v is None else (int(v), "true" if v else "false")
    return read


def _one_of(field: str, known: tuple[str, ...], norm: Callable[[str], str]) -> Callable[[str], Pair]:
    def read(cell: str) -> Pair:
        v = cell.strip() or None
        if v is not None:
            v = norm(v)
            if v not in known:
                raise _NotHere
        return v, _json(v)
    return read


def _op(cell: str) -> Pair:
    v = cell.strip().lower()
    if v not in OPS:
        raise _NotHere
    return v, _json(v)


def _unit(cell: str) -> Pair:
    given = cell.strip()
    if not given:
        raise _NotHere
    factor, unit = normalize(1.0, given)
    return (unit, given, factor, (MIN_VALUE[unit], MAX_VALUE[unit])), _json(unit)


def _hints(cell: str) -> Pair:
    h = parse_hints(cell)
    for k, v in h.items():
        if not _HINT_KEY.match(k):
            raise _NotHere
        _name(v, f"hint {k}", limit=1024)
    if not h:
        return None, "{}"
    items = sorted(h.items())
    return (json.dumps(dict(items)),
            "{" + ",".join(f"{_JSON_STR(k)}:{_JSON_STR(x)}" for k, x in items) + "}")


def _date(cell: str) -> Pair:
    v = cell.strip() or None
    if v is not None:
        _name(v, "date")
        check_date(v)
    return v, _json(v)


class RowReader:
    """Rows of a canonical CSV with a given header: `reader(cells)` is (content key, stored values in VALUES
    order) for one row, or the importer's ValueError / IOAdvisorError for a bad one."""

    def __init__(self, header: list[str], ctx: ImportContext):
        at = {name: i for i, name in enumerate(header)}
        self._run = _Rows(header, ctx).run
        self._keyed = keyed_row
        readers = _column_readers(ctx)
        self.cached: list[tuple[int, dict[str, Pair], Callable[[str], Pair]]] = []
        fields: list[str] = []                       # the field of each cached column, in order
        consts: dict[str, Pair] = {"importer": ("csv/1", _json("csv/1")), "flags": (None, None)}
        self.slow_only = False
        for col, (field, read) in readers.items():
            if col in at:
                self.cached.append((at[col], {}, read))
                fields.append(field)
            else:
                try:                                 # a column the file lacks reads as an empty cell
                    consts[field] = read("")
                except (ValueError, IOAdvisorError, _NotHere):
                    self.slow_only = True            # (a --kind the checks refuse, say): the importer decides
        # the cached columns' cells of a row and their caches, for the lookups of a row in C
        cols = [i for i, _, _ in self.cached]
        self.cells = itemgetter(*cols) if len(cols) > 1 else (lambda row, i=cols[0]: (row[i],))
        self.caches = [cache for _, cache, _ in self.cached]
        # the cached columns' cells of a row, joined by _CELLS_SEP, -> its `_parts`: one string hashed and compared
        # instead of a tuple of 17 cells (the reading process of a million rows took 0.8 s less CPU)
        self.rows: dict[str, tuple] = {}
        self.seps = len(cols) - 1                    # a row's joined cells hold this many separators
        self.unit_at = fields.index("unit")
        self.value_at = at["value"]
        self.spread = tuple(at.get(c, -1) for c in _SPREAD)
        self.any_spread = any(i >= 0 for i in self.spread)
        # where each stored value and each key text comes from: the cached cells, then the values computed per
        # row (EXTRA), then the constants
        extra = ("value", "unit", "value_given", "unit_given") + _SPREAD
        # (the unit's cell gives the unit, the unit as given, its factor and bounds: picked from it per row)
        names = [f if f != "unit" else "unit cell" for f in fields] + list(extra) + list(consts)
        self.pick = itemgetter(*(names.index(c) for c in VALUES))
        self.consts = tuple(v for v, _ in consts.values())
        key_names = fields + ["value"] + list(consts)
        self.key_pick = itemgetter(*(key_names.index(c) for c in KEY_ORDER))
        self.const_keys = tuple(k for _, k in consts.values())

    def __call__(self, row: list[str]) -> tuple[str, tuple]:
        if self.slow_only:
            return self._keyed(self._run(row))
        cells = _CELLS_SEP.join(self.cells(row))
        parts = self.rows.get(cells)
        if parts is None:
            parts = self._parts(row)
            if parts is None:
                return self._keyed(self._run(row))
            # (a cell holding the separator would make the joined text another row's: such a row is not kept)
            if len(cells) <= ROW_CACHE_CHARS and cells.count(_CELLS_SEP) == self.seps:
                if len(self.rows) >= ROW_CACHE:
                    self.rows.clear()
                self.rows[cells] = parts
        head, tail, key_head, key_tail, (unit, unit_given, factor, (floor, ceiling)) = parts
        t = row[self.value_at].strip()
        try:
            given = float(t)
        except ValueError:
            return self._keyed(self._run(row))
        value = given * factor
        if not (math.isfinite(given) and given >= 0 and value <= ceiling and (value >= floor or value == 0)):
            return self._keyed(self._run(row))
        spread = self._spread(row, given, value, factor, ceiling) if self.any_spread else _NO_SPREAD
        if spread is None:
            return self._keyed(self._run(row))
        return f'{key_head}"{value:.10g}"{key_tail}', head + (value, unit, given, unit_given) + spread + tail

    def _parts(self, row: list[str]) -> tuple | None:
        """What a row's cells but the value and its spread give: the stored values before the value and after
        its spread, the content key's text before and after the value's, and the unit's cell (unit, unit as
        given, factor, bounds); None if a cell is not for this reading. Rows that differ only in the value
        share them (a file's runs repeat their settings: the synthetic million-row file has 67,000 distinct)."""
        try:
            values, keys = zip(*map(_LOOKUP, self.caches, self.cells(row)))
        except KeyError:
            pairs = self._fill(row)
            if pairs is None:
                return None
            values, keys = zip(*pairs)
        stored = self.pick(values + _AT_VALUE + self.consts)
        key_head, mark, key_tail = (KEY_TEMPLATE % self.key_pick(keys + (_VALUE_MARK,) + self.const_keys)
                                    ).partition(_VALUE_MARK)
        if not mark or _VALUE_MARK in key_tail:
            return None
        return stored[:_V_VALUE], stored[_V_VALUE + len(_AT_VALUE):], key_head, key_tail, values[self.unit_at]

    def _fill(self, row: list[str]) -> list[Pair] | None:
        """The cells of a row with some not in the caches, converted (and remembered); None if one of them is
        not for this reading."""
        pairs = []
        for i, cache, read in self.cached:
            cell = row[i]
            p = cache.get(cell)
            if p is None:
                try:
                    p = read(cell)
                except (ValueError, IOAdvisorError, _NotHere):
                    return None
                if len(cell) <= CACHE_CELL_CHARS:
                    if len(cache) >= CACHE_CELLS:
                        cache.clear()
                    cache[cell] = p
            pairs.append(p)
        return pairs

    def _spread(self, row: list[str], given: float, value: float, factor: float,
                ceiling: float) -> tuple | None:
        """value_min ... ci95_high as make_run scales them and check_run accepts them; None to leave the row
        to the importer."""
        scale = value / given if given else factor
        out = []
        for i in self.spread:
            v = None
            if i >= 0 and row[i]:
                try:
                    v = _float(row[i], "spread")
                except ValueError:
                    return None
                if v is not None:
                    if not (math.isfinite(v) and v >= 0):
                        return None
                    v *= scale
                    if not v <= ceiling:
                        return None
            out.append(v)
        vmin, vmax, _sd, low, high = out
        tol = 1e-9 * value
        if ((vmin is not None and vmin > value + tol) or (vmax is not None and vmax < value - tol)
                or (low is not None and high is not None and low > high)):
            return None
        return tuple(out)


_NO_SPREAD = (None,) * len(_SPREAD)
_CELLS_SEP = "\x00"
_LOOKUP = dict.__getitem__
# the stored values a row's value sets: `value`, then the unit, the value and unit as given and the spread (EXTRA
# in RowReader), in this order in VALUES; placeholders while a row's other values are picked
_V_VALUE = VALUES.index("value")
assert VALUES[_V_VALUE:_V_VALUE + 4 + len(_SPREAD)] == ("value", "unit", "value_given", "unit_given") + _SPREAD
_AT_VALUE = (None,) * (4 + len(_SPREAD))
# where the value's text goes in the content key: every other text there is JSON or a number, never a NUL
_VALUE_MARK = "\x00"


# ---- reading in a second process ------------------------------------------------------------------------------
ASIDE_BYTES = 8 << 20     # files from this size are read by a second process while the first stores

def can_read_aside() -> bool:
    """Whether a second process can read while this one stores (a fork start and a second CPU this process
    may run on: a batch job's CPU set, not the machine's)."""
    import multiprocessing as mp
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return "fork" in mp.get_all_start_methods() and cpus > 1


def read_aside(f: BinaryIO, ctx: ImportContext, prepare: Callable[[Iterator[tuple[str, tuple]]], Iterator[Any]],
               size: int = 0, progress: Callable[[int, int], None] | None = None) -> Iterator[Any]:
    """`prepare(importers.csv.stream(f, ctx, RowReader))` (the KB's batches of a canonical CSV) made by a child
    process while the caller stores those already received: the two halves of an import of a large file on two
    CPUs. The child reads `f` (inherited, not reopened: the bytes the caller hashed) and sends each batch
    through a pipe, which holds little, so memory stays bounded on both sides; its error comes back as the same
    ImportFormatError, naming the file and line, raised here (inside the caller's transaction). If the caller
    stops early or fails, the child is stopped."""
    import multiprocessing as mp
    mpctx = mp.get_context("fork")
    receive, send = mpctx.Pipe(duplex=False)
    child = mpctx.Process(target=_read_into, args=(f, ctx, prepare, send), daemon=True,
                          name="ioadvise-import-reader")
    child.start()
    send.close()
    done = False
    try:
        while True:
            try:
                kind, *payload = _loads(receive.recv_bytes())
            except EOFError:
                child.join()
                raise IOAdvisorError(f"{ctx.source}: the process reading the file stopped "
                                     f"(exit code {child.exitcode})") from None
            if kind == "batch":
                batch, where = payload
                yield batch
                if progress is not None:
                    progress(where, size)
            elif kind == "end":
                done = True
                if progress is not None:
                    progress(size, size)
                return
            elif kind == "format":
                raise ImportFormatError(*payload)
            else:
                raise IOAdvisorError(f"{ctx.source}: reading the file failed: {payload[0]}")
    finally:
        receive.close()
        if not done and child.is_alive():
            # SIGKILL, not SIGTERM: a handler for SIGTERM inherited through the fork (an MPI library loaded in this
            # process installs one) kept the child alive, blocked in a pipe write, and the join below waited for good
            child.kill()
        child.join()


def _read_into(f: BinaryIO, ctx: ImportContext, prepare: Callable, send: Any) -> None:
    """The child of read_aside: batches to the pipe, then ("end",) or the error."""
    import gc
    import signal
    from ..importers.csv import stream
    from ..util import GC_THRESHOLD, die_with_parent
    # the child holds both ends of the pipe (forked after it was made): were the importing process killed,
    # a full pipe would block this one in a write for good
    die_with_parent()
    # Ctrl-C reaches the whole process group: the importing process rolls back and stops this one
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.set_threshold(*GC_THRESHOLD)
    try:
        for batch in prepare(stream(f, ctx, RowReader)):
            send.send_bytes(_dumps(("batch", batch, f.tell())))
        send.send_bytes(_dumps(("end",)))
    except ImportFormatError as e:
        send.send_bytes(_dumps(("format", e.reason, e.path, e.line)))
    except BrokenPipeError:
        pass                                # the importing process stopped: nothing to tell
    except Exception as e:                  # a fault, not bad input: said as such by the importing process
        send.send_bytes(_dumps(("fault", f"{type(e).__name__}: {e}")))
    finally:
        send.close()


def _dumps(message: tuple) -> bytes:
    """A message of the child as bytes: by marshal, which writes and reads tuples of str, int, float and None
    in about half pickle's time (a batch of 5,000 rows; the storing process reads a million rows so); by
    pickle where marshal cannot (a subclass of str, say)."""
    try:
        return b"m" + marshal.dumps(message)
    except ValueError:
        return b"p" + pickle.dumps(message, pickle.HIGHEST_PROTOCOL)


def _loads(data: bytes) -> tuple:
    return marshal.loads(memoryview(data)[1:]) if data[:1] == b"m" else pickle.loads(memoryview(data)[1:])
