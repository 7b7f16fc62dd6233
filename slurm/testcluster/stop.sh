#!/bin/bash
# Stop the test cluster started by start.sh DIR: the daemons named in DIR's pid files, nothing else.
set -u
[ $# -eq 1 ] || { echo "usage: stop.sh DIR" >&2; exit 1; }
D=$(cd "$1" 2>/dev/null && pwd) || exit 0
pids=()
for name in slurmd slurmctld; do
  f="$D/$name.pid"
  [ -s "$f" ] || continue
  pid=$(cat "$f")
  case "$pid" in ''|*[!0-9]*) continue;; esac
  kill "$pid" 2>/dev/null && pids+=("$pid")
  rm -f "$f"
done
# both got SIGTERM at once; wait up to 5 s, then SIGKILL what is left
for _ in $(seq 1 50); do
  alive=0
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
  [ $alive = 0 ] && break
  sleep 0.1
done
for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && kill -9 "$pid"; done
# the watchdog (if any) is no longer needed; it is only ever a `sh` loop started by start.sh
if [ -s "$D/watchdog.pid" ] && [ "$(cat "$D/watchdog.pid")" != "$$" ]; then
  kill "$(cat "$D/watchdog.pid")" 2>/dev/null
fi
rm -f "$D/watchdog.pid"
exit 0
