"""`ioadvise bench run --api hdf5 --layout shared`: one HDF5 file written and read by every rank through
h5py's `mpio` driver, run under Debian's MPICH from the parallel venv that scripts/setup-parallel-hdf5.sh
builds (scripts/test.sh builds it before the suite)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PVENV = ROOT / ".venv-phdf5"
MPIEXEC = shutil.which("mpiexec.mpich")
MiB = 1 << 20

pytestmark = pytest.mark.skipif(
    not (PVENV / "bin" / "ioadvise").exists() or MPIEXEC is None,
    reason="no parallel h5py: run scripts/setup-parallel-hdf5.sh (builds .venv-phdf5 against Debian's MPICH)")


def _pattern(rank: int) -> int:
    from ioadvisor.bench.kernel import pattern_byte
    return pattern_byte(rank)


@pytest.mark.parametrize("mode", ["--collective", "--independent"])
def test_shared_hdf5_file_through_the_mpio_driver(tmp_path, mode):
    ranks, block, xfer, segs = 2, 256 << 10, 64 << 10, 2
    res_dir = tmp_path / "results"
    p = subprocess.run([MPIEXEC, "-n", str(ranks), str(PVENV / "bin" / "ioadvise"), "bench", "run", "--api", "hdf5",
                        "--layout", "shared", mode, "--transfer-size", str(xfer), "--block-size", str(block),
                        "--segments", str(segs), "--dir", str(tmp_path / "data"), "--keep",
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
    # one HDF5 file holding every rank's blocks where IOR puts them (read back with the serial h5py)
    import h5py
    with h5py.File(tmp_path / "data" / "ioadvise-bench.h5", "r") as f:
        data = f["data"][:]
    assert data.size == total
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
