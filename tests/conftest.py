"""Shared fixtures. Fixtures are named for the state they give."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A suite started in the background by a non-interactive shell (`.ci/run &`, a CI runner) inherits SIGINT ignored,
# under nohup SIGHUP too, and so would every command it starts (an ignored signal stays ignored across exec, and a
# command rightly leaves an ignored signal alone): the tests that interrupt a command need the signal delivered, as
# a terminal delivers it. A suite whose signals are not ignored is left as it is.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
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


@pytest.fixture
def aside(monkeypatch):
    """Every CSV import reads in a second process, as files from ASIDE_BYTES do; the list it gives grows by one
    for each import read so."""
    from ioadvisor.ingest import csvrows
    if not csvrows.can_read_aside():
        pytest.skip("no fork start method or a single CPU: imports read in one process")
    monkeypatch.setattr(csvrows, "ASIDE_BYTES", 0)
    calls = []
    real = csvrows.read_aside
    monkeypatch.setattr(csvrows, "read_aside", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls
