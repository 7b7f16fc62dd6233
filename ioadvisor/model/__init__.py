"""Domain types and pure helpers (no I/O).

The names below are loaded on first use: importing one submodule (`ioadvisor.model.run` for the KB) does not
build the records of the others, which a command's start-up would pay for.
"""
from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WHERE = {
    **dict.fromkeys(("Provenance", "Run", "norm_api", "norm_layout"), "run"),
    "make_run": "validate",
    **dict.fromkeys(("Advice", "Center", "Config", "Evidence", "FileSystem", "Finding", "Option", "Prediction",
                     "Tier", "Workload"), "types"),
    **dict.fromkeys(("format_size", "normalize", "parse_size"), "units"),
}

__all__ = sorted(_WHERE, key=str.lower)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
