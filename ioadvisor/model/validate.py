"""The one gate every run passes before it enters the knowledge base (pure, no I/O).

`check_run(run)` raises UsageError with the reason when a value is not finite, out of range, outside the known
vocabulary, inconsistent (value_min > value), or a name holds control characters. Importers call it through
`make_run` (so their error names the line); `KB.add_runs` calls it again for every run, whatever read it.

The bounds are sanity limits, not measurements: they keep values that no real system produces (and that
break arithmetic, JSON and SQLite's 64-bit integers) out of the KB.
"""
from __future__ import annotations

import math
from operator import attrgetter

from ..errors import UsageError
from ..frozen import from_dict
from ..util import BIDI_CONTROLS, LazyPattern
from .run import APIS, KINDS, LAYOUTS, OPS, Run, norm_api, norm_layout
from .units import normalize

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

#: normalised value ceilings: 1e10 MiB/s is about 10 EiB/s, 1e12 ops/s far beyond any metadata server
MAX_VALUE = {"MiB/s": 1e10, "ops/s": 1e12}
#: the smallest non-zero values: one byte per second, one operation per hour. Below them a value is no
#: measurement, and its logarithm (the model fits in log space) is far enough from any real run's to make the
#: model's intervals overflow
MIN_VALUE = {"MiB/s": 2.0 ** -20, "ops/s": 1 / 3600}
#: SQLite stores integers in 64 bits
INT64 = (1 << 63) - 1
#: (min, max) of the integer settings; sizes in bytes may go up to what SQLite stores
INT_RANGES: dict[str, tuple[int, int]] = {
    "ost_count": (0, 1_000_000), "nodes": (0, 10_000_000), "ranks": (0, 1_000_000_000),
    "ranks_per_node": (0, 1_000_000), "segments": (0, INT64), "files_per_dir": (0, INT64),
    "items_per_rank": (0, INT64), "reps": (0, 1_000_000),
    # -1 is Lustre's "all OSTs"; Lustre allows at most 2000 stripes (LOV_MAX_STRIPE_COUNT), with overstriping
    # more, so the bound is the overstriped ceiling of 32 per OST times 2000
    "stripe_count": (-1, 64_000),
    "stripe_size": (0, INT64), "transfer_size": (0, INT64), "block_size": (0, INT64), "file_size": (0, INT64),
    "total_bytes": (0, INT64),
}
_SPREAD = ("value_min", "value_max", "value_sd", "ci95_low", "ci95_high")
ACCESS = ("sequential", "random")
UNITS = ("MiB/s", "ops/s")
#: names (system, file system, tier, ...) may hold any printable text but no control characters, bidirectional
#: ones included (a name holding U+202E shows reversed, as another name)
_CONTROL = LazyPattern(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI_CONTROLS}]")
#: free text (notes, command, citation) may hold tabs and newlines, no other control characters
_CONTROL_TEXT = LazyPattern(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_HINT_KEY = LazyPattern(r"^[A-Za-z0-9_.\-]{1,128}$")
MAX_NAME = 256
MAX_TEXT = 64 << 10
_NAMES = ("system", "filesystem", "fs_type", "tier")
_PROV_NAMES = ("tool", "tool_version", "importer", "date", "job_id")
_PROV_TEXT = ("source", "citation", "command")
# check_run reads each group of attributes in one call (a million runs are checked per large import)
_INT_BOUNDS = tuple((f, lo, hi) for f, (lo, hi) in INT_RANGES.items())
_GET_INTS = attrgetter(*INT_RANGES)
_GET_SPREAD = attrgetter(*_SPREAD)
_NO_SPREAD = (None,) * len(_SPREAD)
_GET_NAMES = attrgetter(*_NAMES[1:])
_GET_PROV_NAMES = attrgetter(*_PROV_NAMES)
_GET_PROV_TEXT = attrgetter(*_PROV_TEXT)


#: names found valid (non-blank, at most MAX_NAME characters): the same few system, file system and tool names
#: come back in every run of an import, and are checked once
_VALID_NAMES: set[str] = set()
#: the same for free text (notes, source, citation), which may also hold tabs and newlines
_VALID_TEXTS: set[str] = set()


def _name(value: Any, what: str, *, required: bool = False, limit: int = MAX_NAME) -> None:
    if type(value) is str and value in _VALID_NAMES and limit >= MAX_NAME:
        return
    if value is None:
        if required:
            raise UsageError(f"{what} is missing")
        return
    if not isinstance(value, str):
        raise UsageError(f"{what} must be text, got {type(value).__name__}")
    if required and not value.strip():
        raise UsageError(f"{what} is empty")
    if len(value) > limit:
        raise UsageError(f"{what} is {len(value)} characters long (at most {limit})")
    if _CONTROL.search(value):
        raise UsageError(f"{what} contains a control character (newline, tab, NUL, escape, a bidirectional "
                         f"override ...): {value[:40]!r}")
    if type(value) is str and len(value) <= MAX_NAME and value.strip():
        if len(_VALID_NAMES) >= 4096:
            _VALID_NAMES.clear()
        _VALID_NAMES.add(value)


def _text(value: Any, what: str) -> None:
    if type(value) is str and value in _VALID_TEXTS:
        return
    if value is None:
        return
    if not isinstance(value, str):
        raise UsageError(f"{what} must be text, got {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise UsageError(f"{what} is {len(value)} characters long (at most {MAX_TEXT})")
    if _CONTROL_TEXT.search(value):
        raise UsageError(f"{what} contains a control character: {value[:40]!r}")
    if type(value) is str and len(value) <= MAX_NAME:
        if len(_VALID_TEXTS) >= 4096:
            _VALID_TEXTS.clear()
        _VALID_TEXTS.add(value)


def _finite(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise UsageError(f"{what} must be a finite number, got {value}")
    return float(value)


def check_int(value: Any, what: str) -> None:
    """An integer setting within INT_RANGES[what] (None passes)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{what} must be a whole number, got {value!r}")
    lo, hi = INT_RANGES[what]
    if not lo <= value <= hi:
        raise UsageError(f"{what} must be between {lo} and {hi}, got {value}")


_DATE = LazyPattern(r"^(\d{4})(?:-(\d{2})(?:-(\d{2})(T.*)?)?)?$")
#: dates found valid (few distinct ones come back in every run of an import)
_VALID_DATES: set[str] = set()


def check_date(value: str) -> None:
    """An ISO date of a measurement or publication: a year, a year and month, a day, or a day and time, each a
    real one of the calendar (UsageError otherwise)."""
    if value in _VALID_DATES:
        return
    import datetime as dt
    m = _DATE.match(value)
    ok = m is not None and 1900 <= int(m.group(1)) <= 2999
    if ok:
        try:
            if m.group(4):
                dt.datetime.fromisoformat(value)
            else:
                dt.date(int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1))
        except ValueError:
            ok = False
    if not ok:
        raise UsageError(f"date {value[:40]!r} is not a date of the calendar (YYYY-MM-DD, from 1900)")
    if len(_VALID_DATES) >= 4096:
        _VALID_DATES.clear()
    _VALID_DATES.add(value)


def _check_choices(run: Run) -> None:
    """The fields that take one of a few known words, and the two booleans."""
    if run.op not in OPS:
        raise UsageError(f"unknown op {run.op!r} (known: {', '.join(OPS)})")
    if run.api is not None and run.api not in APIS:
        raise UsageError(f"unknown api {run.api!r} (known: {', '.join(APIS)})")
    if run.layout is not None and run.layout not in LAYOUTS:
        raise UsageError(f"unknown layout {run.layout!r} (use shared or fpp)")
    if run.access is not None and run.access not in ACCESS:
        raise UsageError(f"unknown access {run.access!r} (use sequential or random)")
    if run.unit not in UNITS:
        raise UsageError(f"unknown unit {run.unit!r}")
    kind = run.provenance.kind
    if kind not in KINDS:
        raise UsageError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    for flag in ("collective", "direct"):
        v = getattr(run, flag)
        if v is not None and not isinstance(v, bool):
            raise UsageError(f"{flag} must be true or false, got {v!r}")


def _check_value(run: Run) -> float:
    """The value as a number a real system can measure in its unit."""
    value = _finite(run.value, "value")
    if value is None or value < 0:
        raise UsageError(f"value must be a non-negative number, got {run.value}")
    ceiling = MAX_VALUE[run.unit]
    if value > ceiling:
        raise UsageError(f"value {value:g} {run.unit} is beyond any real system (at most {ceiling:g} {run.unit})")
    if 0 < value < MIN_VALUE[run.unit]:
        raise UsageError(f"value {value:g} {run.unit} is below any real measurement (0, or at least "
                         f"{MIN_VALUE[run.unit]:.3g} {run.unit})")
    if run.value_given is not None:
        _finite(run.value_given, "value")
    return value


def _check_spread(run: Run, value: float) -> None:
    """Min, max, standard deviation and confidence interval: in range and on the right side of the value."""
    ceiling = MAX_VALUE[run.unit]
    given = _GET_SPREAD(run)
    spread = (dict.fromkeys(_SPREAD) if given == _NO_SPREAD
              else {k: _finite(v, k) for k, v in zip(_SPREAD, given)})
    for k, v in spread.items():
        if v is not None and (v < 0 or v > ceiling):
            raise UsageError(f"{k} must be between 0 and {ceiling:g} {run.unit}, got {v:g}")
    # a relative tolerance: min/max given in another unit were scaled by the same float factor as the value
    tol = 1e-9 * value
    if spread["value_min"] is not None and spread["value_min"] > value + tol:
        raise UsageError(f"value_min {spread['value_min']:g} is above the value {value:g}")
    if spread["value_max"] is not None and spread["value_max"] < value - tol:
        raise UsageError(f"value_max {spread['value_max']:g} is below the value {value:g}")
    if (spread["ci95_low"] is not None and spread["ci95_high"] is not None
            and spread["ci95_low"] > spread["ci95_high"]):
        raise UsageError(f"ci95_low {spread['ci95_low']:g} is above ci95_high {spread['ci95_high']:g}")


def _check_texts(run: Run) -> None:
    """The names, notes, hints and provenance strings."""
    _name(run.system, "system", required=True)
    for f, v in zip(_NAMES[1:], _GET_NAMES(run)):
        if v is not None:
            _name(v, f)
    _text(run.notes, "notes")
    if not isinstance(run.hints, dict):
        raise UsageError(f"hints must be KEY=VALUE pairs, got {type(run.hints).__name__}")
    for k, v in run.hints.items():
        if not isinstance(k, str) or not _HINT_KEY.match(k):
            raise UsageError(f"hint name {k!r} is not a name (letters, digits, _ . -)")
        _name(v, f"hint {k}", limit=1024)
    p = run.provenance
    for f, v in zip(_PROV_NAMES, _GET_PROV_NAMES(p)):
        if v is not None:
            _name(v, f)
    if p.date is not None:
        check_date(p.date)
    for f, v in zip(_PROV_TEXT, _GET_PROV_TEXT(p)):
        if v is not None:
            _text(v, f)


def check_run(run: Run) -> Run:
    """`run` itself if every value may enter the KB; UsageError naming the first one that may not."""
    _check_choices(run)
    _check_spread(run, _check_value(run))
    for (f, lo, hi), v in zip(_INT_BOUNDS, _GET_INTS(run)):
        # the usual case (nothing, or a plain int in range) decided here; check_int says what is wrong
        if v is not None and (type(v) is not int or not lo <= v <= hi):
            check_int(v, f)
    _check_texts(run)
    # a frozen instance cannot change afterwards, so it need not be checked twice (frozen.replace makes
    # a new, unmarked one)
    object.__setattr__(run, _MARK, True)
    return run


_MARK = "_ioadvise_checked"


def checked(run: Run) -> Run:
    """`run` once it has passed check_run (at most one check per instance)."""
    return run if run.__dict__.get(_MARK) else check_run(run)


def make_run(*, value: float, unit: str, spread: Mapping[str, float | None] | None = None, **kw: Any) -> Run:
    """Build a Run from a value in any supported unit; normalises value and spread together.

    Raises UsageError for an unknown unit or a negative value.
    """
    if value is None:
        raise UsageError("missing value")
    value = _number(value, "value")
    if value < 0:
        raise UsageError(f"value must be a non-negative number, got {value:g}")
    if not isinstance(unit, str):
        raise UsageError(f"unit must be text, got {unit!r}")
    norm, norm_unit = normalize(value, unit)
    factor = norm / value if value else normalize(1.0, unit)[0]
    extra = {}
    for key, v in (spread or {}).items():
        if v is None:
            continue
        v = _number(v, key)
        if v < 0:
            raise UsageError(f"{key} must not be negative, got {v:g}")
        extra[key] = v * factor
    kw.setdefault("api", None)
    for name in ("api", "layout"):
        if kw.get(name) is not None and not isinstance(kw[name], str):
            raise UsageError(f"{name} must be text, got {kw[name]!r}")
    kw["api"] = norm_api(kw["api"])
    if kw.get("layout") is not None:
        kw["layout"] = norm_layout(kw["layout"])
    kw.update(extra, value=norm, unit=norm_unit, value_given=value, unit_given=unit.strip())
    return check_run(from_dict(Run, kw))


def _number(v: Any, what: str) -> float:
    """A finite float from a number; UsageError for text, booleans, NaN and infinities."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise UsageError(f"{what} must be a number, got {v!r}")
    try:
        f = float(v)
    except OverflowError:
        raise UsageError(f"{what} is too large: {v}") from None
    if not math.isfinite(f):
        raise UsageError(f"{what} must be a finite number, got {v}")
    return f
