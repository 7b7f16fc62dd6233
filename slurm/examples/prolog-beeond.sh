#!/bin/bash
# Example Slurm Prolog for a BeeOND-style per-job scratch tier (run as root on each node of the job).
# Jobs that ask for the feature (sbatch --constraint=BEEOND) get /mnt/odfs/$SLURM_JOB_ID; a real site
# starts BeeOND here (beeond start -n NODEFILE -d /local/beeond -c /mnt/odfs/$SLURM_JOB_ID ...).
# Matches a center config tier with  request = "--constraint=BEEOND"  mount = "/mnt/odfs/$SLURM_JOB_ID".
MOUNT_ROOT=${MOUNT_ROOT:-/mnt/odfs}
FEATURE=${FEATURE:-BEEOND}
# a job id, or nothing is done (an empty id would hand $MOUNT_ROOT itself to the job's user)
case "${SLURM_JOB_ID:-}" in
  ''|*[!0-9_]*) exit 0;;
esac
feats="${SLURM_JOB_CONSTRAINTS:-}"
if [ -z "$feats" ]; then
  feats=$(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.* Features=\([^ ]*\).*/\1/p')
fi
# the feature as a whole name among the constraint's (separated by & | , [ ] ( ) and *count), not a part of one
case " $(printf '%s' "$feats" | tr '&|,[]()*' '        ') " in
  *" $FEATURE "*)
    mkdir -p "$MOUNT_ROOT/$SLURM_JOB_ID" || exit 1
    chown "${SLURM_JOB_UID:-0}" "$MOUNT_ROOT/$SLURM_JOB_ID"
    chmod 700 "$MOUNT_ROOT/$SLURM_JOB_ID";;
esac
exit 0
