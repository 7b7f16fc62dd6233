"""IOR, mdtest and fio outputs are filed under the center file system whose mount holds their test path (the center
given, else the one named like --system); where none does, the import says so on stderr, naming the path and
--filesystem, instead of filing the runs under no file system in silence."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.kb import KB, RunFilter
from tests.conftest import SAMPLES

runner = CliRunner()
# every text and JSON sample wrote below /scratch/demo (the path is in each file: IOR's Path and test filename,
# mdtest's Path and -d, fio's directory); the IOR CSV summary names no path
WITH_PATH = sorted(p for d in ("ior", "mdtest", "fio") for p in (SAMPLES / d).iterdir() if p.suffix != ".csv")
IOR_CSV = SAMPLES / "ior" / "mpiio_coll_2ranks.csv"


def _site(tmp_path: Path, scratch: str = "/scratch") -> Path:
    """A site's center file for `kestrel` in a directory of $IOADVISE_CENTERS: scratch (Lustre) and home."""
    d = tmp_path / "centers"
    d.mkdir(exist_ok=True)
    (d / "kestrel.toml").write_text(
        'name = "kestrel"\n[[filesystems]]\nname = "scratch"\ntype = "lustre"\n'
        f'mount = "{scratch}"\nost_count = 8\ndefault_stripe_count = 1\ndefault_stripe_size = "1MiB"\n'
        '[[filesystems]]\nname = "home"\ntype = "nfs"\nmount = "/home/$USER"\n')
    return d


def _import(kb: Path, *args: str):
    return runner.invoke(app, ["kb", "import", *args, "--kb", str(kb), "--json"])


def test_runs_are_filed_under_the_file_system_whose_mount_holds_the_test_path(tmp_path, monkeypatch):
    # forbidden: a run of kestrel that names no file system (before, all 28 runs of these files had none and
    # `advise --system kestrel` found no measured runs)
    monkeypatch.setenv("IOADVISE_CENTERS", str(_site(tmp_path)))
    kb = tmp_path / "kb.sqlite"
    res = _import(kb, *map(str, WITH_PATH), "--system", "kestrel")
    assert res.exit_code == 0, res.output
    added = json.loads(res.stdout)
    assert len(added) == len(WITH_PATH) and all(r["runs"] > 0 and r["warnings"] == [] for r in added)
    assert "warning" not in res.stderr
    with KB.open(kb) as store:
        runs = store.runs(RunFilter(system="kestrel"))
    assert len(runs) == sum(r["runs"] for r in added) >= 20
    assert {(r.filesystem, r.tier) for r in runs} == {("scratch", None)}
    assert {r.provenance.tool for r in runs} == {"IOR", "mdtest", "fio"}


def test_a_path_under_no_mount_is_a_warning_naming_it_and_the_flag(tmp_path, monkeypatch):
    monkeypatch.setenv("IOADVISE_CENTERS", str(_site(tmp_path, scratch="/lustre/scratch")))
    kb = tmp_path / "kb.sqlite"
    ior, md = SAMPLES / "ior" / "posix_shared_2ranks.txt", SAMPLES / "mdtest" / "files_unique_2ranks.txt"
    res = _import(kb, str(ior), str(md), str(IOR_CSV), "--system", "kestrel")
    assert res.exit_code == 0, res.output
    warned = [ln for ln in res.stderr.splitlines() if ln.startswith("warning: ")]
    assert warned == [
        f"warning: {ior}: IOR's test path /scratch/demo/shared lies under no mount of kestrel (/lustre/scratch, "
        "/home/$USER): its runs name no file system; pass --filesystem scratch|home",
        f"warning: {md}: mdtest's test path /scratch/demo/md lies under no mount of kestrel (/lustre/scratch, "
        "/home/$USER): its runs name no file system; pass --filesystem scratch|home",
        f"warning: {IOR_CSV}: the IOR output names no test path: its runs name no file system; pass --filesystem "
        "scratch|home"]
    assert [len(r["warnings"]) for r in json.loads(res.stdout)] == [1, 1, 1]
    # --filesystem files them where the user says, without a warning
    res = _import(tmp_path / "kb2.sqlite", str(ior), "--system", "kestrel", "--filesystem", "scratch")
    assert res.exit_code == 0 and "warning" not in res.stderr, res.output
    with KB.open(tmp_path / "kb2.sqlite") as store:
        assert {r.filesystem for r in store.runs(RunFilter(system="kestrel"))} == {"scratch"}


@pytest.mark.parametrize("how", ["--center", "--center without --system", "named like --system"])
def test_the_center_given_places_the_runs_as_the_one_named_like_the_system(tmp_path, monkeypatch, how):
    # with --center alone the runs are the center's (as a Darshan log's are), not "local": advise --system
    # kestrel finds them
    centers = _site(tmp_path)
    monkeypatch.delenv("IOADVISE_CENTERS", raising=False)
    args = ["--center", str(centers / "kestrel.toml")] + (["--system", "kestrel"] if how == "--center" else [])
    if how == "named like --system":
        monkeypatch.setenv("IOADVISE_CENTERS", str(centers))
        args = ["--system", "kestrel"]
    kb = tmp_path / "kb.sqlite"
    res = _import(kb, str(SAMPLES / "ior" / "mpiio_indep_2ranks.json"), *args)
    assert res.exit_code == 0 and "warning" not in res.stderr, res.output
    with KB.open(kb) as store:
        assert {(r.system, r.filesystem) for r in store.runs(RunFilter())
                if r.provenance.kind != "reference"} == {("kestrel", "scratch")}


def test_without_a_center_nothing_is_placed_and_nothing_warned(tmp_path, monkeypatch):
    monkeypatch.delenv("IOADVISE_CENTERS", raising=False)
    kb = tmp_path / "kb.sqlite"
    res = _import(kb, str(SAMPLES / "ior" / "posix_fpp_2ranks.txt"), "--system", "nocenter")
    assert res.exit_code == 0 and "warning" not in res.stderr, res.output
    with KB.open(kb) as store:
        assert {r.filesystem for r in store.runs(RunFilter(system="nocenter"))} == {None}
