"""Sizes and units: parsing `4MiB`, `1.5GB`, `16m`; normalising bandwidths and rates."""
from __future__ import annotations

import re

from ..errors import UsageError

_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")

# Binary multiples for the one-letter forms (k, m, g, as IOR, fio and lfs use them), decimal for kB/MB/GB.
_SIZE_MULT = {
    "": 1, "b": 1,
    "k": 1 << 10, "kib": 1 << 10, "ki": 1 << 10,
    "m": 1 << 20, "mib": 1 << 20, "mi": 1 << 20,
    "g": 1 << 30, "gib": 1 << 30, "gi": 1 << 30,
    "t": 1 << 40, "tib": 1 << 40, "ti": 1 << 40,
    "p": 1 << 50, "pib": 1 << 50, "pi": 1 << 50,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
}


MAX_SIZE = (1 << 63) - 1   # what a 64-bit signed integer (and the KB) holds


def parse_size(text: str | int | float) -> int:
    """Bytes from `4MiB`, `2GiB`, `1.5GB`, `16m` (one letter = binary), `4096`.

    Raises UsageError naming the text when it is not a size.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text) if isinstance(text, float) else text
    else:
        m = _SIZE_RE.match(str(text))
        if not m or m.group(2).lower() not in _SIZE_MULT:
            raise UsageError(f"not a size: {str(text)[:60]!r} (use e.g. 4096, 4MiB, 2GiB, 1.5GB)")
        value = float(m.group(1)) * _SIZE_MULT[m.group(2).lower()]
    if value != value or value < 0:
        raise UsageError(f"size must not be negative: {text}")
    if value > MAX_SIZE:
        raise UsageError(f"size {str(text)[:60]} is too large (at most 8 EiB)")
    return int(round(value))


def format_size(n: int | float | None) -> str:
    """Human-readable binary size: 4194304 -> '4MiB'; exact where possible."""
    if n is None:
        return "-"
    n = int(n)
    for unit, mult in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            q = n / mult
            return f"{q:g}{unit}" if q == int(q) or q >= 100 else f"{q:.3g}{unit}"
    return f"{n}B"


BANDWIDTH_UNIT = "MiB/s"
RATE_UNIT = "ops/s"

# factor to MiB/s, or to ops/s
_UNITS: dict[str, tuple[str, float]] = {
    "b/s": (BANDWIDTH_UNIT, 1 / (1 << 20)),
    "kib/s": (BANDWIDTH_UNIT, 1 / 1024),
    "kb/s": (BANDWIDTH_UNIT, 1e3 / (1 << 20)),
    "mib/s": (BANDWIDTH_UNIT, 1.0),
    "mb/s": (BANDWIDTH_UNIT, 1e6 / (1 << 20)),
    "gib/s": (BANDWIDTH_UNIT, 1024.0),
    "gb/s": (BANDWIDTH_UNIT, 1e9 / (1 << 20)),
    "tib/s": (BANDWIDTH_UNIT, 1024.0 * 1024),
    "tb/s": (BANDWIDTH_UNIT, 1e12 / (1 << 20)),
    "iops": (RATE_UNIT, 1.0),
    "ops/s": (RATE_UNIT, 1.0),
    "op/s": (RATE_UNIT, 1.0),
    "kiops": (RATE_UNIT, 1e3),
}

CANONICAL_UNITS = ("MiB/s", "MB/s", "GiB/s", "GB/s", "KiB/s", "KB/s", "IOPS", "ops/s")


def normalize(value: float, unit: str) -> tuple[float, str]:
    """(value, unit) in the KB's units: bandwidth in MiB/s, rates in ops/s."""
    key = unit.strip().lower().replace(" ", "")
    if key not in _UNITS:
        raise UsageError(f"unknown unit {unit!r} (use one of {', '.join(CANONICAL_UNITS)})")
    norm_unit, factor = _UNITS[key]
    return value * factor, norm_unit


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """Convert between two units of the same kind (bandwidth or rate)."""
    v, u = normalize(value, from_unit)
    one, u2 = normalize(1.0, to_unit)
    if u != u2:
        raise UsageError(f"cannot convert {from_unit} to {to_unit}")
    return v / one


def _display(v: float, unit: str) -> tuple[float, str]:
    """Divisor and unit a figure of this size is printed in: GiB/s from 10 GiB/s up, else the unit itself."""
    return (1024.0, "GiB/s") if unit == BANDWIDTH_UNIT and v >= 10240 else (1.0, unit)


def _number(v: float, divisor: float) -> str:
    return f"{v / divisor:,.1f}" if divisor != 1 else f"{v:,.0f}"


def format_rate(v: float | None, unit: str) -> str:
    """A bandwidth or rate for people: '5,960 MiB/s', '14.7 GiB/s', 'unknown'."""
    if v is None:
        return "unknown"
    d, u = _display(v, unit)
    return f"{_number(v, d)} {u}"


def format_range(low: float, high: float, unit: str) -> str:
    """A range in one unit, both ends in it (the one its upper end is printed in): '2.3-14.7 GiB/s', never
    '2,375 MiB/s-14.7 GiB/s'."""
    d, u = _display(max(low, high), unit)
    return f"{_number(low, d)}-{_number(high, d)} {u}"


def format_estimate(value: float, low: float, high: float, unit: str) -> str:
    """A value with its interval, all three in one unit: '5,960 (4,289-8,281) MiB/s'."""
    d, u = _display(max(value, low, high), unit)
    return f"{_number(value, d)} ({_number(low, d)}-{_number(high, d)}) {u}"
