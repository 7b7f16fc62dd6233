"""Progress with an ETA on stderr for long commands, and none of it with --json or when stderr is no terminal."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from tests.terminal import read_terminal

EXE = Path(sys.executable).parent / "ioadvise"
HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")


def _big_csv(path: Path, n: int = 40_000) -> Path:
    path.write_text(HEADER + "\n" + "".join(f"p,sysPr,lustre,8,write,POSIX,fpp,,1,{i % 64 + 1},,,,,{i + 1},MB/s,\n"
                                            for i in range(n)))
    return path


def _run(args: list[str], tty: bool) -> tuple[int, str, str]:
    """Run ioadvise with stderr on a pseudo-terminal (tty=True) or a pipe; exit code, stdout, stderr."""
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    if not tty:
        p = subprocess.run([str(EXE), *args], capture_output=True, env=env, timeout=300)
        return p.returncode, p.stdout.decode(), p.stderr.decode()
    master, slave = pty.openpty()
    p = subprocess.Popen([str(EXE), *args], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    err = read_terminal(master, p)
    out = p.stdout.read().decode()
    p.wait(timeout=300)
    os.close(master)
    return p.returncode, out, err.decode(errors="replace")


def test_import_shows_progress_with_eta_on_a_terminal_only(tmp_path):
    f = _big_csv(tmp_path / "big.csv")
    rc, out, err = _run(["kb", "import", "--kb", str(tmp_path / "a.sqlite"), str(f)], tty=True)
    assert rc == 0 and "40000 run(s)" in out
    assert "importing big.csv" in err and "ETA" in err          # the progress line, drawn on the terminal
    # the same import, piped: stderr gets nothing (no bar, no escape codes)
    rc, out, err = _run(["kb", "import", "--kb", str(tmp_path / "b.sqlite"), str(f)], tty=False)
    assert rc == 0 and "40000 run(s)" in out and err == ""
    # with --json on a terminal: stdout is the JSON document alone and stderr stays silent
    rc, out, err = _run(["kb", "import", "--kb", str(tmp_path / "c.sqlite"), str(f), "--json"], tty=True)
    assert rc == 0 and out.lstrip().startswith("[") and '"runs": 40000' in out
    assert "ETA" not in err and "importing" not in err


def test_docs_build_progress_on_a_terminal_only(tmp_path):
    rc, out, err = _run(["docs", "build", "--center", "HA8000", "--out", str(tmp_path / "s"), "--kb",
                         str(tmp_path / "k.sqlite")], tty=True)
    assert rc == 0 and "Wrote" in out
    assert "ETA" in err
    rc, out, err = _run(["docs", "build", "--center", "HA8000", "--out", str(tmp_path / "t"), "--kb",
                         str(tmp_path / "k.sqlite"), "--json"], tty=True)
    assert rc == 0 and out.lstrip().startswith("{") and "ETA" not in err
