#!/usr/bin/env bash
# Set up everything ioadvisor needs on a fresh Debian 12 machine: system packages (Slurm, fio, Chromium
# for the docs tests) and a virtual environment in .venv with the package and its test dependencies.
# Safe to run again: apt and pip skip what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/apt.sh
apt_ensure slurm-wlm munge fio chromium
# Open MPI for the Open MPI flavour's hint tests, Lua 5.1 (what slurmctld embeds) for the hook tests, CJK fonts so
# the browser test sees Japanese glyphs, IOzone (bookworm non-free) for the IOzone importer's tests.
apt_ensure openmpi-bin libopenmpi-dev lua5.1 liblua5.1-0 fonts-noto-cjk
apt_enable_nonfree
apt_ensure iozone3

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || quietly "python: .venv created" "$PY" -m venv .venv
quietly "pip: up to date" .venv/bin/python -m pip install --upgrade pip
quietly "pip: ioadvisor and its dependencies installed in .venv" .venv/bin/python -m pip install -e ".[all,test]"
