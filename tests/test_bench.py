"""The bench harness: statistics, offsets, validation, fs detection, and real runs of both kernels."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.bench import stats
from ioadvisor.bench.kernel import cache_warning, offsets, pattern_byte, run_data
from ioadvisor.bench.mdkernel import run_md
from ioadvisor.bench.params import DataParams, data_params, md_params
from ioadvisor.bench.sysinfo import FS_MAGIC, fs_type
from ioadvisor.cli import app
from ioadvisor.errors import UsageError
from ioadvisor.kb import KB, RunFilter

VENV_BIN = Path(sys.executable).parent
MPIEXEC = VENV_BIN / "mpiexec"
IOADVISE = VENV_BIN / "ioadvise"
runner = CliRunner()


# ---- statistics --------------------------------------------------------------------------------------------
def test_summary_of_repetitions():
    s = stats.summarize([10.0, 12.0, 14.0])
    assert s["mean"] == 12.0 and s["min"] == 10.0 and s["max"] == 14.0
    assert s["sd"] == pytest.approx(2.0)
    half = 4.303 * 2.0 / math.sqrt(3)          # t(0.975, 2) = 4.303 as printed tables give it, to its last digit (1.2e-4)
    assert s["ci95_low"] == pytest.approx(12.0 - half, rel=1.2e-4)
    assert s["ci95_high"] == pytest.approx(12.0 + half, rel=1.2e-4)
    one = stats.summarize([5.0])
    assert one["sd"] is None and one["ci95_low"] is None


# ---- offsets and validation ---------------------------------------------------------------------------------
def test_shared_offsets_follow_ior_segments_blocks_transfers():
    p = DataParams(layout="shared", transfer_size=4, block_size=8, segments=2)
    # offset = seg*ranks*block + rank*block + i*xfer with 3 ranks
    assert offsets(p, 1, 3) == [8, 12, 32, 36]
    fpp = DataParams(layout="fpp", transfer_size=4, block_size=8, segments=2)
    assert offsets(fpp, 1, 3) == [0, 4, 8, 12]
    all_shared = sorted(o for r in range(3) for o in offsets(p, r, 3))
    assert all_shared == list(range(0, 2 * 3 * 8, 4))   # every byte written exactly once


@pytest.mark.parametrize("values, key", [
    ({"api": "posix", "collective": True}, "collective"),
    ({"api": "hdf5", "layout": "fpp", "collective": True}, "collective"),
    ({"api": "mpiio", "direct": True}, "direct"),
    ({"transfer_size": "3MiB", "block_size": "4MiB"}, "block_size"),
    ({"api": "posix", "hints": "romio_cb_write=enable"}, "hints"),
    ({"api": "lustre"}, "api"),
    ({"stripes": 4}, "stripes"),
    ({"direct": True, "transfer_size": 1000, "block_size": 8000}, "direct"),
    ({"api": "mpiio", "hdf5_alignment": "1MiB"}, "hdf5_alignment"),
])
def test_impossible_settings_are_rejected_naming_the_key(values, key):
    with pytest.raises(UsageError) as e:
        data_params(values)
    assert key in str(e.value)


def test_fs_type_from_statfs_magic(tmp_path):
    assert FS_MAGIC[0x0BD00BD0] == "lustre" and FS_MAGIC[0x19830326] == "beegfs"
    expected = subprocess.run(["stat", "-f", "-c", "%T", str(tmp_path)], capture_output=True, text=True).stdout
    name, magic = fs_type(tmp_path)
    assert magic is not None and int(magic, 16) in FS_MAGIC or name.startswith("unknown")
    assert name.replace("ext2/ext3", "ext4") in expected.strip().replace("ext2/ext3", "ext4")
    if Path("/dev/shm").is_dir():
        assert fs_type("/dev/shm")[0] == "tmpfs"


def test_cache_warning_compares_with_memory():
    assert "1GiB per node" in cache_warning(1 << 30, 1, 16 << 30, bypassed=False)
    assert cache_warning(1 << 30, 1, 16 << 30, bypassed=True) is None
    assert cache_warning(64 << 30, 2, 16 << 30, bypassed=False) is None


def test_drop_caches_needs_root(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    out = runner.invoke(app, ["bench", "run", "--drop-caches", "-t", "4k", "-b", "8k", "--dir", str(tmp_path)])
    assert out.exit_code == 2 and "root" in out.output


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping caches needs root")
def test_drop_caches_as_root_between_write_and_read(tmp_path):
    p = data_params(dict(transfer_size="4KiB", block_size="16KiB", drop_caches=True, dir=str(tmp_path)))
    try:
        res = run_data(p)
    except Exception as e:      # a container with a read-only /proc/sys says so in one line
        assert "cannot drop caches" in str(e)
        return
    assert res["effective"]["drop_caches"] is True and res["warnings"] == []


# ---- single process, no launcher ----------------------------------------------------------------------------
def test_posix_single_process_random_with_reps(tmp_path):
    p = data_params(dict(api="posix", layout="fpp", transfer_size="4KiB", block_size="64KiB", segments=2, reps=3,
                         random=True, dir=str(tmp_path / "d")))
    res = run_data(p)
    w, r = res["results"]
    assert (w["op"], r["op"]) == ("write", "read")
    assert w["n"] == 3 and len(w["values"]) == 3 and w["bytes"] == 2 * 64 * 1024
    assert w["min"] <= w["mean"] <= w["max"] and w["ci95_low"] <= w["mean"] <= w["ci95_high"]
    assert r["verify_errors"] == 0
    assert res["effective"]["ranks"] == 1 and res["effective"]["access"] == "random"
    assert not list((tmp_path / "d").iterdir())   # files removed


def test_posix_direct_io(tmp_path):
    p = data_params(dict(api="posix", transfer_size="4KiB", block_size="32KiB", direct=True, dir=str(tmp_path),
                         keep=True))
    try:
        res = run_data(p)
    except Exception as e:   # a file system without O_DIRECT (tmpfs) says so plainly
        assert "Invalid argument" in str(e)
        pytest.skip(f"{tmp_path} does not support O_DIRECT")
    assert res["effective"]["direct"] is True and res["warnings"] == []
    assert (tmp_path / "ioadvise-bench.dat.00000").stat().st_size == 32 * 1024


def test_hdf5_file_per_process(tmp_path):
    pytest.importorskip("h5py")
    p = data_params(dict(api="hdf5", layout="fpp", transfer_size="8KiB", block_size="64KiB", dir=str(tmp_path)))
    res = run_data(p)
    assert [r["verify_errors"] for r in res["results"]] == [0, 0]
    h5 = res["effective"]["hdf5"]
    assert h5["parallel"] is False and h5["data_offset"] > 0 and "io_mode" not in h5


def test_hdf5_alignment_puts_the_dataset_on_a_boundary(tmp_path):
    """Without alignment the data starts right after HDF5's metadata (2 KiB into the file), so no rank's block
    starts on a stripe boundary; --hdf5-alignment moves the dataset, as IOR's setAlignment does."""
    h5py = pytest.importorskip("h5py")
    p = data_params(dict(api="hdf5", layout="fpp", transfer_size="8KiB", block_size="64KiB", dir=str(tmp_path),
                         hdf5_alignment="1MiB", keep=True))
    res = run_data(p)
    off = res["effective"]["hdf5"]["data_offset"]
    assert off > 0 and off % (1 << 20) == 0 and res["params"]["hdf5_alignment"] == 1 << 20
    with h5py.File(tmp_path / "ioadvise-bench.h5.00000", "r") as f:
        assert f["data"].id.get_offset() == off and (f["data"][:] == pattern_byte(0)).all()


