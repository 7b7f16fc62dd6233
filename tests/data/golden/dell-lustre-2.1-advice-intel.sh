#!/bin/bash
#SBATCH -N 4 --ntasks-per-node=8
#SBATCH --job-name=shared-write
#IOADVISE bytes_per_rank=1GiB api=MPIIO layout=shared
#IOADVISE outdir=results stage_in=input.h5
# >>> ioadvise wrap: generated block, rerun `ioadvise wrap` to change it
#SBATCH --nodes=8
if [ "${_ioadv_parent:-}" != "$PPID" ]; then
  _ioadv_start=$(date +%s)
  case "$0" in /*) _ioadv_self="$0";; *) _ioadv_self="$PWD/$0";; esac
  _ioadv_job="${SLURM_JOB_ID:-$$}"
  _ioadv_cwd="$PWD"
  _ioadv_out=results
  case "$_ioadv_out" in /*) ;; *) _ioadv_out="$PWD/$_ioadv_out";; esac
  mkdir -p -- "$_ioadv_out"
  _ioadv_rec_dir="$_ioadv_out"
  case "$_ioadv_rec_dir" in /*) ;; *) _ioadv_rec_dir="$PWD/$_ioadv_rec_dir";; esac
  _ioadv_rec="$_ioadv_rec_dir/ioadvise-$_ioadv_job.json"
  _ioadv_settings='{"allow_striping":true,"directives":["--nodes=8"],"hints":{"striping_factor":"24","striping_unit":"1048576"},"lifetime":"after-job","mpi":"intel","mpi_version":"5.0.1","op":"write","outdir":"results","stage_in":["input.h5"],"stripe_base":null,"stripe_count":24,"stripe_size":1048576,"tier":null}'
  _ioadv_cluster=$(printf %s "${SLURM_CLUSTER_NAME:-}" | tr -cd 'A-Za-z0-9._-')
  _ioadv_user=$(id -un 2>/dev/null | tr -cd 'A-Za-z0-9._@-')
  _ioadv_record() {
    printf '{"job_id":"%s","cluster":"%s","user":"%s","host":"%s","start":%s,"end":%s,"exit_code":%s,"staged_out_bytes":%s,"stage_out_seconds":%s,"stage_out_status":%s,"settings":%s}\n' "$_ioadv_job" "$_ioadv_cluster" "$_ioadv_user" "$(hostname 2>/dev/null)" "$_ioadv_start" "${1:-null}" "${2:-null}" "${3:-null}" "${4:-null}" "${5:-null}" "$_ioadv_settings" > "$_ioadv_rec.tmp" && mv -f -- "$_ioadv_rec.tmp" "$_ioadv_rec"
  }
  _ioadv_record
  _ioadv_finish() {
    _ioadv_rc=$?
    [ -z "${1:-}" ] || _ioadv_rc=$1
    trap '' TERM INT HUP
    if [ -z "${_ioadv_ended:-}" ]; then
    _ioadv_ended=1
    set +eu
    cd -- "$_ioadv_out" 2>/dev/null
    _ioadv_record "$(date +%s)" "$_ioadv_rc" "${_ioadv_bytes:-}" "${_ioadv_secs:-}" "${_ioadv_sorc:-}"
    fi
    exit "$_ioadv_rc"
  }
  trap _ioadv_finish EXIT
  trap '_ioadv_finish 143' TERM
  trap '_ioadv_finish 130' INT
  trap '_ioadv_finish 129' HUP
  export IOADVISE_DIR="${_ioadv_out}/ioadvise-${SLURM_JOB_ID:-$$}"
  mkdir -p -- "$IOADVISE_DIR"
  _ioadv_fs=$(stat -f -c %T "$IOADVISE_DIR" 2>/dev/null)
  if [ "$_ioadv_fs" = lustre ] || { command -v lfs >/dev/null 2>&1 && lfs getstripe -d "$IOADVISE_DIR" >/dev/null 2>&1; }; then
    if lfs setstripe -c 24 -S 1M "$IOADVISE_DIR"; then
      echo "ioadvise: striping: -c 24 -S 1M set on $IOADVISE_DIR (write large files there)" >&2
    else
      echo "ioadvise: striping: lfs setstripe failed on $IOADVISE_DIR" >&2
    fi
  else
    echo "ioadvise: striping: not set, $IOADVISE_DIR is not on Lustre" >&2
  fi
  printf '%s\n' 'striping_factor 24' 'striping_unit 1048576' > "$IOADVISE_DIR/romio-hints"
  export ROMIO_HINTS="$IOADVISE_DIR/romio-hints"
  export I_MPI_EXTRA_FILESYSTEM=on
  export I_MPI_EXTRA_FILESYSTEM_LIST=lustre
  export IOADVISE_HINTS=striping_factor=24,striping_unit=1048576
  echo "ioadvise: hints: striping_factor=24,striping_unit=1048576 for Intel MPI 5.x-2018: ROMIO_HINTS=$ROMIO_HINTS I_MPI_EXTRA_FILESYSTEM=$I_MPI_EXTRA_FILESYSTEM I_MPI_EXTRA_FILESYSTEM_LIST=$I_MPI_EXTRA_FILESYSTEM_LIST" >&2
  export IOADVISE_OUTDIR="$_ioadv_out"
  echo 'ioadvise: staging: none (no scratch tier)' >&2
  if grep -qF '# >>> ioadvise wrap' "$_ioadv_self" 2>/dev/null; then
    _ioadv_parent=$$ /bin/bash "$_ioadv_self" "$@"
    exit $?
  fi
fi
unset _ioadv_parent
# <<< ioadvise wrap
module load mpi
srun ./app --out "$IOADVISE_DIR/out"
