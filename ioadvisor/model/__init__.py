"""Domain types and pure helpers (no I/O)."""
from .run import Provenance, Run, make_run, norm_api, norm_layout
from .types import Advice, Center, Config, Evidence, FileSystem, Finding, Option, Prediction, Tier, Workload
from .units import format_size, normalize, parse_size

__all__ = [
    "Advice", "Center", "Config", "Evidence", "FileSystem", "Finding", "Option", "Prediction", "Provenance",
    "Run", "Tier", "Workload", "format_size", "make_run", "norm_api", "norm_layout", "normalize", "parse_size",
]
