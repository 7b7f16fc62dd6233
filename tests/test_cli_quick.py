"""`ioadvise advise ...` is read without typer where the command line is plain (cli/options.py): the values it
passes must be the very ones typer passes, and a command line it does not fully understand must reach typer, so
that help, usage errors and their exit codes stay typer's."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import advise
from ioadvisor.cli.options import Opt, parse

BASE = ["--system", "HA8000", "--nodes", "4", "--ranks-per-node", "8", "--bytes-per-rank", "1GiB"]

# command lines read without typer: every option of the command, in each spelling and form it takes
PLAIN = [
    [],
    BASE,
    BASE + ["--json"],
    ["-N", "2", "-n", "64", "--total-bytes", "64GiB", "--system", "x", "--api", "mpiio", "--layout", "shared"],
    ["--ntasks-per-node", "16", "--nodes=3", "--system=", "--op", "read", "--access-size", "4KiB", "--random"],
    ["--stripe-count", "-1", "--stripe-size", "4MiB", "--tier", "beeond", "--collective", "--hints", "a=b,c=d"],
    ["--stripe-count=08", "--independent", "--files", "100", "--lifetime", "job", "--mpi", "openmpi@4.1.4"],
    ["--center", "ha8000", "--kb", "/nonexistent/kb.sqlite", "--workload", "w.toml", "--script", "job.sh"],
    ["--system", "--json"],                    # an option's value is the next word, whatever it looks like
    ["--kb", "", "--system", "HA8000"],
]
# command lines left to typer: help and usage errors, which typer answers without running the command ...
ERRORS = [["--help"], ["-h"], ["--nodes", "x"], ["--nodes"], ["--frobnicate"], ["--nodes", "2", "--nodes", "x"],
          ["--json=1"], ["--random=yes"], ["--", "--json"], ["extra"], ["--collective", "--stripe-count"]]
# ... and forms typer takes that the quick reader leaves to it
OTHER_FORMS = [["-N4"], ["--nodes", "+4"], ["--nodes", "2", "--nodes", "3"], ["-N", "2", "--nodes", "3"],
               ["--nodes", "\u0663"], ["--collective", "--independent"], ["--nodes", " 4"]]


def _typer_params(args: list[str], monkeypatch) -> tuple[int, dict | None]:
    """(exit code, the parameters typer passes the command) for `ioadvise advise ARGS`."""
    from ioadvisor.cli import app
    seen: list[dict] = []
    monkeypatch.setattr(advise, "run", seen.append)
    r = CliRunner().invoke(app, ["advise", *args])
    return r.exit_code, (seen[0] if seen else None)


@pytest.fixture
def no_kb_env(monkeypatch):
    for k in [k for k in os.environ if k.endswith("_COMPLETE")] + ["IOADVISE_KB"]:
        monkeypatch.delenv(k, raising=False)


@pytest.mark.parametrize("args", PLAIN)
def test_a_plain_command_line_gives_typers_values(args, monkeypatch, no_kb_env):
    quick = advise.parse(args)
    code, typer_params = _typer_params(args, monkeypatch)
    assert code == 0 and quick is not None
    assert quick == typer_params and [type(v) for v in quick.values()] == [type(v) for v in typer_params.values()]


def test_the_plain_lines_give_every_option_a_value_of_its_own(monkeypatch, no_kb_env):
    """The cases above leave no option of the command untried."""
    given = {k for args in PLAIN for k, v in advise.parse(args).items() if v is not None and v is not False}
    assert given == {o.name for o in advise.OPTIONS}


@pytest.mark.parametrize("args", ERRORS + OTHER_FORMS)
def test_what_the_quick_reader_does_not_take_goes_to_typer(args, monkeypatch, no_kb_env):
    assert advise.parse(args) is None
    code, typer_params = _typer_params(args, monkeypatch)
    if args in ERRORS:
        assert typer_params is None and code == (0 if args[0] in ("-h", "--help") else 2)
    else:
        assert typer_params is not None and code == 0


def test_the_kb_from_the_environment_as_typer_reads_it(tmp_path, monkeypatch, no_kb_env):
    kb = tmp_path / "kb.sqlite"
    kb.write_bytes(b"")
    for value in (str(kb), str(tmp_path / "missing.sqlite"), ""):
        monkeypatch.setenv("IOADVISE_KB", value)
        quick = advise.parse(BASE)
        assert quick is not None and quick == _typer_params(BASE, monkeypatch)[1]
    assert advise.parse(BASE + ["--kb", "other.sqlite"])["kb"].name == "other.sqlite"


def test_a_path_that_cannot_be_read_and_a_completion_request_go_to_typer(tmp_path, monkeypatch, no_kb_env):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)       # as for a user the file's mode shuts out
    assert advise.parse(BASE + ["--script", str(script)]) is None
    code, params = _typer_params(BASE + ["--script", str(script)], monkeypatch)
    assert code == 2 and params is None
    monkeypatch.undo()
    assert advise.parse(BASE) is not None
    assert parse(BASE, advise.OPTIONS, {"_IOADVISE_COMPLETE": "bash_complete"}) is None


def test_a_flag_pair_and_a_default_as_declared():
    opts = (Opt("mode", ("--on/--off",), bool, ""), Opt("n", ("-k", "--count"), int, "", default=3))
    assert parse(["--off"], opts, {}) == {"mode": False, "n": 3}
    assert parse(["-k", "5", "--on"], opts, {}) == {"mode": True, "n": 5}
    assert parse(["--on", "--off"], opts, {}) is None


# the console script (which reads a plain `advise` line itself) against the CLI's main (typer every time), each
# writing the modules it loaded after its output
PROBE = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + json.dumps("typer" in sys.modules) + "\\n"))
sys.argv = ["ioadvise", *sys.argv[2:]]
if {quick}:
    from ioadvisor.console import main
else:
    from ioadvisor.cli import main
main()
"""


