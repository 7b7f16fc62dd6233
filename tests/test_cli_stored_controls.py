"""Rows an older version stored (or a KB written by another tool) may hold control and bidirectional characters in
a system name, notes or a source. What must NOT happen: such a character reaching the terminal from `kb list`,
`kb show`, `systems` or `kb delete`'s listing, where U+202E (right-to-left override) would show "evil\u202etxt.exe"
as "evilexe.txt" and an escape sequence would restyle or rewrite the screen. Each must print as a visible escape
(`\\u202e`, `\\x1b`) instead."""
from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from ioadvisor.util import BIDI_CONTROLS

SAMPLES = Path(__file__).resolve().parent.parent.parent / "shared" / "samples"
RAW = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}]")   # newline and tab are layout


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from ioadvisor.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "COLUMNS": "200",
                                                                          "HOME": "/nonexistent"})


def test_stored_control_characters_are_shown_escaped(tmp_path):
    kb = tmp_path / "kb.sqlite"
    sample = SAMPLES / "ior" / "posix_shared_2ranks.txt"
    assert _cli("kb", "import", str(sample), "--kb", str(kb), "--system", "demo").returncode == 0
    with sqlite3.connect(kb) as c:         # as a row written before names were checked
        c.execute("UPDATE runs SET system = 'de' || char(8238) || 'mo', notes = 'evil' || char(8238) || 'txt.exe' "
                  "|| char(27) || '[2J' WHERE rowid = (SELECT min(rowid) FROM runs)")
        (rid,) = c.execute("SELECT id FROM runs WHERE notes LIKE 'evil%'").fetchone()
    for args in (("kb", "list"), ("kb", "show", rid), ("systems",),
                 ("kb", "delete", "--system", "de\u202emo")):
        r = _cli(*args, "--kb", str(kb))
        assert r.returncode == 0, (args, r.stderr)
        shown = r.stdout + r.stderr
        assert not RAW.findall(shown), (args, sorted(set(RAW.findall(shown))))
        assert "de\\u202emo" in shown, (args, shown)
    assert "evil\\u202etxt.exe\\x1b[2J" in _cli("kb", "show", rid, "--kb", str(kb)).stdout
