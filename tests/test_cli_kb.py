import json

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from tests.conftest import SAMPLES

runner = CliRunner()


def test_kb_list_json_is_complete_for_each_seed_system(kb_path):
    res = runner.invoke(app, ["kb", "list", "--kb", str(kb_path), "--json"])
    assert res.exit_code == 0, res.output
    runs = json.loads(res.stdout)
    systems = {r["system"] for r in runs}
    assert "HA8000" in systems
    for s in systems:
        one = json.loads(runner.invoke(app, ["kb", "list", "--kb", str(kb_path), "--system", s, "--json",
                                             "--limit", "1"]).stdout)
        assert len(one) == sum(r["system"] == s for r in runs)   # --limit only cuts the terminal view


def test_kb_show_and_stats(kb_path):
    runs = json.loads(runner.invoke(app, ["kb", "list", "--kb", str(kb_path), "--json"]).stdout)
    rid = runs[0]["id"]
    shown = json.loads(runner.invoke(app, ["kb", "show", rid[:8], "--kb", str(kb_path), "--json"]).stdout)
    assert shown == runs[0]
    stats = json.loads(runner.invoke(app, ["kb", "stats", "--kb", str(kb_path), "--json"]).stdout)
    assert stats["runs"] == len(runs)


def test_bad_input_is_one_line_exit_2_no_traceback(tmp_path, kb_path):
    bad = tmp_path / "junk.txt"
    bad.write_text("hello, this is not a benchmark output\n")
    res = runner.invoke(app, ["kb", "import", str(bad), "--kb", str(kb_path)])
    assert res.exit_code == 2
    assert "junk.txt" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["kb", "show", "nonexistent", "--kb", str(kb_path)])
    assert res.exit_code == 2 and "no run" in res.output


def test_export_writes_atomically(tmp_path, kb_path):
    out = tmp_path / "out.csv"
    res = runner.invoke(app, ["kb", "export", "--kb", str(kb_path), "-o", str(out)])
    assert res.exit_code == 0
    assert out.read_text().startswith("source,system,")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_import_directory_skips_hidden_files_and_directories(tmp_path, kb_path):
    import shutil
    from pathlib import Path
    src = next(Path(__file__).parent.joinpath("data", "samples", "fio").glob("*.json"))
    results = tmp_path / "results"
    (results / ".git").mkdir(parents=True)
    shutil.copy(src, results / "run.json")
    (results / ".git" / "junk").write_text("not a benchmark output\n")
    (results / ".partial.json").write_text("{")
    res = runner.invoke(app, ["kb", "import", str(results), "--kb", str(kb_path), "--json"])
    assert res.exit_code == 0, res.output
    assert [Path(r["path"]).name for r in json.loads(res.stdout)] == ["run.json"]


def test_kb_list_table_fits_an_80_column_terminal(kb_path):
    import os
    import subprocess
    import sys
    env = {**os.environ, "COLUMNS": "80", "IOADVISE_KB": str(kb_path)}
    out = subprocess.run([sys.executable, "-c", "from ioadvisor.cli import main; main()", "kb", "list",
                          "--system", "HA8000", "--limit", "6"], env=env, capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0].startswith("21 run(s), first 6 shown; in every row shown: system HA8000")
    runs = json.loads(runner.invoke(app, ["kb", "list", "--kb", str(kb_path), "--system", "HA8000", "--json",
                                          "--limit", "6"]).stdout)[:6]
    body = [ln for ln in lines if ln[:12] in {r["id"] for r in runs}]
    assert len(body) == 6                          # one line per run, the full id at its start
    for ln, r in zip(body, runs):
        assert len(ln) <= 80
        given = r["value_given"] if r["value_given"] is not None else r["value"]
        assert f"{given:,.1f} {r['unit_given'] or r['unit']}" in ln


@pytest.mark.parametrize("option, value", [("--op", "wirte"), ("--layout", "foo"), ("--api", "mpi"),
                                           ("--kind", "bench"), ("--origin", "users")])
def test_a_filter_value_no_run_can_have_is_an_error_not_an_empty_answer(option, value, kb_path):
    """`kb list --op wirte` answered "0 run(s)" (and `--json` `[]`) with exit 0: a script could not tell a
    misspelt filter from a KB without such runs. It must be one line naming the value and the valid ones."""
    takes = {"list": {"--op", "--layout", "--api", "--kind", "--origin"},
             "delete": {"--op", "--layout", "--api", "--kind"}, "export": {"--op", "--origin"}}
    for cmd in (["kb", "list"], ["kb", "list", "--json"], ["kb", "delete"], ["kb", "export"]):
        if option not in takes[cmd[1]]:
            continue
        res = runner.invoke(app, [*cmd, option, value, "--kb", str(kb_path)])
        assert res.exit_code == 2, (cmd, res.output)
        assert value in res.output and "Traceback" not in res.output
        assert len(res.output.strip().splitlines()) == 1


