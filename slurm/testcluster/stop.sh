#!/bin/bash
# Stop the test cluster started by start.sh DIR: the daemons named in DIR's pid files, nothing else.
set -u
[ $# -eq 1 ] || { echo "usage: stop.sh DIR" >&2; exit 1; }
D=$(cd "$1" 2>/dev/null && pwd) || exit 0
for name in slurmd slurmctld; do
  f="$D/$name.pid"
  [ -s "$f" ] || continue
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$f"
done
exit 0
