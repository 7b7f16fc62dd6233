"""The one-log reading child imports PyDarshan's backend with its C declarations from a cache file of cffi's tables
(ioadvisor.darshanlog.ffi_cache) instead of parsing them. What must not happen: a log read differently through the
cached declarations than through PyDarshan's own parse, the parser still imported once the cache is there, or a
cache file that is code being run."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")

from ioadvisor.darshanlog.derive import import_backend, read_checked  # noqa: E402

LOGDIR = Path(darshan.__file__).parent / "examples" / "example_logs"
LOGS = ["sample-badost.darshan", "dxt.darshan", "noposix.darshan", "example.darshan"]

# in a fresh process: import the backend as the reading child does, read the logs, answer with the pickled
# summaries and whether pycparser (the C parser cffi's cdef needs) was imported
_CHILD = r"""
import os, pickle, sys, tempfile
from ioadvisor.darshanlog.derive import import_backend, read_checked
backend = import_backend(without_numpy=True)
err = tempfile.TemporaryFile()
saved = os.dup(2); os.dup2(err.fileno(), 2)
out = [read_checked(p, backend, err) for p in sys.argv[1:]]
os.dup2(saved, 2)
sys.stdout.buffer.write(pickle.dumps(("pycparser" in sys.modules, type(backend.ffi).__module__, out)))
"""


def _child_read(cache: Path, logs: list[str]) -> tuple[bool, str, list]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    p = subprocess.run([sys.executable, "-c", _CHILD, *logs], env=env, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()
    return pickle.loads(p.stdout)


def _own_read(logs: list[str]) -> list:
    """The summaries read in this process, through PyDarshan's backend as it parses its declarations itself."""
    backend = import_backend()
    assert type(backend.ffi).__module__ == "cffi.api"
    err = tempfile.TemporaryFile()
    saved = os.dup(2)
    os.dup2(err.fileno(), 2)
    try:
        return [read_checked(p, backend, err) for p in logs]
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def test_the_cached_declarations_read_every_log_as_the_parsed_ones(tmp_path):
    logs = [str(LOGDIR / n) for n in LOGS]
    theirs = _own_read(logs)
    parsed, kind, first = _child_read(tmp_path, logs)          # no cache yet: one parse, and the cache written
    assert parsed and kind == "cffi.api"
    (cached_file,) = (tmp_path / "ioadvisor").glob("darshan-ffi-*.py")
    parsed, kind, second = _child_read(tmp_path, logs)         # from the cache: no parser at all
    assert not parsed and kind == "_cffi_backend"
    # every value equal to this process's read, and the second child's to the first's (by value: which equal
    # objects a pickle writes once as shared is the allocator's business, not the reader's)
    assert first == theirs
    assert second == first
    assert list((tmp_path / "ioadvisor").iterdir()) == [cached_file]     # no temporary file left


def test_a_cache_file_holding_code_is_not_run_and_is_replaced(tmp_path):
    logs = [str(LOGDIR / "example.darshan")]
    _child_read(tmp_path, logs)
    (cached,) = (tmp_path / "ioadvisor").glob("darshan-ffi-*.py")
    marker = tmp_path / "ran"
    cached.write_text(f"ffi = __import__('pathlib').Path({str(marker)!r}).touch()\n")
    parsed, _, got = _child_read(tmp_path, logs)
    assert not marker.exists()
    assert parsed                                    # the declarations were parsed again ...
    assert got == _own_read(logs)
    assert "_cffi_backend.FFI(" in cached.read_text()    # ... and the cache written anew
    parsed, _, _ = _child_read(tmp_path, logs)
    assert not parsed


def test_a_cache_directory_that_cannot_be_written_only_costs_the_parse(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory would be\n")
    logs = [str(LOGDIR / "example.darshan")]
    parsed, _, got = _child_read(blocker, logs)
    assert parsed and got == _own_read(logs)


def test_a_relative_cache_home_does_not_put_the_cache_where_the_command_runs(tmp_path, monkeypatch):
    from ioadvisor.util import cache_dir          # the one the reader's declarations cache is kept in
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", "cache")
    assert cache_dir() == tmp_path / "home" / ".cache" / "ioadvisor"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "ioadvisor"
