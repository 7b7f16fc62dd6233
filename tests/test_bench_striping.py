"""`bench run --stripe-count/--stripe-size`: the benchmark's directory is striped with `lfs setstripe` before any
file is made, the result records what `lfs getstripe -d` reads back, and off Lustre nothing is claimed.

Lustre cannot be mounted here: the Lustre tests put a stand-in `lfs` on PATH that records its arguments and
answers `getstripe -d` from what `setstripe` recorded, and name the file system Lustre by hand. The test off
Lustre runs the real kernel on the local disk."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.bench import BenchError
from ioadvisor.bench.params import data_params
from ioadvisor.bench.striping import parse_dir_stripe, stripe_directory
from ioadvisor.cli import app
from ioadvisor.errors import UsageError
from ioadvisor.kb import KB, RunFilter

STAND_IN_LFS = r"""#!/bin/sh
# stand-in for Lustre's lfs: records its arguments, answers getstripe -d from the recorded setstripe (in bytes,
# as lfs reports a size given as 4M)
echo "$@" >> "$LFS_LOG"
case "$1" in
  setstripe)
    [ -n "$LFS_FAIL" ] && { echo "lfs setstripe: $LFS_FAIL" >&2; exit 22; }
    shift; c=0; s=0
    while [ $# -gt 1 ]; do case "$1" in -c) c=$2; shift 2;; -S) s=$2; shift 2;; *) shift;; esac; done
    case "$s" in *K) s=$((${s%K} << 10));; *M) s=$((${s%M} << 20));; *G) s=$((${s%G} << 30));; esac
    echo "$c $s" > "$LFS_LOG.layout";;
  getstripe)
    if [ -f "$LFS_LOG.layout" ]; then read c s < "$LFS_LOG.layout"; else c=1; s=1048576; fi
    echo "stripe_count:  $c stripe_size:   $s pattern:       raid0 stripe_offset: -1";;
esac
"""


@pytest.fixture
def stand_in_lfs(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lfs = bin_dir / "lfs"
    lfs.write_text(STAND_IN_LFS)
    lfs.chmod(0o755)
    log = tmp_path / "lfs.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("LFS_LOG", str(log))
    return log


def test_directory_output_is_parsed():
    # the directory form of `lfs getstripe` (lfs-getstripe.1)
    assert parse_dir_stripe("stripe_count:  4 stripe_size:   1048576 pattern: raid0 stripe_offset: -1") == \
        (4, 1048576)
    assert parse_dir_stripe("stripe_count:  -1 stripe_size:   4194304 pattern: raid0 stripe_offset: -1") == \
        (-1, 4194304)
    # 0 is the file system's default, and no output states nothing: neither is a stripe count
    assert parse_dir_stripe("stripe_count:  0 stripe_size:   0 pattern: raid0 stripe_offset: -1") == (None, None)
    assert parse_dir_stripe("") == (None, None)


def test_stand_in_lustre_directory_is_striped_before_use(stand_in_lfs, tmp_path):
    got, warning = stripe_directory(str(tmp_path), "lustre", 8, 4 << 20)
    assert warning is None and got == {"stripe_count": 8, "stripe_size": 4 << 20}
    assert stand_in_lfs.read_text().splitlines() == [f"setstripe -c 8 -S 4M {tmp_path}",
                                                     f"getstripe -d {tmp_path}"]


def test_stand_in_lustre_unasked_records_the_directory_default(stand_in_lfs, tmp_path):
    got, warning = stripe_directory(str(tmp_path), "lustre")
    assert got == {"stripe_count": 1, "stripe_size": 1 << 20} and warning is None
    # must NOT happen: a layout changed that nobody asked to change
    assert "setstripe" not in stand_in_lfs.read_text()


def test_stand_in_lustre_refusal_stops_the_run(stand_in_lfs, tmp_path, monkeypatch):
    monkeypatch.setenv("LFS_FAIL", "Invalid argument")
    with pytest.raises(BenchError, match="setstripe -c 4.*Invalid argument"):
        stripe_directory(str(tmp_path), "lustre", 4)


def test_lustre_without_lfs_is_an_error_only_when_striping_was_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))          # no lfs anywhere
    with pytest.raises(BenchError, match="lfs is not on PATH"):
        stripe_directory(str(tmp_path), "lustre", 4)
    assert stripe_directory(str(tmp_path), "lustre") == ({}, None)


def test_stand_in_lustre_run_files_the_striping_in_the_kb(stand_in_lfs, tmp_path, monkeypatch, kb_path):
    """The kernel, its result and the importer: the run carries the stripe count lfs read back."""
    import ioadvisor.bench.kernel as kernel
    monkeypatch.setattr(kernel, "fs_type", lambda path: ("lustre", "0xbd00bd0"))
    r = CliRunner().invoke(app, ["bench", "run", "--stripe-count", "4", "--stripe-size", "2MiB", "-t", "64KiB",
                                 "-b", "256KiB", "--dir", str(tmp_path / "d"), "--system", "stripebox",
                                 "--result-dir", str(tmp_path / "res"), "--kb", str(kb_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["effective"]["stripe_count"] == 4 and doc["effective"]["stripe_size"] == 2 << 20
    assert f"setstripe -c 4 -S 2M {tmp_path / 'd'}" in stand_in_lfs.read_text()
    assert f"--stripe-count 4 --stripe-size {2 << 20}" in doc["command"]      # the command that repeats it
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="stripebox"))
    assert {(r.op, r.stripe_count, r.stripe_size) for r in runs} == {("write", 4, 2 << 20), ("read", 4, 2 << 20)}


def test_off_lustre_the_run_warns_and_claims_no_stripe_count(tmp_path, kb_path):
    """The real kernel on the local disk (not Lustre): the run goes ahead, says the files were not striped, and
    files no stripe count."""
    r = CliRunner().invoke(app, ["bench", "run", "--stripe-count", "4", "-t", "64KiB", "-b", "256KiB", "--dir",
                                 str(tmp_path / "d"), "--system", "plainbox", "--result-dir", str(tmp_path / "res"),
                                 "--kb", str(kb_path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["effective"]["fs_type"] != "lustre"
    assert "stripe_count" not in doc["effective"]
    assert any("not Lustre" in w and "no stripe count" in w for w in doc["warnings"])
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="plainbox"))
    assert len(runs) == 2 and all(r.stripe_count is None for r in runs)
    # without a striping request there is nothing to warn about
    r = CliRunner().invoke(app, ["bench", "run", "-t", "64KiB", "-b", "256KiB", "--dir", str(tmp_path / "e"),
                                 "--result-dir", str(tmp_path / "res"), "--json"])
    assert not any("Lustre" in w for w in json.loads(r.stdout)["warnings"])


@pytest.mark.parametrize("values, words", [
    ({"stripe_size": "100KiB"}, "stripe_size"),
    ({"stripe_count": -2}, "stripe_count"),
    ({"stripe_count": "many"}, "stripe_count"),
])
def test_bad_striping_is_refused_naming_the_key(values, words):
    with pytest.raises(UsageError, match=words):
        data_params(values)


def test_striping_is_repeated_in_the_command_line():
    from ioadvisor.bench.params import data_command
    cmd = data_command(data_params({"stripe_count": 8, "stripe_size": "1MiB"}))
    assert "--stripe-count 8 --stripe-size 1048576" in cmd
    assert "--stripe" not in data_command(data_params({}))
