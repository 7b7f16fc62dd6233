#!/usr/bin/env bash
# Build a second virtual environment, .venv-phdf5, whose h5py is parallel (driver="mpio"): mpi4py and h5py
# compiled against Debian's MPICH and its MPI-enabled HDF5, with ioadvisor installed in it. The main .venv
# keeps the PyPI MPICH wheel; the two MPI libraries must not meet in one process, hence the separate venv.
# Used by the parallel-HDF5 tests of `ioadvise bench` (tests/test_bench_phdf5.py). Safe to run again: it does
# nothing when .venv-phdf5 already has a parallel h5py.
set -euo pipefail
cd "$(dirname "$0")/.."

V=.venv-phdf5
if [ -x "$V/bin/python" ] && "$V/bin/python" -c "import h5py, sys; sys.exit(not h5py.get_config().mpi)" 2>/dev/null; then
  exit 0
fi
APT_PACKAGES=(libhdf5-mpich-dev mpich pkg-config)
if [ "${IOADVISE_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
PY=${PYTHON:-python3}
[ -x "$V/bin/python" ] || "$PY" -m venv "$V"
"$V/bin/python" -m pip install -q --upgrade pip setuptools wheel Cython numpy pkgconfig
CC=mpicc.mpich MPICC=mpicc.mpich "$V/bin/python" -m pip install -q --no-binary=mpi4py mpi4py
CC=mpicc.mpich HDF5_MPI=ON HDF5_PKGCONFIG_NAME=hdf5-mpich \
  "$V/bin/python" -m pip install -q --no-binary=h5py --no-build-isolation h5py
"$V/bin/python" -m pip install -q -e .
"$V/bin/python" -c "import h5py, sys; sys.exit(not h5py.get_config().mpi)"
