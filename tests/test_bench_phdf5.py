"""`ioadvise bench run --api hdf5 --layout shared`: one HDF5 file written and read by every rank through
h5py's `mpio` driver, run under Debian's MPICH from the parallel venv that scripts/setup-parallel-hdf5.sh
builds (opt-in: `IOADVISE_PARALLEL_HDF5=1 scripts/test.sh` builds it before the suite)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PVENV = Path(os.environ.get("IOADVISE_PHDF5_VENV") or ROOT / ".venv-phdf5")   # as in the set-up script
MPIEXEC = shutil.which("mpiexec.mpich")
MiB = 1 << 20

pytestmark = pytest.mark.skipif(
    not (PVENV / "bin" / "ioadvise").exists() or MPIEXEC is None,
    reason="no parallel h5py: run scripts/setup-parallel-hdf5.sh (builds .venv-phdf5 against Debian's MPICH)")


def _pattern(rank: int) -> int:
    from ioadvisor.bench.kernel import pattern_byte
    return pattern_byte(rank)


@pytest.mark.parametrize("mode, align", [("--collective", 0), ("--independent", 0), ("--collective", 1 << 20)])
def test_shared_hdf5_file_through_the_mpio_driver(tmp_path, mode, align):
    ranks, block, xfer, segs = 2, 256 << 10, 64 << 10, 2
    res_dir = tmp_path / "results"
    p = subprocess.run([MPIEXEC, "-n", str(ranks), str(PVENV / "bin" / "ioadvise"), "bench", "run", "--api", "hdf5",
                        "--layout", "shared", mode, "--transfer-size", str(xfer), "--block-size", str(block),
                        "--segments", str(segs), "--dir", str(tmp_path / "data"), "--keep",
                        "--hints", "cb_buffer_size=8388608,romio_cb_write=enable", "--hdf5-alignment", str(align),
                        "--result-dir", str(res_dir), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["effective"]["ranks"] == ranks and doc["effective"]["collective"] == (mode == "--collective")
    total = segs * ranks * block
    for r in doc["results"]:
        assert r["bytes"] == total and r["verify_errors"] == 0       # reads saw the neighbour rank's pattern
        (seconds,) = r["seconds"]
        assert r["values"] == [pytest.approx(total / seconds / MiB)]
    # the hints came back from MPI_File_get_info on the file HDF5 opened: the requested ones plus ROMIO's own
    eff = doc["effective"]
    assert eff["hints_source"] == "MPI_File_get_info"
    assert eff["hints"]["cb_buffer_size"] == "8388608" and eff["hints"]["romio_cb_write"] == "enable"
    assert "romio_filesystem_type" in eff["hints"] and "cb_nodes" in eff["hints"]
    # HDF5 says whether the transfers really were collective
    h5 = eff["hdf5"]
    assert h5["parallel"] is True and h5["hdf5_version"].startswith("1.")
    want = "contiguous-collective" if mode == "--collective" else "independent"
    assert h5["io_mode"] == {"write": want, "read": want}
    if mode == "--collective":
        assert "no_collective_cause" not in h5 and not [w for w in doc["warnings"] if "HDF5" in w]
    assert h5["data_offset"] > 0 and h5["data_offset"] % (align or 1) == 0
    # one HDF5 file holding every rank's blocks where IOR puts them (read back with the serial h5py)
    import h5py
    path = tmp_path / "data" / "ioadvise-bench.h5"
    with h5py.File(path, "r") as f:
        assert list(f) == ["data"]
        assert f["data"].id.get_offset() == h5["data_offset"]
        data = f["data"][:]
    assert data.size == total and path.stat().st_size >= h5["data_offset"] + total
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["ioadvise-bench.h5"]
    for seg in range(segs):
        for rank in range(ranks):
            start = (seg * ranks + rank) * block
            assert (data[start:start + block] == _pattern(rank)).all()
    # the result file imports as HDF5 shared runs with the collective mode
    out = subprocess.run([str(Path(sys.executable).parent / "ioadvise"), "kb", "import", str(res_dir),
                          "--kb", str(tmp_path / "kb.sqlite"), "--json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    runs = json.loads(subprocess.run([str(Path(sys.executable).parent / "ioadvise"), "kb", "list", "--kb",
                                      str(tmp_path / "kb.sqlite"), "--api", "hdf5", "--json"],
                                     capture_output=True, text=True, timeout=60).stdout)
    assert {(r["op"], r["layout"], r["collective"], r["ranks"]) for r in runs} == \
        {(op, "shared", mode == "--collective", ranks) for op in ("write", "read")}


def test_read_only_run_reports_the_timed_phase_only(tmp_path):
    """A read-only run writes its file first, untimed; the I/O mode it records is the read's."""
    p = subprocess.run([MPIEXEC, "-n", "2", str(PVENV / "bin" / "ioadvise"), "bench", "run", "--api", "hdf5",
                        "--layout", "shared", "--collective", "--ops", "read", "-t", "64KiB", "-b", "128KiB",
                        "--dir", str(tmp_path / "data"), "--result-dir", str(tmp_path / "results"), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [r["op"] for r in doc["results"]] == ["read"] and doc["results"][0]["verify_errors"] == 0
    assert doc["effective"]["hdf5"]["io_mode"] == {"read": "contiguous-collective"}
    assert not (tmp_path / "data" / "ioadvise-bench.h5").exists()   # removed without --keep
