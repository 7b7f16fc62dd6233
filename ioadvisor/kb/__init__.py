"""Knowledge base: sqlite store, migrations, reference data, and the reads and writes the layers above ask of it
(queries, fits: the stored fits and the runs they rest on, archive: a center's scanned logs, guide: what the
guide shows). No SQL is written outside this package (tests/test_kb_queries.py).

The store (and sqlite3 with it) is imported on first use of its names, not with the package: `ioadvise diagnose`
reads only reference data (`kb.reference`) unless a rule needs measured runs."""
from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .store import KB, ImportResult, RunFilter, default_kb_path

__all__ = ["KB", "ImportResult", "RunFilter", "default_kb_path"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import store
        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
