"""The data files the package ships: centers, thresholds, reference measurements (the source tree's data/,
installed as ioadvisor/_data by setup.py)."""
from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """`IOADVISE_DATA`, else the data shipped in the package, else the source tree's data/."""
    env = os.environ.get("IOADVISE_DATA")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent
    for cand in (here / "_data", here.parent / "data"):
        if cand.is_dir():
            return cand
    return here.parent / "data"
