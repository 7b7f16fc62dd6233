#!/usr/bin/env bash
# Set everything up and run the main job: advice for a sample workload on the shipped reference data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if .venv/bin/ioadvise advise --help >/dev/null 2>&1; then
  exec .venv/bin/ioadvise advise --system TSUBAME3.0 --nodes 16 --ranks-per-node 28 --bytes-per-rank 1GiB \
       --api mpiio --layout shared "$@"
fi
# Until the advice engine is installed, show what the reference knowledge base holds.
exec .venv/bin/ioadvise kb stats "$@"
