"""Whatever $COLUMNS says, output is laid out for a width it can be: `0` printed nothing at all with exit 0
(advise, kb stats, diagnose, systems), 100,000,000 drew `kb list --help` for 52 s in 2 GB before a MemoryError,
and 10^20 raised an OverflowError. A value that is not a whole number above 0 is dropped (the terminal's own
width is used), a number is held to 20..1000 columns on a terminal and to PIPE_WIDTH into a pipe or a file."""
from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from tests.terminal import read_terminal
from ioadvisor.cli.common import MAX_WIDTH, MIN_WIDTH, PIPE_WIDTH, sane_width

runner = CliRunner()
EXE = Path(sys.executable).parent / "ioadvise"
DARSHAN = Path(__import__("darshan").__file__).parent / "examples" / "example_logs" / "example.darshan"
COMMANDS = {
    "advise": ["advise", "--system", "HA8000", "--op", "write", "--bytes-per-rank", "4GiB", "-N", "8", "-n", "128"],
    "kb stats": ["kb", "stats"],
    "diagnose": ["diagnose", str(DARSHAN)],
    "systems": ["systems"],
    "kb list --help": ["kb", "list", "--help"],
}
HOSTILE = ("0", "100000000", "1e20", "100000000000000000000", "-5", "wide")


@pytest.mark.parametrize("value, terminal, kept", [
    ("0", True, None), ("-5", True, None), ("1e20", True, None), ("wide", True, None), ("\u00b2", True, None),
    ("", True, None), ("5", True, str(MIN_WIDTH)), (" 80 ", True, "80"), ("80", False, "80"),
    ("100000000", True, str(MAX_WIDTH)), ("100000000", False, str(PIPE_WIDTH)),
    ("100000000000000000000", True, str(MAX_WIDTH)), ("4000", False, "4000"), ("4000", True, str(MAX_WIDTH)),
])
def test_a_width_is_dropped_or_held_to_its_range(value, terminal, kept):
    for name in ("COLUMNS", "TERMINAL_WIDTH"):
        env = {name: value, "OTHER": "1"}
        sane_width(env, terminal=terminal)
        assert env.get(name) == kept and env["OTHER"] == "1"


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("columns", HOSTILE)
def test_every_command_prints_for_a_hostile_width(columns, command, kb_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setenv("IOADVISE_KB", str(kb_path))
    res = runner.invoke(app, COMMANDS[command])
    assert res.exit_code == 0 and res.exception is None, (res.output, res.exception)
    lines = res.stdout.splitlines()
    assert len([ln for ln in lines if ln.strip()]) >= 5, res.stdout       # the output, not an empty page
    assert max(map(len, lines)) <= PIPE_WIDTH


def test_a_sane_width_is_kept(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    res = runner.invoke(app, COMMANDS["kb list --help"])
    lines = res.stdout.splitlines()
    assert res.exit_code == 0 and max(map(len, lines)) == 100, res.stdout


def _on_a_terminal(args: list[str], columns: str) -> str:
    """ioadvise run with stdout on a pseudo-terminal; what it printed, escape sequences removed."""
    master, slave = pty.openpty()
    p = subprocess.Popen([str(EXE), *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL,
                         env={**os.environ, "COLUMNS": columns, "TERM": "xterm"})
    os.close(slave)
    out = read_terminal(master, p)
    p.wait(timeout=300)
    os.close(master)
    assert p.returncode == 0, out
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.decode(errors="replace"))


@pytest.mark.parametrize("columns", ["100000000", "0"])
def test_a_terminal_gets_at_most_its_largest_width(columns):
    text = _on_a_terminal(COMMANDS["kb list --help"], columns)
    lines = text.splitlines()
    assert len(lines) >= 5 and "Usage" in text, text
    assert max(map(len, lines)) <= MAX_WIDTH


@pytest.mark.parametrize("width", ["1e20", "100000000"])
def test_typers_own_width_variable_is_held_too(width):
    """typer reads $TERMINAL_WIDTH when it is first imported (int('1e20'): a ValueError before any help)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"TERMINAL_WIDTH": width}
    p = subprocess.run([str(EXE), *COMMANDS["kb list --help"]], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0 and "Traceback" not in p.stderr and "Usage" in p.stdout, p.stderr
    assert max(map(len, p.stdout.splitlines())) <= PIPE_WIDTH
