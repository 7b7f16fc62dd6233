#!/bin/bash
# Example Slurm Epilog matching prolog-beeond.sh: remove the per-job scratch directory (a real site stops
# BeeOND here: beeond stop -n NODEFILE -L -d). Results must have been staged out by the job itself;
# `ioadvise wrap --tier beeond` adds that stage-out in an EXIT trap.
MOUNT_ROOT=${MOUNT_ROOT:-/mnt/odfs}
case "${SLURM_JOB_ID:-}" in
  ''|*[!0-9_]*) exit 0;;
esac
[ -d "$MOUNT_ROOT/$SLURM_JOB_ID" ] && rm -rf -- "${MOUNT_ROOT:?}/$SLURM_JOB_ID"
exit 0