def _run(quick: bool, args: list[str], env: dict) -> tuple[int, str, str, bool]:
    p = subprocess.run([sys.executable, "-c", PROBE.format(quick=quick), "-", "advise", *args], capture_output=True,
                       text=True, env=env)
    err, _, typer_loaded = p.stderr.rpartition("\nMODULES ")
    return p.returncode, p.stdout, err, json.loads(typer_loaded)


@pytest.mark.parametrize("args, quick", [
    (BASE + ["--api", "mpiio", "--layout", "any", "--json"], True),
    (BASE + ["--api", "posix", "--layout", "fpp", "--op", "read"], True),
    (BASE + ["--op", "sideways"], True),                                 # the library's error, read quickly
    (["--system", "nosuch", "--nodes", "1", "--ranks-per-node", "1", "--bytes-per-rank", "1GiB"], True),
    (BASE + ["--nodes", "x"], False),                                    # a usage error: typer's words
    (BASE + ["--frobnicate"], False),
    (["--help"], False),
])
def test_the_console_script_answers_as_typer_does(args, quick, tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "COLUMNS": "100",
           "XDG_DATA_HOME": str(home / "share"), "IOADVISE_KB": "", "IOADVISE_CENTER_KB": ""}
    typer_side = _run(False, args, env)
    quick_side = _run(True, args, env)
    assert quick_side[:3] == typer_side[:3]
    assert typer_side[3] and quick_side[3] == (not quick)
    if args == BASE + ["--api", "mpiio", "--layout", "any", "--json"]:
        assert json.loads(quick_side[1])["system"] == "HA8000" and quick_side[0] == 0


# the modules a plain `advise --json` has no use for: dataclasses imports inspect, which imports ast, dis and
# tokenize (a tenth of a cold advice's start-up); rich (text output) and typer import them, --json uses neither
NOT_FOR_JSON = ("dataclasses", "inspect", "ast", "dis", "tokenize", "typer", "rich")
MODULES_PROBE = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["ioadvise", *sys.argv[2:]]
from ioadvisor.console import main
main()
"""


def test_a_plain_json_advice_imports_neither_dataclasses_nor_inspect(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "XDG_DATA_HOME": str(home / "share"),
           "IOADVISE_KB": "", "IOADVISE_CENTER_KB": ""}
    args = BASE + ["--api", "mpiio", "--layout", "any", "--json"]
    loaded = []
    for _ in range(2):      # the first fits the reference data (numpy and scipy import them) and caches the fits
        p = subprocess.run([sys.executable, "-c", MODULES_PROBE, "-", "advise", *args], capture_output=True,
                           text=True, env=env)
        err, _, modules = p.stderr.rpartition("\nMODULES ")
        assert p.returncode == 0 and json.loads(p.stdout)["system"] == "HA8000", err
        loaded.append(set(json.loads(modules)))
    assert "scipy" in loaded[0] and "scipy" not in loaded[1]
    assert "ioadvisor.advise.candidates" in loaded[1] and "ioadvisor.frozen" in loaded[1]
    assert sorted(loaded[1] & set(NOT_FOR_JSON)) == []
