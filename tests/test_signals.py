"""SIGINT, SIGTERM and SIGHUP end a command with exit 128+n after its cleanup ran, never exit 0 or 1 and never a
traceback. The command signals itself from inside (no timing: the signal arrives at a known point)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

# `ioadvise systems` with its library call replaced by one that signals the process, then would run on; the
# `finally` of the replacement records that unwinding ran it
SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    import ioadvisor.center.systems as systems
    NAME, MARKER = sys.argv[1], sys.argv[2]
    def known_systems(store):
        try:
            os.kill(os.getpid(), getattr(signal, NAME))
            time.sleep(30)
            return []
        finally:
            open(MARKER, "w").write("cleaned")
    systems.known_systems = known_systems
    sys.argv = ["ioadvise", "systems"]
    from ioadvisor.cli import main
    main()
""")


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_signal_unwinds_and_exits_128_plus_n(tmp_path, name):
    marker = tmp_path / "cleaned"
    p = subprocess.run([sys.executable, "-c", SCRIPT, name, str(marker)], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path, env={**os.environ, "IOADVISE_KB": str(tmp_path / "kb.sqlite")})
    signum = getattr(signal, name)
    assert p.returncode == 128 + signum, (p.returncode, p.stderr)   # not 0, not click's 1 ('Aborted!')
    assert marker.read_text() == "cleaned"                          # the finally block ran before exit
    assert "Traceback" not in p.stderr
    assert p.stdout == ""                                           # no half a table


def test_ignored_sighup_stays_ignored(tmp_path):
    """Under nohup (SIGHUP ignored) a closed terminal does not end the command."""
    marker = tmp_path / "cleaned"
    script = "import signal; signal.signal(signal.SIGHUP, signal.SIG_IGN)\n" + SCRIPT.replace("time.sleep(30)", "")
    p = subprocess.run([sys.executable, "-c", script, "SIGHUP", str(marker)], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path, env={**os.environ, "IOADVISE_KB": str(tmp_path / "kb.sqlite")})
    assert p.returncode == 0, p.stderr
