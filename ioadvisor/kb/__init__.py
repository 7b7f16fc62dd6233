"""Knowledge base: sqlite store, migrations, reference data."""
from .store import KB, ImportResult, RunFilter, default_kb_path

__all__ = ["KB", "ImportResult", "RunFilter", "default_kb_path"]
