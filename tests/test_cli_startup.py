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
    # the root group, the shared helpers and the option declarations every command reads, then the command's own
    assert cli_modules - {"ioadvisor.cli.root", "ioadvisor.cli.common", "ioadvisor.cli.options"} == loaded
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


# The console script's own process, as a user runs it: the modules it loaded are written at exit (after the
# command's output), so what a command imports at any point counts, not only what importing the CLI loads.
PROCESS = """
import atexit, json, sys
atexit.register(lambda: sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
from ioadvisor.cli import main
sys.argv = ["ioadvise", *sys.argv[1:]]
main()
"""
# numpy, scipy and matplotlib belong to `docs build`, `bench` and `diagnose`; rich costs about 40 ms of import
# and layout; the center, importer, ingestion and model-type modules are not needed to list stored runs
HEAVY = {"numpy", "scipy", "matplotlib", "pydantic", "jinja2", "darshan"}
NOT_FOR_LISTING = HEAVY | {"rich", "ioadvisor.model.types", "ioadvisor.importers", "ioadvisor.center",
                           "ioadvisor.advise", "ioadvisor.diagnose", "ioadvisor.ingest", "tomllib"}


def _process(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    p = subprocess.run([sys.executable, "-c", PROCESS, *args], capture_output=True, text=True)
    head, _, tail = p.stderr.rpartition("\nMODULES ")
    assert tail, p.stderr
    p.stderr = head
    return p, set(json.loads(tail))


@pytest.fixture
def small_kb(tmp_path):
    """A KB of the IOR samples under a system no center file names (the center comes from the KB)."""
    from ioadvisor.ingest import import_file
    from ioadvisor.kb import KB
    from tests.conftest import SAMPLES
    kb = tmp_path / "kb.sqlite"
    with KB.open(kb) as store:
        for f in sorted((SAMPLES / "ior").iterdir()):
            import_file(store, f, system="laptop")
    return str(kb)


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_kb_list_process_imports_nothing_it_does_not_use(small_kb, extra):
    p, modules = _process("kb", "list", "--kb", small_kb, "--system", "laptop", "--op", "write", *extra)
    assert p.returncode == 0, p.stderr
    # it did list the runs: 5 writes among the 12 runs of the 6 sample files
    if extra:
        assert len(json.loads(p.stdout)) == 5
    else:
        # the count line, the column names, the rule and one line per run: 1 + 2 + 5
        assert p.stdout.startswith("5 run(s)") and len(p.stdout.splitlines()) == 1 + 2 + 5
    assert "ioadvisor.kb.store" in modules and "ioadvisor.cli.kb" in modules
    loaded = {m for m in modules if m.split(".")[0] in {n.split(".")[0] for n in NOT_FOR_LISTING}}
    assert not {m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_FOR_LISTING)}, loaded


