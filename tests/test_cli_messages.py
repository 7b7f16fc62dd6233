"""What the commands print for people: a user-supplied name (a file name with a newline, an escape sequence
or bytes that are not UTF-8) is shown escaped, a usage error is one line, and no numpy warning comes first.

What must not happen: a control character reaching the terminal (a raw ESC starts an escape sequence, a raw
newline splits the one error line in two), click's usage-and-box answer to a bad option value (5 lines and
more), a `RuntimeWarning` printed ahead of the answer."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

IOADVISE = str(Path(sys.executable).parent / "ioadvise")
# a name with a byte that is not UTF-8, a newline and the escape sequence that turns a terminal's text red
NAME = b"bad\xff\nname\x1b[31m"
SHOWN = "bad\\xff\\nname\\x1b[31m"


def _run(args: list, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(cwd), "COLUMNS": "200"}
    env.pop("IOADVISE_KB", None)
    return subprocess.run([IOADVISE, *args], cwd=cwd, env=env, capture_output=True, timeout=120)


def _one_clean_line(stream: bytes) -> str:
    """The one line of `stream`, after checking it holds no control character but its final newline."""
    assert stream.endswith(b"\n") and stream.count(b"\n") == 1, f"not one line: {stream!r}"
    bad = [hex(b) for b in stream[:-1] if b < 0x20 or b == 0x7F]
    assert not bad, f"control characters {bad} reach the terminal: {stream!r}"
    return stream.decode()


@pytest.mark.parametrize("args", [
    ["center", "check", NAME],
    ["diagnose", NAME],
    ["diagnose", "--thresholds", NAME, NAME],
    ["kb", "import", NAME],
    ["advise", "--script", NAME],
    ["advise", "--workload", NAME],
    ["wrap", NAME, "-o", "out.sh"],
    ["submit", "--dry-run", NAME],
    ["archive", "scan", NAME],
    ["jobs", "collect", NAME],
], ids=lambda a: " ".join(x for x in a if isinstance(x, str)) or "name")
def test_a_hostile_file_name_is_shown_escaped_in_one_line(args, tmp_path):
    p = _run(args, tmp_path)
    assert p.returncode == 2, p.stderr
    line = _one_clean_line(p.stderr)
    assert line.startswith("Error: ") and SHOWN in line


@pytest.mark.parametrize("args,option", [
    (["archive", "report", "--top", "0"], "--top"),
    (["archive", "report", "--ranks-per-node", "0"], "--ranks-per-node"),
    (["diagnose", "--ranks-per-node", "0", "x.darshan"], "--ranks-per-node"),
    (["wrap", "job.sh"], "--output"),
    (["advise", "--bogus"], "--bogus"),
    (["kb", "bogus"], "bogus"),
    (["bench", "plan", "extra\x1b[2J"], "extra\\x1b[2J"),
])
def test_a_usage_error_is_one_line_naming_the_help(args, option, tmp_path):
    p = _run(args, tmp_path)
    assert p.returncode == 2, p.stderr
    line = _one_clean_line(p.stderr)
    assert line.startswith("Error: ") and option in line and "-h'" in line, line
    assert p.stdout == b""


def test_warnings_and_the_summary_show_names_escaped(tmp_path):
    """`submit --dry-run` that fails open: the warning names the center file, the summary the script."""
    script = tmp_path / os.fsdecode(b"job\x1b[31m\n.sh")
    script.write_bytes(b"#!/bin/bash\n#SBATCH -N 1\necho \x1b[31mhi\n")
    p = _run(["submit", "--dry-run", script.name, "--center", NAME], tmp_path)
    assert p.returncode == 0, p.stderr
    for stream in (p.stdout, p.stderr):
        assert b"\x1b" not in stream and b"\xff" not in stream, stream
    # (the center's name is quoted as Python's repr writes it: \\udcff for the byte 0xff)
    assert "\\nname\\x1b[31m" in p.stderr.decode() and "job\\x1b[31m\\n.sh" in p.stdout.decode()
    assert all(ln.startswith(b"warning: ") for ln in p.stderr.splitlines()), p.stderr


def test_a_diff_shows_the_scripts_control_characters_escaped(tmp_path):
    (tmp_path / "j.sh").write_bytes(b"#!/bin/bash\n# c\rx\necho \x1b[31mhi\n")
    p = _run(["wrap", "j.sh", "-o", "out.sh", "--hints", "romio_cb_write=enable", "--diff"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert b"\x1b" not in p.stdout and b"\r" not in p.stdout
    assert b" # c\\rx\n" in p.stdout and b" echo \\x1b[31mhi\n" in p.stdout
    assert b"\x1b[31m" in (tmp_path / "out.sh").read_bytes()    # the file itself keeps its bytes


def test_printable_escapes_what_acts_on_a_terminal():
    from ioadvisor.util import printable
    assert printable("a\nb\rc\td\x1b[0m\x7f\x9b\u2028\u202e") == "a\\nb\\rc\\td\\x1b[0m\\x7f\\x9b\\u2028\\u202e"
    assert printable(os.fsdecode(b"f\xff")) == "f\\xff"
    assert printable("plain ä 漢字 [bold] \\ ok") == "plain ä 漢字 [bold] \\ ok"


def test_interval_width_past_a_float_is_bounded_without_a_warning():
    """`bench plan` on a KB whose runs spread over hundreds of orders of magnitude printed
    `RuntimeWarning: overflow encountered in exp` ahead of its answer: exp(2 * 1.645 * sqrt(1e6)) = e^3290
    is past the largest float (e^709.78). The plan works on log widths, each at most log(WIDE)."""
    import math

    import numpy as np
    from ioadvisor.bench.plan import WIDE, _log_width
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = _log_width(np.array([1e6, 0.01]))
    assert w[0] == math.log(WIDE)                      # capped, not e^3290
    assert abs(w[1] - 2 * 1.645 * 0.1) < 1e-3          # log(high/low) = 2 * z90 * sd = 0.329


#: Unicode's Bidi_Control set (PropList.txt): ALM, LRM, RLM, the embeddings and overrides, the isolates
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_bidirectional_controls_are_escaped_and_kept_out_of_names_and_script_lines(tmp_path):
    """U+202E makes the text after it show reversed, as another name: each Bidi_Control character is escaped on
    output like a control character, refused in a name stored in the KB (the system, the file system) and in a
    value written into a job script."""
    from typer.testing import CliRunner

    from ioadvisor.cli import app
    from ioadvisor.errors import UsageError
    from ioadvisor.util import check_line_value, printable
    runner = CliRunner()
    kb = tmp_path / "kb.sqlite"
    header = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
              "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes\n")
    for c in BIDI:
        shown = f"\\u{ord(c):04x}"
        assert printable(f"a{c}b") == f"a{shown}b"
        with pytest.raises(UsageError, match="control character"):
            check_line_value(f"--job-name=x{c}y", "job name")
        for system, fs in ((f"sys{c}A", "lus"), ("sysA", f"lus{c}")):
            f = tmp_path / "runs.csv"
            f.write_text(header + f"s1,{system},{fs},8,write,POSIX,fpp,,1,4,1048576,1073741824,1,1048576,900,"
                                  f"MiB/s,\n", encoding="utf-8")
            res = runner.invoke(app, ["kb", "import", str(f), "--kb", str(kb)])
            assert res.exit_code == 2 and f"runs.csv:2: " in res.output and shown in res.output, res.output
            assert c not in res.output
