#!/usr/bin/env bash
# Set everything up (system packages, .venv) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The shared-file HDF5 benchmark tests (tests/test_bench_phdf5.py) need a parallel h5py in .venv-phdf5. Building
# it from source takes about 7 minutes on a clean 2-core machine (20 s with pip's wheel cache), so it is opt-in:
# IOADVISE_PARALLEL_HDF5=1 builds it first; otherwise those tests run if it is there and are skipped if not.
if [ "${IOADVISE_PARALLEL_HDF5:-0}" = 1 ]; then
  bash scripts/setup-parallel-hdf5.sh
fi
# -rs: the reason of every skipped test is printed at the end (a missing tool or environment, never silent)
exec .venv/bin/python -m pytest -q -rs -p no:cacheprovider "$@"
