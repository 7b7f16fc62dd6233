"""Reading what a command wrote to a pseudo-terminal, for tests that need ioadvise to see a terminal."""
from __future__ import annotations

import os
import select
import subprocess


def read_terminal(master: int, proc: subprocess.Popen) -> bytes:
    """Everything written to the pseudo-terminal `master` until `proc` closes it or exits (the slave end must be
    closed in this process already)."""
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:              # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out
