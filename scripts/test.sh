#!/usr/bin/env bash
# Set everything up (system packages, .venv) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# parallel h5py for the shared-HDF5 benchmark tests; if the build fails, those tests are skipped and say why
bash scripts/setup-parallel-hdf5.sh || echo "warning: parallel HDF5 build failed; tests/test_bench_phdf5.py will be skipped" >&2
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
