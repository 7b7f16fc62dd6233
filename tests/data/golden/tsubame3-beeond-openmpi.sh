#!/bin/bash
#SBATCH -N 2 -n 64 -C "nvme"
#SBATCH --output=logs/slurm-%j.out
#IOADVISE bytes_per_rank=256MiB api=POSIX layout=fpp files=4 lifetime=job
# >>> ioadvise wrap: generated block, rerun `ioadvise wrap` to change it
#SBATCH --constraint=nvme&BEEOND
if [ "${_ioadv_parent:-}" != "$PPID" ]; then
  _ioadv_start=$(date +%s)
  case "$0" in /*) _ioadv_self="$0";; *) _ioadv_self="$PWD/$0";; esac
  _ioadv_job="${SLURM_JOB_ID:-$$}"
  _ioadv_cwd="$PWD"
  _ioadv_out="$PWD"
  case "$_ioadv_out" in /*) ;; *) _ioadv_out="$PWD/$_ioadv_out";; esac
  mkdir -p -- "$_ioadv_out"
  _ioadv_rec_dir=logs
  case "$_ioadv_rec_dir" in /*) ;; *) _ioadv_rec_dir="$PWD/$_ioadv_rec_dir";; esac
  _ioadv_rec="$_ioadv_rec_dir/ioadvise-$_ioadv_job.json"
  _ioadv_settings='{"allow_striping":true,"directives":[],"hints":{},"lifetime":"job","mpi":"openmpi","mpi_version":"2.1.2","op":"write","outdir":null,"stage_in":["input"],"stripe_base":null,"stripe_count":4,"stripe_size":null,"tier":{"mount":"/beeond","name":"beeond","request":"--constraint=BEEOND","stage":true}}'
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
    if [ -n "${_ioadv_staged:-}" ]; then
      _ioadv_bytes=0
      _ioadv_sorc=0
      _ioadv_t0=$(date +%s)
      for _ioadv_f in "$_ioadv_scratch"/* "$_ioadv_scratch"/.[!.]*; do
        [ -e "$_ioadv_f" ] || continue
        case "${_ioadv_f##*/}" in input) continue;; esac
        cp -R -- "$_ioadv_f" "$_ioadv_out"/ || { _ioadv_sorc=1; echo "ioadvise: stage-out of $_ioadv_f failed" >&2; }
        _ioadv_n=$(du -sb -- "$_ioadv_f" 2>/dev/null | cut -f1)
        case "$_ioadv_n" in
          ''|*[!0-9]*) _ioadv_bytes=null;;
          *) [ "$_ioadv_bytes" = null ] || _ioadv_bytes=$((_ioadv_bytes + _ioadv_n));;
        esac
      done
      _ioadv_secs=$(( $(date +%s) - _ioadv_t0 ))
      echo "ioadvise: staging: $_ioadv_bytes bytes staged out to $_ioadv_out in ${_ioadv_secs}s, exit status $_ioadv_sorc" >&2
    fi
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
    if lfs setstripe -c 4 "$IOADVISE_DIR"; then
      echo "ioadvise: striping: -c 4 set on $IOADVISE_DIR (write large files there)" >&2
    else
      echo "ioadvise: striping: lfs setstripe failed on $IOADVISE_DIR" >&2
    fi
  else
    echo "ioadvise: striping: not set, $IOADVISE_DIR is not on Lustre" >&2
  fi
  echo 'ioadvise: hints: not applied (MPI-IO hints are not applied: the job uses POSIX, which does not read them.)' >&2
  _ioadv_scratch=/beeond
  if [ -d "$_ioadv_scratch" ] && [ -w "$_ioadv_scratch" ]; then
    export IOADVISE_SCRATCH="$_ioadv_scratch"
    cp -R -- "$_ioadv_cwd"/input "$_ioadv_scratch"/ || echo 'ioadvise: stage-in of input failed' >&2
    _ioadv_staged=1
    echo "ioadvise: staging: 1 item(s) copied in to $_ioadv_scratch; new files are copied back to $_ioadv_out at the end" >&2
    export IOADVISE_OUTDIR="$_ioadv_scratch"
    cd -- "$_ioadv_scratch" || exit 1
  else
    echo 'ioadvise: tier beeond is not mounted; writing to the persistent directory' >&2
    export IOADVISE_OUTDIR="$_ioadv_out"
  fi
  if grep -qF '# >>> ioadvise wrap' "$_ioadv_self" 2>/dev/null; then
    _ioadv_parent=$$ /bin/bash "$_ioadv_self" "$@"
    exit $?
  fi
fi
unset _ioadv_parent
# <<< ioadvise wrap
srun ./app --dir "$IOADVISE_DIR" --scratch $SCRATCH/tmp
