#!/usr/bin/env bash
# Set everything up and run the main job: advice for sample workloads on the shipped reference data.
# First a single-client shared-file write on HA8000 (measured runs give a predicted bandwidth), then a
# TSUBAME3.0-sized shared-file MPI-IO job (the paper publishes comparisons, which decide the settings).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ioadvise advise --system HA8000 --nodes 1 --ranks-per-node 1 --bytes-per-rank 8GiB \
  --api posix --layout shared
echo
exec .venv/bin/ioadvise advise --system TSUBAME3.0 --nodes 16 --ranks-per-node 28 --bytes-per-rank 1GiB \
  --api mpiio --layout shared "$@"
