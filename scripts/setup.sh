#!/usr/bin/env bash
# Set up everything ioadvisor needs on a fresh Debian 12 machine: system packages (Slurm, fio, Chromium
# for the docs tests) and a virtual environment in .venv with the package and its test dependencies.
# Safe to run again: apt and pip skip what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(slurm-wlm munge fio chromium)
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
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[all,test]"
