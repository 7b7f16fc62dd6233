"""Run `ioadvise` in a child and measure it: exit code, stdout, stderr, wall seconds and peak RSS.

The command runs under a small parent process (a child forked from the test process would count the test's
own RSS as its peak), which reads the peak from wait4 and kills the command when its RSS passes `kill_mb` or it runs longer than
`timeout` seconds, so a command that reads without bound or waits forever leaves nothing behind when the test
fails.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

EXE = Path(sys.executable).parent / "ioadvise"

_MEASURE = """
import os, subprocess, sys, time
limit_kb, deadline = int(sys.argv[1]) * 1024, time.monotonic() + float(sys.argv[2])
p = subprocess.Popen(sys.argv[3:])
while True:
    pid, status, usage = os.wait4(p.pid, os.WNOHANG)
    if pid:
        break
    try:
        rss = next(int(ln.split()[1]) for ln in open(f"/proc/{p.pid}/status") if ln.startswith("VmRSS:"))
    except (OSError, StopIteration):
        rss = 0
    if rss > limit_kb or time.monotonic() > deadline:
        p.kill()
    time.sleep(0.02)
sys.stderr.write(f"\\npeak-rss-kb {usage.ru_maxrss}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(*args: str, timeout: float = 60, kill_mb: int = 1000, stdin: object = None,
                 cwd: str | Path | None = None) -> tuple[int, str, str, float, float]:
    """`ioadvise ARGS`: exit code, stdout, stderr (without the measurement), wall seconds, peak RSS in MB."""
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-c", _MEASURE, str(kill_mb), str(timeout), str(EXE), *args],
                       capture_output=True, timeout=timeout + 30, env={**os.environ, "COLUMNS": "300"}, stdin=stdin, cwd=cwd)
    err, _, peak = p.stderr.decode(errors="replace").rpartition("\npeak-rss-kb ")
    return p.returncode, p.stdout.decode(errors="replace"), err, time.monotonic() - t, int(peak) / 1024
