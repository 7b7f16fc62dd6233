"""A job script is split into lines as bash splits it: at "\\n" only. CR, VT, FF, FS, GS, RS, NEL, U+2028 and
U+2029 are ordinary characters to bash (inside a comment they stay in the comment), so wrapping must neither
split a line at one of them (which would turn the rest of a comment into a command placed after the inserted
block) nor change one (a CR turned into a newline by a text-mode read does the same).

What must not happen: a wrapped script running a command the original does not run (or not running one it
runs), an original line changed or moved, a marker file created by text that bash reads as a comment."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from ioadvisor.slurm.jobscript import parse_jobscript
from ioadvisor.slurm.rewrite import BEGIN, END, WrapSettings, strip_wrap, wrap

# every character str.splitlines() splits at, besides "\n" and "\r\n"
SEPARATORS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
SEP_IDS = ["CR", "VT", "FF", "FS", "GS", "RS", "NEL", "LS", "PS"]
SETTINGS = WrapSettings(hints={"romio_cb_write": "enable"})
IOADVISE = [str(Path(sys.executable).parent / "ioadvise")]


def _bash(text: str, where: Path) -> set[str]:
    """Names of the files bash creates when it runs `text` in an empty directory `where` (the wrapper's own
    record and directory, named ioadvise*, left out)."""
    script = where.parent / (where.name + ".sh")
    script.write_bytes(text.encode("utf-8", "surrogateescape"))
    where.mkdir()
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": "7", "HOME": str(where.parent), "LC_ALL": "C"}
    subprocess.run(["bash", str(script)], cwd=where, env=env, capture_output=True, timeout=60)
    return {n for n in os.listdir(where) if not n.startswith("ioadvise")}


def _without_block(wrapped: str) -> str:
    """The wrapped text with the one inserted block (BEGIN line .. END line) cut out, lines split at "\\n"."""
    lines = wrapped.split("\n")
    assert lines.count(BEGIN) == 1 and lines.count(END) == 1
    b, e = lines.index(BEGIN), lines.index(END)
    assert b < e
    return "\n".join(lines[:b] + lines[e + 1:])


# ---- random scripts: every separator, inside comments, #SBATCH lines, quotes and words ---------------------

sep = st.sampled_from(SEPARATORS)
word = st.text(alphabet="abcxyz_-. ", max_size=6)


@st.composite
def _piece(draw, k: int) -> str:
    """One bash line (no "\\n") that may create the file m_K, with separators where a naive split would cut."""
    s1, s2 = draw(sep), draw(sep)
    w = draw(word)
    form = draw(st.integers(0, 9))
    return [
        f"# {w}{s1}touch m_{k}",                       # a comment: creates nothing
        f"#SBATCH -J x{s1}touch m_{k}",                # a directive line: a comment to bash
        f"{s1}",                                       # a line of one separator: bash runs it (not found)
        f"touch m_{k}{s1}",                            # creates 'm_K<sep>'
        f"touch 'm_{k}{s1}{w}'",                       # single quotes around a separator
        f'touch "m_{k}{s1}{w}{s2}"',                   # double quotes
        f"touch m_{k}\\{s1}x",                         # a backslash before a separator
        f"echo '{w}{s1}touch m_{k}'",                  # a command inside quotes: creates nothing
        f": {w}{s1}touch m_{k} # {s2}touch n_{k}",     # a trailing comment
        f"touch m_{k}{s1}{s2}; touch n_{k}",           # two commands
    ][form]


@st.composite
def scripts(draw) -> str:
    header = draw(st.lists(st.one_of(_piece(0).filter(lambda p: p.lstrip().startswith("#")),
                                     st.sampled_from(["", "#SBATCH -N 1", "# plain comment"])), max_size=5))
    n = draw(st.integers(0, 5))
    body = [draw(_piece(k)) for k in range(1, n + 1)]
    shebang = draw(st.sampled_from(["#!/bin/bash", "#!/bin/sh", "#!/usr/bin/env bash"]))
    end = draw(st.sampled_from(["\n", "", "\r\n"]))
    return "\n".join([shebang, *header, *body]) + end


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts())
@example("#!/bin/bash\n#SBATCH -N 1\n# c\rtouch m_1\necho hi\n")
@example("#!/bin/bash\n# c\u2028touch m_1\n\x1c\ntouch m_2\x85touch m_3\n")
def test_wrap_changes_only_its_own_lines_and_bash_runs_the_same_commands(text):
    wrapped = wrap(text, SETTINGS)
    kept = _without_block(wrapped)
    # the original lines byte for byte and in order; a last header line without "\n" gets one before the block
    assert kept == text or (not text.endswith("\n") and kept == text + "\n" and wrapped.endswith(END + "\n"))
    assert strip_wrap(wrapped) == kept
    with tempfile.TemporaryDirectory() as d:
        before = _bash(text, Path(d) / "plain")
        after = _bash(wrapped, Path(d) / "wrapped")
    assert after == before, f"files made only by the wrapped script: {after - before}, only by the original: {before - after}"


@pytest.mark.parametrize("ch", SEPARATORS, ids=SEP_IDS)
def test_script_lines_split_at_newline_only(ch):
    from ioadvisor.slurm.jobscript import script_lines
    text = f"#!/bin/bash\n# c{ch}touch m\necho a{ch}b\n"
    assert script_lines(text) == ["#!/bin/bash\n", f"# c{ch}touch m\n", f"echo a{ch}b\n"]
    js = parse_jobscript(text)
    assert js.lines == ("#!/bin/bash", f"# c{ch}touch m", f"echo a{ch}b")
    assert js.block_end == 2


@pytest.mark.parametrize("ch", SEPARATORS, ids=SEP_IDS)
def test_a_directive_after_a_separator_is_not_read(ch):
    """sbatch reads `#SBATCH` only at the start of a line; text after a separator is the same line."""
    js = parse_jobscript(f"#!/bin/bash\n# x{ch}#SBATCH -N 9\n#SBATCH -n 2\n")
    assert js.option("nodes") is None and js.option("ntasks") == "2"


@pytest.mark.parametrize("ch", SEPARATORS, ids=SEP_IDS)
def test_cli_wrap_keeps_every_byte_and_runs_no_comment(ch, tmp_path):
    """`ioadvise wrap` reads and writes the file as bytes: the separator survives and the comment stays one."""
    text = f"#!/bin/bash\n#SBATCH -N 1\n# c{ch}touch marker\necho hi\n"
    src, out = tmp_path / "j.sh", tmp_path / "out.sh"
    src.write_bytes(text.encode())
    p = subprocess.run([*IOADVISE, "wrap", str(src), "-o", str(out), "--hints", "romio_cb_write=enable"],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    wrapped = out.read_bytes().decode()
    assert _without_block(wrapped) == text
    assert _bash(wrapped, tmp_path / "run") == set()


@pytest.mark.parametrize("ch", SEPARATORS, ids=SEP_IDS)
def test_a_script_is_read_as_its_bytes(ch, tmp_path):
    """What `submit` reads (and submits unchanged when advice fails) is the file's text, byte for byte: a
    text-mode read turns a CR into a newline."""
    from ioadvisor.slurm.submit import read_script
    text = f"#!/bin/bash\n#SBATCH -N 1\n# c{ch}touch marker\r\necho hi\n"
    src = tmp_path / "j.sh"
    src.write_bytes(text.encode())
    assert read_script(src) == text
