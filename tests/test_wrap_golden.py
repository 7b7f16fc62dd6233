"""Whole wrapped job scripts, byte for byte: `ioadvise wrap` on fixed scripts and options for several centers
(data/centers/*.toml) and MPI flavours must write exactly tests/data/golden/NAME.sh.

What must not happen: a change to the wrapper, the renderer, the advice or a center file that changes one byte
of a wrapped script without anyone deciding so. The wrapped text holds no job id, time or host (the block reads
them when the job runs), and advice comes from the shipped reference data only (an empty KB in a private
$XDG_DATA_HOME, no site centers), so the files hold on any machine.

When a change is meant, regenerate the files and review the diff before committing it:

    PYTHONPATH=. .venv/bin/python tests/test_wrap_golden.py --write
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "data" / "golden"
# the environment a site could use to change what wrap reads; the cases run without it
SITE_ENV = ("IOADVISE_KB", "IOADVISE_CENTERS", "IOADVISE_CENTER_KB", "IOADVISE_DATA")

SHARED = """#!/bin/bash
#SBATCH -N 4 --ntasks-per-node=8
#SBATCH --job-name=shared-write
#IOADVISE bytes_per_rank=1GiB api=MPIIO layout=shared
#IOADVISE outdir=results stage_in=input.h5
module load mpi
srun ./app --out "$IOADVISE_DIR/out"
"""
FPP = """#!/bin/bash
#SBATCH -N 2 -n 64 -C "nvme"
#SBATCH --output=logs/slurm-%j.out
#IOADVISE bytes_per_rank=256MiB api=POSIX layout=fpp files=4 lifetime=job
srun ./app --dir "$IOADVISE_DIR" --scratch $SCRATCH/tmp
"""
READ = """#!/bin/sh
#SBATCH --nodes=1 --ntasks-per-node=16
#IOADVISE op=read api=MPIIO layout=shared bytes_per_rank=512MiB
mpirun ./reader "$IOADVISE_DIR/in.h5"
"""
QUOTED = """#!/bin/bash
#SBATCH -N 2
#IOADVISE stage-in=x outdir="my out" api=MPIIO  # a quoted directory
srun ./app
"""

# name: (script, wrap options)
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ha8000-advice-mpich": (SHARED, ("--center", "HA8000")),
    "dell-lustre-2.1-advice-intel": (SHARED, ("--center", "Dell-EE-Lustre-2.1", "-N", "8")),
    "tsubame3-beeond-openmpi": (FPP, ("--center", "TSUBAME3.0", "--tier", "beeond", "--stripe-count", "4",
                                      "--hints", "romio_cb_write=disable", "--stage-in", "input")),
    "pixstor-gpfs-openmpi": (SHARED, ("--center", "PixStor-NVMe", "--stripe-count", "8",
                                      "--hints", "romio_cb_write=enable")),
    "no-center-cray": (SHARED, ("--mpi", "cray", "--stripe-count", "8", "--stripe-size", "4MiB",
                                "--hints", "romio_cb_write=enable,cb_nodes=4")),
    "no-center-mvapich2-read": (READ, ("--mpi", "mvapich2", "--stripe-count", "2", "--hints", "cb_nodes=2")),
    "no-center-openmpi-quoted-outdir": (QUOTED, ("--mpi", "openmpi@4.1.4", "--stripe-count", "-1",
                                                 "--outdir", "out dir", "--hints", "romio_ds_write=disable")),
    "no-center-mpich-quoted-outdir": (QUOTED, ("--stripe-size", "1MiB", "--hints", "romio_cb_read=enable")),
}


def wrapped(name: str, workdir: Path) -> str:
    """The script `ioadvise wrap` writes for one case (run in `workdir`, where the case's script is job.sh)."""
    from typer.testing import CliRunner
    from ioadvisor.cli import app
    script, args = CASES[name]
    src, out = workdir / "job.sh", workdir / f"{name}.sh"
    src.write_text(script)
    r = CliRunner().invoke(app, ["wrap", str(src), "-o", str(out), *args])
    assert r.exit_code == 0, (name, r.output)
    return out.read_text()


@pytest.fixture
def no_site(monkeypatch, tmp_path):
    for k in SITE_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrapped_script_is_byte_identical(name, tmp_path, no_site):
    expected = (GOLDEN / f"{name}.sh").read_text()
    got = wrapped(name, tmp_path)
    assert got == expected, f"{name}: the wrapped script changed; if meant, regenerate (see this module's docstring)"


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_script_is_valid_shell(name):
    """A golden file that bash cannot parse would pin a broken wrapper."""
    p = subprocess.run(["bash", "-n", str(GOLDEN / f"{name}.sh")], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr


def test_every_golden_file_is_a_case():
    """A case removed from CASES must take its file along (a stale file would be checked by nothing)."""
    assert sorted(p.stem for p in GOLDEN.glob("*.sh")) == sorted(CASES)


def _write() -> None:
    for k in SITE_ENV:
        os.environ.pop(k, None)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_DATA_HOME"] = str(Path(tmp) / "data")
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for stale in set(GOLDEN.glob("*.sh")) - {GOLDEN / f"{n}.sh" for n in CASES}:
            stale.unlink()
        for name in sorted(CASES):
            text = wrapped(name, Path(tmp))
            path = GOLDEN / f"{name}.sh"
            old = path.read_text() if path.exists() else None
            path.write_text(text)
            print(f"{'unchanged' if old == text else 'written'}: {path.relative_to(ROOT)}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: tests/test_wrap_golden.py --write   (regenerates tests/data/golden/*.sh)")
    _write()
