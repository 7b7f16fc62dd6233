"""What the diagnosis rules know from the KB, read for them: the rules (rules.py) get it in their `Context` and
never open the KB themselves."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:                     # the KB's modules load only when a rule asks a question (most logs ask none)
    from ..kb.store import KB
    from ..model.run import Run


class KBFile:
    """The KB at `path` (None: the default KB) as the rules ask of it (rules.KBFacts). It is opened for each
    question, since most logs ask none, and never created: a KB that does not exist is the reference data alone.
    A KB that cannot be opened answers nothing, as if nothing had been measured."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = str(path) if path else None

    def _open(self) -> KB | None:
        from ..kb.store import KB
        try:
            return KB.open(self.path, create=False)
        except Exception:
            return None

    def write_runs(self, system: str) -> list[Run]:
        kb = self._open()
        if kb is None:
            return []
        try:
            from ..kb.store import RunFilter
            return [r for r in kb.runs(RunFilter(op="write")) if (r.system or "").lower() == system.lower()]
        finally:
            kb.close()

    def comparisons(self, system: str) -> list[dict[str, Any]]:
        kb = self._open()
        if kb is None:
            return []
        try:
            return kb.comparisons(system)
        except Exception:
            return []
        finally:
            kb.close()
