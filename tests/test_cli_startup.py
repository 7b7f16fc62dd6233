"""The root command imports only the module of the command being run (start-up time is a target)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from typer.testing import CliRunner
from ioadvisor.cli import app
r = CliRunner().invoke(app, sys.argv[1:])
print(json.dumps({"exit": r.exit_code, "out": r.output,
                  "modules": sorted(m for m in sys.modules if m.startswith("ioadvisor.cli.")
                                    or m in ("pydantic", "matplotlib", "jinja2", "darshan", "numpy"))}))
"""


def _probe(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("argv, loaded", [
    (["advise", "--help"], {"ioadvisor.cli.advise"}),
    (["submit", "--help"], {"ioadvisor.cli.wrap"}),
    (["kb", "list", "--help"], {"ioadvisor.cli.kb"}),
])
def test_only_the_invoked_command_module_is_imported(argv, loaded):
    r = _probe(*argv)
    assert r["exit"] == 0, r["out"]
    cli_modules = {m for m in r["modules"] if m.startswith("ioadvisor.cli.")}
    assert cli_modules - {"ioadvisor.cli.common"} == loaded
    assert not {"pydantic", "matplotlib", "jinja2", "darshan"} & set(r["modules"])


def test_root_help_lists_every_command_and_unknown_command_fails():
    r = _probe("--help")
    assert r["exit"] == 0
    for name in ("advise", "wrap", "submit", "diagnose", "kb", "docs", "bench"):
        assert name in r["out"]
    bad = _probe("adivse")
    assert bad["exit"] == 2
    assert "No such command" in bad["out"]


def test_help_paragraphs_are_not_broken_at_source_lines():
    import typer

    from ioadvisor.cli import app
    root = typer.main.get_command(app)
    for name in root.list_commands(None):
        cmd = root.get_command(None, name)
        for c in [cmd, *getattr(cmd, "commands", {}).values()]:
            for para in (c.help or "").split("\n\n"):
                assert "\n" not in para, (name, c.name, para)
    assert "Lustre striping, MPI-IO hints" in root.get_command(None, "wrap").help