def test_filter_values_are_read_in_the_spellings_runs_are_stored_from(kb_path):
    """What the filters accept beyond the canonical value (any case, the layouts' other names) still selects."""
    def ids(*args):
        res = runner.invoke(app, ["kb", "list", "--json", "--kb", str(kb_path), *args])
        assert res.exit_code == 0, res.output
        return {r["id"] for r in json.loads(res.stdout)}
    shared = ids("--layout", "shared")
    assert shared and ids("--layout", "N-1") == shared == ids("--layout", "SHARED")
    assert ids("--op", "WRITE") == ids("--op", "write") != set()
    assert ids("--origin", "Reference") == ids("--origin", "reference") != set()
    assert ids("--api", "mpi-io") == ids("--api", "MPIIO")


def test_stats_of_a_kb_not_yet_made_names_its_file_not_memory(tmp_path):
    """`kb stats` before the first import printed `KB: :memory:` (and `"path": ":memory:"`): the user asking
    where their KB is was not told. It names the file runs will go to and says it does not exist yet."""
    kb = tmp_path / "sub" / "kb.sqlite"
    res = runner.invoke(app, ["kb", "stats", "--kb", str(kb), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["path"] == str(kb) and doc["exists"] is False and doc["runs"] > 0   # the reference data
    text = runner.invoke(app, ["kb", "stats", "--kb", str(kb)]).stdout
    assert ":memory:" not in text and str(kb) in text.splitlines()[0]
    assert not kb.exists() and not kb.parent.exists()                          # reading made nothing
    assert runner.invoke(app, ["kb", "import", "--kb", str(kb), "--system", "x",
                               str(SAMPLES / "ior" / "posix_fpp_2ranks.txt")]).exit_code == 0
    doc = json.loads(runner.invoke(app, ["kb", "stats", "--kb", str(kb), "--json"]).stdout)
    assert doc["path"] == str(kb) and doc["exists"] is True


@pytest.mark.parametrize("args", [["--format", "xyz", str(SAMPLES / "ior" / "posix_fpp_2ranks.txt")],
                                  [str(SAMPLES / "ior" / "posix_fpp_2ranks.txt"), "no-such-results.txt"]])
def test_an_import_refused_before_reading_makes_no_kb(args, tmp_path):
    """A misspelt --format or a file name that names nothing is a usage error (exit 2) found before anything is
    read; it left a new empty KB behind (at the default path, in a user's home, on a first try) and, for the
    missing file, the files named before it imported. Nothing may be written."""
    kb = tmp_path / "new" / "kb.sqlite"
    res = runner.invoke(app, ["kb", "import", "--kb", str(kb), *args])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert args[-1].split("/")[-1] in res.output or "xyz" in res.output
    assert not kb.exists() and not kb.parent.exists()


def test_an_import_stopped_by_a_bad_file_lists_the_files_it_imported_before(tmp_path):
    """Each file is its own transaction, so the files before a bad one stay imported: the command lists them
    (text and --json) before the error and exit 2. Not: an error alone, which reads as if nothing was added."""
    from ioadvisor.kb import KB
    samples = SAMPLES / "fio"
    d = tmp_path / "results"
    d.mkdir()
    for name in ("randread_4k_qd16.json", "seqwrite_1m_2jobs.json"):
        (d / name).write_bytes((samples / name).read_bytes())
    (d / "zz-notes.md").write_text("notes, not a result\n")
    for i, extra in enumerate(([], ["--json"])):
        kb = tmp_path / f"kb{i}.sqlite"
        r = runner.invoke(app, ["kb", "import", str(d), "--system", "s", "--kb", str(kb), *extra])
        assert r.exit_code == 2 and "zz-notes.md" in r.stderr and "Traceback" not in r.output, r.output
        listed = [x["path"] for x in json.loads(r.stdout)] if extra else r.stdout.splitlines()
        assert len(listed) == 2 and all("zz-notes" not in x for x in listed), r.stdout
        with KB.open(kb) as store:
            assert store.stats()["sources"] == 2
