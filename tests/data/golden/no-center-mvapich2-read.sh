#!/bin/sh
#SBATCH --nodes=1 --ntasks-per-node=16
#IOADVISE op=read api=MPIIO layout=shared bytes_per_rank=512MiB
# >>> ioadvise wrap: generated block, rerun `ioadvise wrap` to change it
if [ "${_ioadv_parent:-}" != "$PPID" ]; then
  _ioadv_start=$(date +%s)
  case "$0" in /*) _ioadv_self="$0";; *) _ioadv_self="$PWD/$0";; esac
  _ioadv_job="${SLURM_JOB_ID:-$$}"
  _ioadv_cwd="$PWD"
  _ioadv_out="$PWD"
  case "$_ioadv_out" in /*) ;; *) _ioadv_out="$PWD/$_ioadv_out";; esac
  mkdir -p -- "$_ioadv_out"
  _ioadv_rec_dir="$_ioadv_out"
  case "$_ioadv_rec_dir" in /*) ;; *) _ioadv_rec_dir="$PWD/$_ioadv_rec_dir";; esac
  _ioadv_rec="$_ioadv_rec_dir/ioadvise-$_ioadv_job.json"
  _ioadv_settings='{"allow_striping":true,"directives":[],"hints":{"cb_nodes":"2"},"lifetime":"after-job","mpi":"mvapich2","mpi_version":null,"op":"read","outdir":null,"stage_in":[],"stripe_base":null,"stripe_count":null,"stripe_size":null,"tier":null}'
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
  echo 'ioadvise: striping: A read job cannot change the layout of files that already exist (striping is fixed when a file is created), so no lfs setstripe. If the input'"'"'s layout is the problem, restripe it once before the job: `lfs migrate -c 2 FILE`, or copy it into a directory set with `lfs setstripe`.' >&2
  printf '%s\n' 'cb_nodes 2' > "$IOADVISE_DIR/romio-hints"
  export ROMIO_HINTS="$IOADVISE_DIR/romio-hints"
  export IOADVISE_HINTS=cb_nodes=2
  echo "ioadvise: hints: cb_nodes=2 for MVAPICH2: ROMIO_HINTS=$ROMIO_HINTS" >&2
  export IOADVISE_OUTDIR="$_ioadv_out"
  echo 'ioadvise: staging: none (no scratch tier)' >&2
  if grep -qF '# >>> ioadvise wrap' "$_ioadv_self" 2>/dev/null; then
    _ioadv_parent=$$ /bin/sh "$_ioadv_self" "$@"
    exit $?
  fi
fi
unset _ioadv_parent
# <<< ioadvise wrap
mpirun ./reader "$IOADVISE_DIR/in.h5"