def test_shared_hdf5_without_parallel_h5py_is_a_clear_error(tmp_path):
    h5py = pytest.importorskip("h5py")
    if h5py.get_config().mpi:
        pytest.skip("this h5py is parallel")
    out = runner.invoke(app, ["bench", "run", "--api", "hdf5", "--layout", "shared", "-t", "4k", "-b", "8k",
                              "--dir", str(tmp_path)])
    assert out.exit_code == 1 and "parallel h5py" in out.output


def test_cli_rejects_collective_posix_with_exit_2(tmp_path):
    out = runner.invoke(app, ["bench", "run", "--api", "posix", "--collective", "--dir", str(tmp_path)])
    assert out.exit_code == 2 and "collective" in out.output and "Traceback" not in out.output


def test_md_kernel_files_and_dirs(tmp_path):
    res = run_md(md_params(dict(files_per_dir=20, dirs_per_rank=3, items="both", file_size="1KiB",
                                dir=str(tmp_path), reps=2)))
    ops = [r["op"] for r in res["results"]]
    assert ops == ["file_create", "file_stat", "file_read", "file_remove", "dir_create", "dir_stat", "dir_remove"]
    assert all(r["items"] == 60 and r["n"] == 2 and r["mean"] > 0 for r in res["results"])
    assert list(tmp_path.iterdir()) == []


