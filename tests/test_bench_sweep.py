"""Sweeps: validation before anything runs, and real runs under mpiexec in the current allocation."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.bench.sweep import PLAN_FILE, load_plan, plan_sweep, render_array_script
from ioadvisor.cli import app
from ioadvisor.errors import ConfigError
from ioadvisor.kb import KB, RunFilter

runner = CliRunner()

MATRIX = """
name = "matrix"
[base]
transfer_size = "32KiB"
block_size = "128KiB"
ranks = 2
dir = "{dir}"
system = "{system}"
[vary]
api = ["posix", "mpiio"]
layout = ["fpp", "shared"]
collective = [false, true]
[[exclude]]
api = "posix"
collective = true
[[include]]
api = "mpiio"
hints = "romio_cb_write=disable"
"""


def write_matrix(tmp_path: Path, system: str = "sweepbox") -> Path:
    f = tmp_path / "matrix.toml"
    f.write_text(MATRIX.format(dir=tmp_path / "data", system=system))
    return f


def test_product_exclude_and_include(tmp_path):
    plan = plan_sweep(write_matrix(tmp_path), tmp_path / "res")
    got = {(c.settings["api"], c.settings["layout"], c.settings["collective"]) for c in plan.configs}
    assert len(got) == 6 and ("posix", "fpp", True) not in got and ("mpiio", "shared", True) in got
    for c in plan.configs:
        assert c.ranks == 2
        assert c.settings["hints"] == ({"romio_cb_write": "disable"} if c.settings["api"] == "mpiio" else {})
    assert len({c.settings["dir"] for c in plan.configs}) == 6     # each config its own directory


@pytest.mark.parametrize("toml, words", [
    ('[vary]\napi = ["posix"]\ncollective = [true, false]\n', ["config 0", "collective", "POSIX", "[[exclude]]"]),
    ('[base]\nstripes = 4\n', ["[base]", "stripes"]),
    ('[vary]\ntransfer = ["1MiB"]\n', ["[vary]", "transfer"]),
    ('colour = "red"\n', ["colour"]),
    ('[base]\nranks = 0\n', ["ranks"]),
    ('[vary]\napi = []\n', ["vary.api"]),
    ('[base\n', ["line 1"]),
])
def test_invalid_sweeps_fail_before_running_naming_the_key(tmp_path, toml, words):
    f = tmp_path / "bad.toml"
    f.write_text(toml)
    with pytest.raises(ConfigError) as e:
        plan_sweep(f, tmp_path / "res")
    for w in words:
        assert w in str(e.value)
    assert str(f) in str(e.value)
    out = runner.invoke(app, ["bench", "sweep", str(f), "--results", str(tmp_path / "res")])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert not (tmp_path / "res").exists()       # nothing ran, nothing was written


def test_array_script_reads_config_by_task_id(tmp_path):
    f = write_matrix(tmp_path)
    f.write_text(f.read_text() + '[slurm]\npartition = "debug"\ntime = "00:05:00"\noptions = ["--exclusive"]\n')
    plan = plan_sweep(f, tmp_path / "r s")
    script = render_array_script(plan, Path(plan.results) / PLAN_FILE)
    lines = script.splitlines()
    assert {ln for ln in lines if ln.startswith("#SBATCH")} == {
        "#SBATCH --job-name=ioadvise-matrix", "#SBATCH --array=0-5", "#SBATCH --ntasks=2",
        f'#SBATCH --output="{tmp_path}/r s/.slurm-%A_%a.out"', "#SBATCH --partition=debug",
        "#SBATCH --time=00:05:00", "#SBATCH --exclusive"}
    assert "$SLURM_ARRAY_TASK_ID" in lines[-1] and "ioadvisor.bench.worker launch" in lines[-1]


CONFIGS = """
name = "listed"
[base]
block_size = "64KiB"
transfer_size = "64KiB"
dir = "{dir}"
[[config]]
api = "posix"
layout = "fpp"
ranks = 2
[[config]]
api = "mpiio"
layout = "shared"
collective = true
ranks = 8
nodes = 2
[[config]]
api = "mpiio"
layout = "shared"
ranks = 3
nodes = 1
"""


def test_listed_configs_with_nodes(tmp_path, monkeypatch):
    f = tmp_path / "listed.toml"
    f.write_text(CONFIGS.format(dir=tmp_path / "d"))
    plan = plan_sweep(f, tmp_path / "res")
    # exactly the three listed configs (no product of an empty [vary] added to them)
    assert [(c.settings["api"], c.ranks, c.nodes) for c in plan.configs] == [("posix", 2, None), ("mpiio", 8, 2),
                                                                             ("mpiio", 3, 1)]
    assert plan.configs[1].ranks_per_node == 4 and plan.configs[2].ranks_per_node == 3
    # every array task asks for the most nodes (2) and the most ranks on one node (4 of config 1, 3 of config 2,
    # and config 0's 2 ranks, which it places itself): not --ntasks, which would leave the per-node count to Slurm
    sb = {ln for ln in render_array_script(plan, tmp_path / "p.json").splitlines() if ln.startswith("#SBATCH")}
    assert "#SBATCH --nodes=2" in sb and "#SBATCH --ntasks-per-node=4" in sb
    assert not any(ln.startswith("#SBATCH --ntasks=") for ln in sb)
    from ioadvisor.bench import sweep as sw
    srun = sw.launcher_command(sw.Plan(**{**plan.__dict__, "launcher": "srun"}), plan.configs[1], "p.json")
    assert srun[:5] == ["srun", "-n", "8", "-N", "2"] and "--ntasks-per-node=4" in srun
    assert "-N" not in sw.launcher_command(sw.Plan(**{**plan.__dict__, "launcher": "srun"}), plan.configs[0], "p")
    cmd = sw.launcher_command(plan, plan.configs[1], "p.json")        # the venv's MPICH: Hydra's -ppn
    assert cmd[1:5] == ["-n", "8", "-ppn", "4"]
    # an old plan file (written before configs had nodes) still loads
    d = json.loads(plan.to_json())
    for c in d["configs"]:
        del c["nodes"]
    (tmp_path / "old.json").write_text(json.dumps(d))
    assert [c.nodes for c in load_plan(tmp_path / "old.json").configs] == [None, None, None]


@pytest.mark.parametrize("extra, words", [
    ('[[config]]\nranks = 2\nnodes = 3\n', ["config 3", "nodes", "from 1 to ranks (2)"]),
    ('[[config]]\nranks = 2\nnodes = true\n', ["config 3", "nodes"]),
    ('[slurm]\nnodes = 4\n', ["[slurm] nodes", "conflict"]),
    ('[vary]\nranks = [1, 2]\n', ["[[config]] sets ranks", "[vary]"]),
])
def test_listed_configs_refused_naming_the_key(tmp_path, extra, words):
    f = tmp_path / "listed.toml"
    f.write_text(CONFIGS.format(dir=tmp_path / "d") + extra)
    with pytest.raises(ConfigError) as e:
        plan_sweep(f, tmp_path / "res")
    assert all(w in str(e.value) for w in words), str(e.value)


def test_dry_run_runs_nothing(tmp_path):
    out = runner.invoke(app, ["bench", "sweep", str(write_matrix(tmp_path)), "--results", str(tmp_path / "res"),
                              "--dry-run", "--mode", "array", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert len(doc["plan"]["configs"]) == 6 and "#SBATCH --array=0-5" in doc["script"]
    assert not (tmp_path / "res").exists() and not (tmp_path / "data").exists()


@pytest.mark.mpi
def test_allocation_mode_lands_every_config_in_the_kb_with_mpi_hints(tmp_path, kb_path):
    res = tmp_path / "res"
    out = runner.invoke(app, ["bench", "sweep", str(write_matrix(tmp_path)), "--results", str(res),
                              "--kb", str(kb_path), "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    assert summary["failed"] == [] and len(summary["results"]) == 6 and summary["kb_runs"] == 12
    plan = load_plan(res / PLAN_FILE)
    assert len(plan.configs) == 6
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="sweepbox"))
    assert len(runs) == 12
    combos = {(r.api, r.layout, r.collective) for r in runs}
    assert combos == {("POSIX", "fpp", None), ("POSIX", "shared", None), ("MPIIO", "fpp", False),
                      ("MPIIO", "fpp", True), ("MPIIO", "shared", False), ("MPIIO", "shared", True)}
    for r in runs:
        assert r.ranks == 2 and r.transfer_size == 32768
        if r.api == "MPIIO":   # read back with MPI_File_get_info: the requested hint and ROMIO's own keys
            assert r.hints["romio_cb_write"] == "disable" and "cb_buffer_size" in r.hints
    # importing the directory again adds nothing
    again = runner.invoke(app, ["kb", "import", str(res), "--kb", str(kb_path), "--json"])
    assert again.exit_code == 0, again.output
    assert [r["skipped"] for r in json.loads(again.stdout)] == [True] * 6


@pytest.mark.mpi
def test_metadata_sweep_in_allocation(tmp_path, kb_path):
    f = tmp_path / "md.toml"
    f.write_text(f'name = "md"\nkind = "md"\n[base]\nfiles_per_dir = 20\nranks = 2\ndir = "{tmp_path / "d"}"\n'
                 f'system = "mdsweep"\n[vary]\nunique_dir = [false, true]\n')
    out = runner.invoke(app, ["bench", "sweep", str(f), "--results", str(tmp_path / "r"), "--kb", str(kb_path),
                              "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["kb_runs"] == 8
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="mdsweep", op="file_create"))
    assert sorted(r.layout for r in runs) == ["fpp", "shared"] and all(r.ranks == 2 for r in runs)


def test_md_sweep_rejects_data_keys(tmp_path):
    f = tmp_path / "md.toml"
    f.write_text('kind = "md"\n[vary]\napi = ["posix"]\n')
    with pytest.raises(ConfigError) as e:
        plan_sweep(f, tmp_path / "r")
    assert "api" in str(e.value) and "kind md" in str(e.value)


def test_cli_error_shows_table_names_literally(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('[vary]\napi = ["posix"]\ncollective = [true]\n')
    out = runner.invoke(app, ["bench", "sweep", str(f)])
    assert out.exit_code == 2 and "[[exclude]]" in out.output and str(f) in out.output


@pytest.mark.mpi
def test_a_failing_config_is_reported_and_the_rest_still_run(tmp_path, kb_path):
    blocker = tmp_path / "plainfile"
    blocker.write_text("x")
    f = tmp_path / "s.toml"
    f.write_text(f'name = "mixed"\n[base]\ntransfer_size = "4KiB"\nblock_size = "8KiB"\nranks = 2\n'
                 f'system = "mixedbox"\n[vary]\ndir = ["{tmp_path / "ok"}", "{blocker / "sub"}"]\n')
    out = runner.invoke(app, ["bench", "sweep", str(f), "--results", str(tmp_path / "r"), "--kb", str(kb_path),
                              "--json"])
    assert out.exit_code == 1
    summary = json.loads(out.stdout)
    assert len(summary["results"]) == 1 and summary["kb_runs"] == 2
    assert [x["index"] for x in summary["failed"]] == [1]
    assert "cannot create directory" in summary["failed"][0]["error"]


@pytest.mark.mpi
def test_a_result_that_is_not_what_the_config_asked_is_named_not_taken(tmp_path, kb_path):
    """A real one-rank result checked against configs it does not match: 2 ranks, 2 nodes, another index, a
    task of another array job. Each mismatch is named; the matching config passes."""
    from ioadvisor.frozen import replace

    from ioadvisor.bench.sweep import verify_result
    f = tmp_path / "one.toml"
    f.write_text(f'name = "one"\n[base]\ntransfer_size = "4KiB"\nblock_size = "16KiB"\nranks = 1\n'
                 f'dir = "{tmp_path / "data"}"\nsystem = "sweepbox"\n')
    out = runner.invoke(app, ["bench", "sweep", str(f), "--results", str(tmp_path / "r"), "--no-kb", "--json"])
    assert out.exit_code == 0, out.output
    plan = load_plan(tmp_path / "r" / PLAN_FILE)
    cfg, path = plan.configs[0], plan.result_path(0)
    assert verify_result(plan, cfg, path) is None
    assert verify_result(plan, replace(cfg, ranks=2), path) == \
        "the result reports 1 rank(s), the config asked for 2"
    assert "reports 1 node(s), the config asked for 2" in verify_result(plan, replace(cfg, nodes=2), path)
    assert "holds config 0, not config 1" in verify_result(plan, replace(cfg, index=1), path)
    assert "not by task 0 of array job 99" in verify_result(plan, cfg, path, job_id="99")


def test_srun_launcher_takes_its_options_and_nothing_else(tmp_path):
    from ioadvisor.frozen import replace

    from ioadvisor.bench import sweep as sw
    f = write_matrix(tmp_path)
    text = f.read_text()
    for bad in ("srun pmi2", "mpiexec -n 2", "srun --mpi=pmi2 'x", "slurm"):
        f.write_text(f'launcher = "{bad}"\n' + text)
        with pytest.raises(ConfigError, match="launcher:"):
            plan_sweep(f)
    f.write_text('launcher = "srun --mpi=pmi2"\n' + text)
    plan = plan_sweep(f)
    assert sw.launcher_command(plan, plan.configs[0], "p.json")[:4] == ["srun", "--mpi=pmi2", "-n", "2"]
    assert sw.srun_without_mpi(plan) is None                           # the plugin is named
    assert sw.srun_without_mpi(replace(plan, launcher="mpiexec")) is None
    assert "--mpi is none" in sw.srun_without_mpi(replace(plan, launcher="srun --mpi=none"))


@pytest.mark.parametrize("text", ['{"x": ' + "9" * 5000 + "}", '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", "{"])
def test_a_plan_that_is_not_one_is_a_usage_error(tmp_path, text):
    """A huge integer (ValueError) or nesting past the recursion limit (RecursionError) is refused like any
    other unreadable plan, not as a traceback."""
    from ioadvisor.bench.sweep import load_plan
    from ioadvisor.errors import UsageError
    p = tmp_path / "plan.json"
    p.write_text(text)
    with pytest.raises(UsageError, match="not a readable sweep plan"):
        load_plan(p)


@pytest.mark.parametrize("toml, says", [
    # the messages users of sweep files know, now from the one declared shape of a sweep of each kind
    ('colour = "red"\n', "unknown key(s) colour (known: name, kind, launcher, base, vary, exclude, include, config, "
                         "slurm)"),
    ('base = 3\n', "[base] must be a table"),
    ('vary = [1, 2]\n', "[vary] must be a table"),
    ('exclude = 3\n', "exclude must be an array of tables ([[exclude]])"),
    ('include = [1]\n', "include must be an array of tables ([[include]])"),
    ('[[include]]\napi = "mpiio"\n[[include]]\nstripes = 2\n', "[[include]] unknown key(s) stripes"),
    ('kind = "md"\n[[config]]\nranks = 2\napi = "posix"\n', "[[config]] unknown key(s) api"),
    ('kind = "md"\n[base]\nfiles_per_dir = 4\nlayout = "fpp"\n',
     "[base] unknown key(s) layout for kind md (known: files_per_dir, dirs_per_rank, unique_dir, file_size, items, "
     "reps, dir, system, filesystem, center, ranks, nodes)"),
    ('[slurm]\nmem = "4G"\n', "[slurm] unknown key(s) mem (known: partition, time, account, qos, nodes, "
                              "ntasks_per_node, constraint, options)"),
    ('[slurm]\ntime = 1.5\n', "[slurm] time: 1.5 is not text or a number"),
    ('[slurm]\nexclusive = true\n', "[slurm] unknown key(s) exclusive"),
    ('[slurm]\npartition = true\n', "[slurm] partition: True is not text or a number"),
    ('[slurm]\noptions = "--exclusive"\n', "[slurm] options must be a list of strings"),
    ('[slurm]\noptions = [1.5]\n', "[slurm] options: 1.5 is not text or a number (options is a list of strings)"),
    # newly refused: a [slurm] that is not a table read as its characters (`slurm = "x"` was "unknown key(s) x"),
    # and a name that is not a string taken as its str() (`name = true` named the plan "True")
    ('slurm = "partition"\n', "[slurm] must be a table"),
    ('name = true\n', "name: True is not a string"),
    ('name = 3\n', "name: 3 is not a string"),
])
def test_sweep_shape_problems_are_named_as_before(tmp_path, toml, says):
    f = tmp_path / "bad.toml"
    f.write_text(toml)
    with pytest.raises(ConfigError) as e:
        plan_sweep(f, tmp_path / "res")
    assert str(e.value).startswith(f"{f}: {says}"), str(e.value)
    assert not (tmp_path / "res").exists()


def test_sweep_shape_depends_on_kind():
    """Each kind's settings and nothing else: md has no api, data has no files_per_dir; both have ranks, nodes."""
    from ioadvisor.bench.params import DATA_KEYS, MD_KEYS
    from ioadvisor.bench.sweep import sweep_shape
    for kind, keys, other in (("data", DATA_KEYS, "files_per_dir"), ("md", MD_KEYS, "api")):
        base = next(f.table for f in sweep_shape(kind).fields if f.name == "base")
        assert set(base.names()) == set(keys) | {"ranks", "nodes"} and other not in base.names()


