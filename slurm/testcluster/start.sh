#!/bin/bash
# Start a single-node Slurm cluster (slurmctld + slurmd) with every file under DIR.
#
#   slurm/testcluster/start.sh DIR [OWNER_PID]   prints the environment to use it (SLURM_CONF=...)
#   slurm/testcluster/stop.sh DIR
#
# With OWNER_PID, a small watchdog stops the cluster once that process has gone (a test run that was
# killed cannot leave daemons behind).
#
# The node offers Feature=BEEOND,nvme. Its Prolog creates DIR/odfs/$SLURM_JOB_ID for jobs that asked for
# BEEOND and its Epilog removes it again: the way a BeeOND site mounts a per-job file system under
# /mnt/odfs/$SLURM_JOB_ID. DIR/center.toml describes this "center" for `ioadvise wrap --center`.
# job_submit.lua and cli_filter.lua from slurm/ are copied next to slurm.conf and loaded.
set -euo pipefail

die() { echo "start.sh: $*" >&2; exit 1; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: start.sh DIR [OWNER_PID]"
owner=${2:-}
case "$owner" in *[!0-9]*) die "OWNER_PID must be a number";; esac
here=$(cd "$(dirname "$0")" && pwd)
hooks=$(cd "$here/.." && pwd)
mkdir -p "$1"
D=$(cd "$1" && pwd)
case "$D" in *[[:space:]]*) die "DIR must not contain spaces: $D";; esac
for p in slurmctld slurmd scontrol sinfo; do command -v "$p" >/dev/null || die "$p not found (apt-get install slurm-wlm)"; done

# a cluster already running in DIR is stopped first, so start.sh can be rerun
"$here/stop.sh" "$D" >/dev/null 2>&1 || true
rm -rf "$D/state" "$D/spool"
mkdir -p "$D/etc" "$D/state" "$D/spool" "$D/odfs" "$D/log"

# Two free TCP ports (bind to port 0 and read back what the kernel gave).
read -r ctld_port slurmd_port < <(python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
for s in socks:
    s.close()
PY
)

# CPUs and memory: what slurmd sees, capped so the line never exceeds the hardware.
hw=$(slurmd -C | head -1)
cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hw"); cpus=${cpus:-1}
mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$hw"); mem=${mem:-1000}
[ "$cpus" -gt 4 ] && cpus=4
[ "$mem" -gt 2000 ] && mem=2000
mem=$(( mem > 200 ? mem - 100 : mem ))   # leave room: slurmd refuses a node larger than it measures
node=ci1

cat > "$D/etc/prolog.sh" <<PRO
#!/bin/bash
# Emulated BeeOND: a per-job directory for jobs whose constraints include BEEOND.
feats="\${SLURM_JOB_CONSTRAINTS:-}"
if [ -z "\$feats" ] && [ -n "\${SLURM_JOB_ID:-}" ]; then
  feats=\$(scontrol show job -o "\$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.* Features=\([^ ]*\).*/\1/p')
fi
case "\$feats" in
  *BEEOND*) mkdir -p "$D/odfs/\$SLURM_JOB_ID" && chmod 1777 "$D/odfs/\$SLURM_JOB_ID"
            echo "\$(date +%s) create \$SLURM_JOB_ID" >> "$D/log/odfs.log";;
esac
exit 0
PRO
cat > "$D/etc/epilog.sh" <<EPI
#!/bin/bash
if [ -n "\${SLURM_JOB_ID:-}" ] && [ -d "$D/odfs/\$SLURM_JOB_ID" ]; then
  rm -rf -- "$D/odfs/\$SLURM_JOB_ID"
  echo "\$(date +%s) remove \$SLURM_JOB_ID" >> "$D/log/odfs.log"
fi
exit 0
EPI
chmod 755 "$D/etc/prolog.sh" "$D/etc/epilog.sh"
cp "$hooks/job_submit.lua" "$hooks/cli_filter.lua" "$D/etc/"

cat > "$D/etc/slurm.conf" <<CONF
ClusterName=testcluster
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
MailProg=/bin/true
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=3600
SchedulerParameters=sched_interval=1
# a cancelled job's EXIT trap stages out before SIGKILL, and RPCs wait for a loaded machine's daemons
KillWait=300
MessageTimeout=60
Prolog=$D/etc/prolog.sh
Epilog=$D/etc/epilog.sh
JobSubmitPlugins=lua
CliFilterPlugins=lua
NodeName=$node NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Feature=BEEOND,nvme State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

cat > "$D/center.toml" <<TOML
# The test cluster started by slurm/testcluster/start.sh: ext4 home, emulated BeeOND per-job scratch.
name = "testcluster"
title = "Single-node Slurm test cluster"
mpi = "mpich"

[[filesystems]]
name = "home"
type = "ext4"
striping = "none"
persistent = true

[[filesystems]]
name = "beeond"
type = "beegfs"
striping = "none"
persistent = false

[[tiers]]
name = "beeond"
filesystem = "beeond"
kind = "per-job"
request = "--constraint=BEEOND"
mount = "$D/odfs/\$SLURM_JOB_ID"
stage = true
TOML

export SLURM_CONF="$D/etc/slurm.conf"
slurmctld -f "$SLURM_CONF" || die "slurmctld did not start; see $D/log/slurmctld.log"
slurmd -f "$SLURM_CONF" -N "$node" || die "slurmd did not start; see $D/log/slurmd.log"

# wait (at most ~20 s) for the node to be idle
for _ in $(seq 1 100); do
  state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.2
done
if [ "$state" != idle ]; then
  tail -n 20 "$D/log/slurmctld.log" "$D/log/slurmd.log" >&2 || true
  die "node $node not idle (state: ${state:-none})"
fi
if [ -n "$owner" ]; then
  setsid sh -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; exec "$2" "$3"' watchdog "$owner" "$here/stop.sh" "$D" \
    </dev/null >/dev/null 2>&1 &
  echo $! > "$D/watchdog.pid"
fi
echo "SLURM_CONF=$SLURM_CONF"
