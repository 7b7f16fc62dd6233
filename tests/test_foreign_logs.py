"""A Darshan log is a measurement of a center only when its files lie under the center's mounts, by whichever road
it enters the KB (`kb import`, `diagnose --record`, `archive scan`); and no production run, however it came,
is shown by the guide as a measurement or taken by `bench plan` as a target when it is foreign."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

darshan = pytest.importorskip("darshan")

from ioadvisor.cli import app  # noqa: E402
from ioadvisor.kb.store import KB  # noqa: E402

runner = CliRunner()
EXAMPLE = Path(darshan.__file__).parent / "examples" / "example_logs" / "example.darshan"
# example.darshan: 2048 processes wrote 2,199,023,259,968 bytes (POSIX + STDIO) to files under
# /scratch2/scratchdirs/glock/tokioabc-s.4478544/vpicio; no other file moved data
EXAMPLE_BYTES = 2199023259968


def _center(tmp_path: Path, mount: str, name: str = "xsys") -> Path:
    c = tmp_path / f"{name}.toml"
    c.write_text(f'name = "{name}"\n[[filesystems]]\nname = "fs0"\ntype = "lustre"\nmount = "{mount}"\n'
                 'ost_count = 8\n')
    return c


def _production(kb_path: Path) -> list[tuple]:
    if not kb_path.exists():
        return []
    return sorted(sqlite3.connect(kb_path).execute(
        "SELECT system, filesystem, op FROM runs WHERE kind = 'production'"))


def _bench_runs(system: str, fs: str) -> list:
    from ioadvisor.model.run import Provenance
    from ioadvisor.model.validate import make_run
    return [make_run(system=system, filesystem=fs, op="write", value=v, unit="MiB/s", api="POSIX", layout="fpp",
                     nodes=n, ranks=n * 4, stripe_count=1, provenance=Provenance(kind="benchmark"))
            for n, v in ((1, 900.0), (2, 1700.0), (4, 3100.0))]


@pytest.mark.parametrize("how", [["--system", "xsys"], ["--center", "FOREIGN"], ["--center", "FOREIGN",
                                                                                  "--filesystem", "fs0"]])
def test_kb_import_of_a_foreign_log_adds_no_run_and_says_why(tmp_path, kb_path, how):
    """No center (xsys names none), or a center whose one mount /lus/x holds none of the 2,199,023,259,968 bytes
    (0 / 2,199,023,259,968 = 0% < 99%; --filesystem does not override the mounts): exit 0, 0 runs, no production
    run in the KB, and the output says why."""
    args = [a.replace("FOREIGN", str(_center(tmp_path, "/lus/x"))) for a in how]
    r = runner.invoke(app, ["kb", "import", str(EXAMPLE), "--kb", str(kb_path), "--json", *args])
    assert r.exit_code == 0, r.output
    (res,) = json.loads(r.stdout)
    assert res["runs"] == 0 and res["note"].startswith("no measured run: ")
    if "--center" in how:
        assert f"0 of the {EXAMPLE_BYTES} bytes" in res["note"] and "xsys" in res["note"]
    else:
        assert "no center" in res["note"]
    assert _production(kb_path) == []
    text = runner.invoke(app, ["kb", "import", str(EXAMPLE), "--kb", str(kb_path), *args])
    assert text.exit_code == 0 and "0 run(s) added; no measured run:" in text.output


def test_kb_import_files_the_log_under_the_file_system_that_holds_it(tmp_path, kb_path):
    """A center mounting fs0 at /scratch2 holds all of example.darshan's bytes: its runs are filed under fs0 and
    the center's name, whatever --filesystem says."""
    c = _center(tmp_path, "/scratch2")
    r = runner.invoke(app, ["kb", "import", str(EXAMPLE), "--kb", str(kb_path), "--center", str(c), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)[0]["runs"] == 1
    assert _production(kb_path) == [("xsys", "fs0", "write")]


@pytest.mark.parametrize("center", [None, "ha8000"])
def test_diagnose_record_of_a_foreign_log_adds_no_run(kb_path, center):
    """Without a center, or with HA8000 (mounts /lustre/$USER, /home/$USER, /short/$USER, /nfs/all/$USER, /tmp:
    none holds /scratch2/...), the diagnosis stands and nothing is recorded; --json says why."""
    r = runner.invoke(app, ["diagnose", str(EXAMPLE), "--record", "--kb", str(kb_path), "--json"]
                      + (["--center", center] if center else []))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rec = doc["recorded"]
    assert rec["runs"] == 0 and rec["already_known"] is False and rec["note"].startswith("no measured run: ")
    assert doc["findings"]                          # the diagnosis itself is unchanged
    if center:
        assert f"0 of the {EXAMPLE_BYTES} bytes" in rec["note"] and "HA8000" in rec["note"]
    assert _production(kb_path) == []
    text = runner.invoke(app, ["diagnose", str(EXAMPLE), "--record", "--kb", str(kb_path)]
                         + (["--center", center] if center else []))
    assert text.exit_code == 0 and "Recorded 0 production run(s)" in text.output and "no measured run" in text.output


def test_the_guide_shows_no_recorded_job_as_a_measurement(tmp_path, kb_path):
    """Three benchmark runs of xsys on fs0, then `diagnose --record` of a job whose files lie under fs0's mount:
    the job is a production run of fs0 (2,199,023,259,968 bytes / its run time, in B/s), and the guide's page
    still says 3 measured runs and lists no value in B/s."""
    from ioadvisor.docs.build import build_site
    c = _center(tmp_path, "/scratch2")
    with KB.open(kb_path) as kb:
        kb.add_runs(_bench_runs("xsys", "fs0"), source="bench", source_hash="bench-1", fmt="csv", importer="test")
    r = runner.invoke(app, ["diagnose", str(EXAMPLE), "--record", "--center", str(c), "--kb", str(kb_path),
                            "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["recorded"]["runs"] == 1
    assert _production(kb_path) == [("xsys", "fs0", "write")]
    with KB.open(kb_path, create=False) as kb:
        build_site(tmp_path / "site", kb=kb, center=str(c), formats=("md",), plot_cache=False)
    page = (tmp_path / "site" / "en" / "systems" / "xsys.md").read_text()
    assert "3 measured runs." in page and page.count("## File system ") == 1
    assert "B/s" not in page.replace("MiB/s", "")


def test_a_system_with_production_runs_only_gets_no_guide_page(tmp_path, kb_path):
    """A job recorded for nersc (its files under nersc's /scratch2) is nersc's only run: no measurement, so the
    guide, built without naming the center, has no page for nersc."""
    from ioadvisor.docs.build import build_site
    c = _center(tmp_path, "/scratch2", name="nersc")
    r = runner.invoke(app, ["kb", "import", str(EXAMPLE), "--kb", str(kb_path), "--center", str(c)])
    assert r.exit_code == 0 and _production(kb_path) == [("nersc", "fs0", "write")]
    with KB.open(kb_path, create=False) as kb:
        build_site(tmp_path / "site", kb=kb, formats=("md",), plot_cache=False)
    assert not (tmp_path / "site" / "en" / "systems" / "nersc.md").exists()


def test_bench_plan_takes_no_target_from_a_foreign_log(tmp_path, kb_path):
    """`kb import --center xsys` of a log whose files lie under no mount of xsys (/lus/x): no run, so the plan is
    the one made without it (default targets), not one aimed at the foreign job's 2048 processes."""
    from ioadvisor.bench.plan import plan_for
    from ioadvisor.center import load_center
    c = _center(tmp_path, "/lus/x")
    center = load_center(c)
    with KB.open(kb_path) as kb:
        kb.add_runs(_bench_runs("xsys", "fs0"), source="bench", source_hash="bench-1", fmt="csv", importer="test")
        before = plan_for(kb, "xsys", center, budget=2)
    r = runner.invoke(app, ["kb", "import", str(EXAMPLE), "--kb", str(kb_path), "--system", "xsys", "--center",
                            str(c)])
    assert r.exit_code == 0, r.output
    with KB.open(kb_path) as kb:
        after = plan_for(kb, "xsys", center, budget=2)
    assert before.target_source == after.target_source == "default"
    assert after.targets == before.targets


HDF5_DXT = EXAMPLE.parent / "ior_hdf5_example.darshan"


def _assumed(log: Path, *args: str) -> tuple[dict, dict]:
    r = runner.invoke(app, ["diagnose", str(log), "--json", *args])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    return doc["workload_assumptions"], doc["workload"]


def test_diagnose_takes_nodes_in_the_archive_order(tmp_path):
    """example.darshan states no node count (no BG/Q record, no DXT trace) for its 2048 processes: nodes are
    2048 / 32 = 64 with --ranks-per-node 32, 2048 / 16 = 128 from a center file's ranks_per_node = 16, the
    option before the center file; with neither, no node count at all (never '1 rank per node' as a fact)."""
    c = tmp_path / "c.toml"
    c.write_text('name = "xsys"\nranks_per_node = 16\n[[filesystems]]\nname = "fs0"\ntype = "lustre"\n'
                 'mount = "/scratch2"\n')
    a, w = _assumed(EXAMPLE)
    assert a["nodes"] is None and a["nodes_from"] is None and "per process" in a["note"]
    assert (w["nodes"], w["ranks_per_node"]) == (2048, 1)          # processes, labelled as such above
    a, w = _assumed(EXAMPLE, "--ranks-per-node", "32")
    assert (a["nodes"], a["ranks_per_node"], a["nodes_from"]) == (64, 32, "option") and w["nodes"] == 64
    a, w = _assumed(EXAMPLE, "--center", str(c))
    assert (a["nodes"], a["ranks_per_node"], a["nodes_from"]) == (128, 16, "center") and w["nodes"] == 128
    a, _ = _assumed(EXAMPLE, "--center", str(c), "--ranks-per-node", "32")
    assert (a["nodes"], a["nodes_from"]) == (64, "option")
    text = runner.invoke(app, ["diagnose", str(EXAMPLE)])
    assert text.exit_code == 0 and "not known (the figures are per process)" in text.output


def test_diagnose_takes_the_node_count_the_log_states():
    """ior_hdf5_example.darshan has DXT traces of all 4 ranks, all on one host: 1 node, whatever
    --ranks-per-node 2 says (4 / 2 = 2 nodes would contradict the log)."""
    a, w = _assumed(HDF5_DXT, "--ranks-per-node", "2")
    assert (a["nodes"], a["ranks_per_node"], a["nodes_from"]) == (1, 4, "log") and w["nodes"] == 1