@pytest.mark.mpi
def test_a_folder_named_ioadvisor_in_the_current_directory_does_not_shadow_the_package(tmp_path, kb_path,
                                                                                       monkeypatch):
    """A sweep started from a clone's parent directory (which holds the clone as `ioadvisor/`, with its `slurm/`
    folder of hooks) runs every config: the workers import the installed package. Before, `python -m
    ioadvisor.bench.worker` put the current directory first on sys.path, the clone became the package
    `ioadvisor` and its hook folder `ioadvisor.slurm`, and every config failed with "No module named
    'ioadvisor.slurm.rewrite'"."""
    from tests.conftest import ROOT
    here = tmp_path / "parent"
    here.mkdir()
    (here / "ioadvisor").symlink_to(ROOT, target_is_directory=True)
    monkeypatch.chdir(here)
    f = tmp_path / "one.toml"
    f.write_text(f'name = "shadow"\n[base]\ntransfer_size = "4KiB"\nblock_size = "16KiB"\nranks = 1\n'
                 f'dir = "{tmp_path / "data"}"\nsystem = "shadowbox"\n[vary]\nlayout = ["fpp", "shared"]\n')
    out = runner.invoke(app, ["bench", "sweep", str(f), "--results", str(tmp_path / "r"), "--kb", str(kb_path),
                              "--json"])
    summary = json.loads(out.stdout)
    assert summary["failed"] == [] and len(summary["results"]) == 2, out.output
    assert out.exit_code == 0 and summary["kb_runs"] == 4
    script = render_array_script(load_plan(tmp_path / "r" / PLAN_FILE), tmp_path / "r" / PLAN_FILE)
    assert " -P -m ioadvisor.bench.worker launch " in script.splitlines()[-1]
