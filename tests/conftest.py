"""Shared fixtures. Fixtures are named for the state they give."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "data" / "samples"   # unedited copies of real IOR, mdtest and fio outputs


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own KB default and cache, never the user's."""
    home = tmp_path_factory.getbasetemp() / "home"
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.delenv("IOADVISE_KB", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    yield


@pytest.fixture
def kb_path(tmp_path) -> Path:
    return tmp_path / "kb.sqlite"


@pytest.fixture
def samples() -> Path:
    return SAMPLES
