#!/usr/bin/env bash
# Build a second virtual environment, .venv-phdf5, whose h5py is parallel (driver="mpio"): mpi4py and h5py
# compiled against Debian's MPICH and its MPI-enabled HDF5, with ioadvisor installed in it. The main .venv
# keeps the PyPI MPICH wheel; the two MPI libraries must not meet in one process, hence the separate venv.
# Used by the parallel-HDF5 tests of `ioadvise bench` (tests/test_bench_phdf5.py). Safe to run again: it does
# nothing when .venv-phdf5 already has a parallel h5py.
set -euo pipefail
cd "$(dirname "$0")/.."

V=${IOADVISE_PHDF5_VENV:-.venv-phdf5}   # another path lets the build be timed or tried without touching this one
if [ -x "$V/bin/python" ] && "$V/bin/python" -c "import h5py, sys; sys.exit(not h5py.get_config().mpi)" 2>/dev/null; then
  exit 0
fi
. scripts/apt.sh
apt_ensure libhdf5-mpich-dev mpich pkg-config
PY=${PYTHON:-python3}
[ -x "$V/bin/python" ] || quietly "python: $V created" "$PY" -m venv "$V"
quietly "pip: build tools installed in $V" "$V/bin/python" -m pip install --upgrade pip setuptools wheel Cython numpy pkgconfig
quietly "pip: mpi4py built against MPICH" \
  env CC=mpicc.mpich MPICC=mpicc.mpich "$V/bin/python" -m pip install --no-binary=mpi4py mpi4py
quietly "pip: parallel h5py built against MPICH's HDF5" \
  env CC=mpicc.mpich HDF5_MPI=ON HDF5_PKGCONFIG_NAME=hdf5-mpich \
  "$V/bin/python" -m pip install --no-binary=h5py --no-build-isolation h5py
quietly "pip: ioadvisor installed in $V" "$V/bin/python" -m pip install -e .
"$V/bin/python" -c "import h5py, sys; sys.exit(not h5py.get_config().mpi)"