def test_advise_json_process_with_stored_fits_does_not_import_numpy_scipy_matplotlib_or_rich(small_kb):
    args = ("advise", "--kb", small_kb, "--system", "laptop", "--nodes", "1", "--ranks-per-node", "2",
            "--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "any", "--json")
    first, fitting = _process(*args)          # the runs are new: this call fits the system and stores the fits
    assert first.returncode == 0, first.stderr
    assert "scipy.optimize" in fitting        # (the probe sees a heavy import where there is one)
    p, modules = _process(*args)
    assert p.returncode == 0, p.stderr
    assert p.stdout == first.stdout and json.loads(p.stdout)["system"] == "laptop"
    assert "ioadvisor.advise" in modules
    assert not {m.split(".")[0] for m in modules} & (HEAVY | {"rich"})


def _advise_from_snapshot(small_kb: str, tmp_path, process: str) -> tuple:
    """(home, modules loaded) of a user's cold `advise --json` from a snapshot published of `small_kb`, in a
    process running `process`, with an empty home."""
    import os
    snap = tmp_path / "center.sqlite"
    staff = {**os.environ, "IOADVISE_KB": small_kb, "IOADVISE_CENTER_KB": ""}
    out = subprocess.run([sys.executable, "-m", "ioadvisor", "kb", "publish", str(snap)], env=staff,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    home = tmp_path / "home"
    home.mkdir()
    user = {**os.environ, "IOADVISE_CENTER_KB": str(snap), "IOADVISE_KB": "", "HOME": str(home),
            "XDG_CACHE_HOME": str(home / "cache"), "XDG_DATA_HOME": str(home / "share")}
    args = ["advise", "--system", "laptop", "--nodes", "1", "--ranks-per-node", "2", "--bytes-per-rank", "1GiB",
            "--api", "mpiio", "--layout", "any", "--json"]
    p = subprocess.run([sys.executable, "-c", process, *args], capture_output=True, text=True, env=user)
    head, _, tail = p.stderr.rpartition("\nMODULES ")
    assert p.returncode == 0 and tail, p.stderr
    assert json.loads(p.stdout)["recommendation"]["predicted"]["value"] > 0
    return home, set(json.loads(tail))


def test_advise_from_a_published_snapshot_with_an_empty_home_imports_only_what_it_uses(small_kb, tmp_path):
    """A center's users advise from its snapshot, each in a cold process: the snapshot holds the fits, so nothing
    is fitted (numpy, scipy), no reference KB is built nor a digest computed (hashlib: OpenSSL), and no center
    file is parsed for a system that none names (tomllib, the center files' mount rules in slurm.rewrite), and
    the home is left as it was."""
    import os
    home, modules = _advise_from_snapshot(small_kb, tmp_path, PROCESS)
    assert "ioadvisor.advise" in modules and "ioadvisor.kb.integrity" in modules
    assert not {m.split(".")[0] for m in modules} & (HEAVY | {"rich", "hashlib", "_hashlib", "tomllib"})
    # nor the grammar of a job script's #IOADVISE lines or #SBATCH options: this advice reads no script; nor the
    # reader of center files and their key table, nor the TOML schemas: it reads no center or workload file
    assert not {"ioadvisor.slurm.rewrite", "ioadvisor.ioadvise_lines", "ioadvisor.slurm.jobscript",
                "ioadvisor.center.file", "ioadvisor.center.schema", "ioadvisor.tomlschema"} & modules
    assert not os.listdir(home)


def test_a_plain_advice_from_a_snapshot_imports_no_typing(small_kb, tmp_path):
    """The package's annotations are read by a type checker, not at run time: the console's plain advice (what a
    center's users run) does not import typing (4% of its instructions). A center file's reader would (tomllib
    imports it), and this advice reads none."""
    console = PROCESS.replace("from ioadvisor.cli import", "from ioadvisor.console import")
    _, modules = _advise_from_snapshot(small_kb, tmp_path, console)
    assert "ioadvisor.advise.engine" in modules and "ioadvisor.console" in modules and "tomllib" not in modules
    assert "typing" not in modules


def test_a_plain_advice_from_a_snapshot_does_not_import_signal(small_kb, tmp_path):
    """The console installs its signal handlers with the C module under `signal` (_signal): `signal` itself makes
    three enums (1.3% of a cold advice's instructions) that only naming a signal that came needs."""
    console = PROCESS.replace("from ioadvisor.cli import", "from ioadvisor.console import")
    _, modules = _advise_from_snapshot(small_kb, tmp_path, console)
    assert "ioadvisor.cli.signals" in modules and "_signal" in modules
    assert "signal" not in modules


def test_the_module_probe_sees_what_a_command_imports(small_kb):
    """The check above can fail: `kb show` draws a rich table, and the probe reports rich for it."""
    run_id = json.loads(_process("kb", "list", "--kb", small_kb, "--system", "laptop", "--json")[0].stdout)[0]["id"]
    p, modules = _process("kb", "show", run_id, "--kb", small_kb)
    assert p.returncode == 0, p.stderr
    assert run_id in p.stdout
    assert {"rich", "rich.table"} <= modules


@pytest.mark.parametrize("group", ["kb", "bench", "archive", "docs", "jobs", "center"])
def test_a_group_builds_only_the_subcommand_asked_for_and_lists_what_typer_would(group):
    import typer

    from ioadvisor.cli import COMMANDS, app
    root = typer.main.get_command(app)
    lazy = root.get_command(None, group)
    first = next(iter(lazy.commands))
    assert lazy.get_command(None, first).name == first
    assert set(lazy.commands._built) == {first}            # the others are not built yet
    # the same subcommands, in the same order, with the same help and options as typer's eager build
    import importlib
    eager = typer.main.get_command(importlib.import_module(f"ioadvisor.cli.{COMMANDS[group]}").app)
    eager = eager.commands[group] if group in getattr(eager, "commands", {}) else eager
    assert lazy.list_commands(None) == eager.list_commands(None) and len(lazy.list_commands(None)) >= 1
    assert lazy.help == " ".join(eager.help.split()) and lazy.no_args_is_help == eager.no_args_is_help
    for name in eager.list_commands(None):
        a, b = lazy.get_command(None, name), eager.get_command(None, name)
        assert [p.name for p in a.params] == [p.name for p in b.params], name
        assert a.help == "\n\n".join(" ".join(p.split()) for p in (b.help or "").split("\n\n")), name
    assert set(lazy.commands._built) == set(eager.list_commands(None))


def test_diagnose_json_process_imports_neither_pydarshan_numpy_nor_rich():
    """`diagnose --json` reads the log in a child process (PyDarshan is imported there, without numpy or
    pandas) and prints JSON: the command's own process loads none of darshan, numpy, pandas or rich."""
    pytest.importorskip("darshan")
    from pathlib import Path

    import darshan
    log = Path(darshan.__file__).parent / "examples" / "example_logs" / "example.darshan"
    p, modules = _process("diagnose", str(log), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["job"]["nprocs"] == 2048
    assert not {m.split(".")[0] for m in modules} & {"darshan", "numpy", "pandas", "rich"}


def test_diagnose_of_a_log_no_rule_asks_the_kb_about_opens_no_kb():
    """The rules' KB facts (measured gains of striping, published comparisons) are asked only by findings that
    quote them; the KB's modules (about 10 ms of a 0.2 s diagnosis) were imported for every log. A log whose
    findings ask none must not load them, nor the KB's store."""
    pytest.importorskip("darshan")
    from pathlib import Path

    import darshan
    log = Path(darshan.__file__).parent / "examples" / "example_logs" / "example.darshan"
    p, modules = _process("diagnose", str(log), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["findings"]
    assert "ioadvisor.kb.store" not in modules and "sqlite3" not in modules