# ---- result files, importer, KB ------------------------------------------------------------------------------
def test_result_json_imports_into_kb_once(tmp_path, kb_path):
    res_dir = tmp_path / "results"
    out = runner.invoke(app, ["bench", "run", "-t", "4KiB", "-b", "16KiB", "--reps", "2", "--dir",
                              str(tmp_path / "d"), "--result-dir", str(res_dir), "--system", "testbox", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    files = list(res_dir.glob("*.json"))
    assert [str(f) for f in files] == [doc["result_file"]]
    assert json.loads(files[0].read_text())["ioadvisor_bench"] == 1
    for _ in range(2):
        imp = runner.invoke(app, ["kb", "import", str(res_dir), "--kb", str(kb_path)])
        assert imp.exit_code == 0, imp.output
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="testbox"))
    assert sorted(r.op for r in runs) == ["read", "write"]
    w = next(r for r in runs if r.op == "write")
    assert w.provenance.tool == "ioadvise-bench" and "bench run" in w.provenance.command
    assert w.transfer_size == 4096 and w.block_size == 16384 and w.reps == 2 and w.api == "POSIX"
    assert w.value == pytest.approx(doc["results"][0]["mean"])


def test_md_result_imports_as_rates(tmp_path, kb_path):
    out = runner.invoke(app, ["bench", "md", "-n", "10", "-u", "--dir", str(tmp_path / "d"), "--result-dir",
                              str(tmp_path / "r"), "--kb", str(kb_path), "--system", "mdbox"])
    assert out.exit_code == 0, out.output
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="mdbox"))
    assert {r.op for r in runs} == {"file_create", "file_stat", "file_read", "file_remove"}
    assert all(r.unit == "ops/s" and r.items_per_rank == 10 and r.layout == "fpp" for r in runs)


def test_bench_importer_rejects_a_foreign_version(tmp_path, kb_path):
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"ioadvisor_bench": 99, "kind": "data"}))
    out = runner.invoke(app, ["kb", "import", str(bad), "--kb", str(kb_path)])
    assert out.exit_code == 2 and "r.json" in out.output and "newer" in out.output


# ---- real MPI ------------------------------------------------------------------------------------------------
def _mpirun(n: int, args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(MPIEXEC), "-n", str(n), str(IOADVISE), *args], capture_output=True, text=True,
                          timeout=120, **kw)


@pytest.mark.mpi
def test_mpiio_shared_collective_reads_hints_back_from_mpi(tmp_path, kb_path):
    out = _mpirun(2, ["bench", "run", "--api", "mpiio", "--layout", "shared", "--collective", "--hints",
                      "romio_cb_write=disable,cb_buffer_size=8388608", "-t", "16KiB", "-b", "64KiB", "-s", "2",
                      "--reps", "2", "--dir", str(tmp_path / "d"), "--result-dir", str(tmp_path / "r"),
                      "--kb", str(kb_path), "--json", "--system", "mpibox"])
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)       # only rank 0 prints
    eff = doc["effective"]
    assert eff["ranks"] == 2 and eff["nodes"] == 1 and eff["ranks_per_node"] == 2 and eff["rank_shift"] == 1
    assert eff["hints"]["romio_cb_write"] == "disable" and eff["hints"]["cb_buffer_size"] == "8388608"
    assert "MPICH" in eff["mpi_library"]
    assert [r["verify_errors"] for r in doc["results"]] == [0, 0]   # rank r read what rank r+1 wrote
    assert doc["results"][0]["bytes"] == 2 * 2 * 64 * 1024
    with KB.open(kb_path) as kb:
        runs = kb.runs(RunFilter(system="mpibox"))
    assert len(runs) == 2 and all(r.hints["romio_cb_write"] == "disable" and r.collective for r in runs)


@pytest.mark.mpi
def test_mpi_fpp_posix_and_md_under_mpiexec(tmp_path):
    out = _mpirun(2, ["bench", "run", "--api", "posix", "--layout", "fpp", "-t", "8KiB", "-b", "32KiB",
                      "--random", "--dir", str(tmp_path / "d"), "--result-dir", str(tmp_path / "r"), "--json"])
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["effective"]["ranks"] == 2 and [r["verify_errors"] for r in doc["results"]] == [0, 0]
    md = _mpirun(2, ["bench", "md", "-n", "10", "--dirs-per-rank", "2", "--dir", str(tmp_path / "m"),
                     "--result-dir", str(tmp_path / "r"), "--json"])
    assert md.returncode == 0, md.stderr
    assert all(r["items"] == 40 for r in json.loads(md.stdout)["results"])


@pytest.mark.mpi
def test_error_under_mpiexec_is_one_line_and_exit_2(tmp_path):
    out = _mpirun(2, ["bench", "run", "--api", "posix", "--collective", "--dir", str(tmp_path)])
    assert out.returncode == 2
    assert out.stderr.count("Error:") == 1 and "Traceback" not in out.stderr


@pytest.mark.mpi
def test_failure_on_one_rank_aborts_the_job_instead_of_hanging(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = _mpirun(2, ["bench", "run", "-t", "4KiB", "-b", "8KiB", "--dir", str(blocker / "sub")])
    assert out.returncode != 0
    assert out.stderr.count("Error:") == 1 and "cannot create directory" in out.stderr
    assert "Traceback" not in out.stderr


def test_every_bench_option_is_documented():
    import typer.main
    doc = (Path(__file__).resolve().parent.parent / "docs" / "bench.md").read_text()
    group = typer.main.get_command(app).get_command(None, "bench")
    for name, cmd in group.commands.items():
        assert f"bench {name}" in doc
        for param in cmd.params:
            longs = [o for o in param.opts if o.startswith("--") and o not in ("--help", "--json")]
            if longs:
                assert any(o in doc for o in longs), f"bench {name} {longs[0]} is not in docs/bench.md"


def test_truncated_result_names_file_and_line(tmp_path, kb_path):
    out = runner.invoke(app, ["bench", "run", "-t", "4KiB", "-b", "8KiB", "--dir", str(tmp_path / "d"),
                              "--result-dir", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    (good,) = (tmp_path / "r").glob("*.json")
    text = good.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    bad = runner.invoke(app, ["kb", "import", str(cut), "--kb", str(kb_path)])
    assert bad.exit_code == 2 and f"{cut}:" in bad.output and "invalid or truncated" in bad.output
    assert "Traceback" not in bad.output
