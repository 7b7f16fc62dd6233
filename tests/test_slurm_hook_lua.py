"""slurm/job_submit.lua run inside real Lua 5.1 (Debian's lua5.1, the interpreter slurmctld embeds) through
slurm/testcluster/run_job_submit.lua, a stand-in `slurm` table with only SUCCESS and log_info.

What must not happen: a hostile line changing what is injected, a script changed anywhere but at the one
insertion point, a hints file at a predictable path (a planted symlink there must not be followed)."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LUA = shutil.which("lua5.1") or "lua5.1"   # scripts/setup.sh installs it; absent, the tests fail


HEAD = "#!/bin/bash\n#SBATCH -N 1\n#IOADVISE api=MPIIO layout=shared hint=cb_buffer_size:8388608\n"
BEGIN, END = "# >>> ioadvise job_submit\n", "# <<< ioadvise job_submit\n"


def hook(tmp_path: Path, script: str) -> tuple[str, str]:
    """The script as slurmctld would store it after the hook, and the hook's log."""
    src, out = tmp_path / "in.sh", tmp_path / "out.sh"
    src.write_bytes(script.encode())
    p = subprocess.run([LUA, str(ROOT / "slurm/testcluster/run_job_submit.lua"), str(ROOT / "slurm/job_submit.lua"),
                        str(src), str(out)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return out.read_bytes().decode(), p.stderr


def split(result: str) -> tuple[str, str, str]:
    """(before, block, after) around the one injected block."""
    assert result.count(BEGIN) == 1 and result.count(END) == 1
    before, rest = result.split(BEGIN)
    block, after = rest.split(END)
    return before, BEGIN + block + END, after


def test_block_goes_after_the_header_and_the_rest_is_untouched(tmp_path):
    script = HEAD + "# a comment\n\nsrun ./app\n#IOADVISE hint=late:1\n"
    result, log = hook(tmp_path, script)
    before, block, after = split(result)
    assert before == HEAD + "# a comment\n\n"
    assert after == "srun ./app\n#IOADVISE hint=late:1\n"
    assert "export IOADVISE_HINTS='cb_buffer_size=8388608,late=1,romio_cb_write=enable,romio_ds_write=disable'" in block
    assert "injected 4 MPI-IO hints" in log


@pytest.mark.parametrize("line", [
    "#IOADVISE api=MPIIO;touch${IFS}/tmp/x",
    "#IOADVISE hint=a:$(id)",
    "#IOADVISE hint=a:'b;c'",                   # quoted: read as a:b;c, which the hint pattern refuses
    "#IOADVISE hint='a:$(id)'",
    "#IOADVISE hint=a:b 'open",                 # a quote left open: nothing from the line
    "#IOADVISE hint=a:" + "b" * 200,           # value over 128 bytes
    "#IOADVISE hint=" + "a" * 2000 + ":1",     # line over 1 KiB
    "#IOADVISE " + "x" * (1 << 20),            # 1 MiB without '='
])
def test_hostile_ioadvise_lines_add_nothing(tmp_path, line):
    # in the body (the hook reads #IOADVISE lines anywhere in the first 64 KiB), so the header stays short
    result, _ = hook(tmp_path, HEAD + "srun ./app\n" + line + "\n")
    _, block, after = split(result)
    # only the valid hint and the center policy: 3 items, none from the hostile line
    assert "IOADVISE_HINTS='cb_buffer_size=8388608,romio_cb_write=enable,romio_ds_write=disable'" in block
    assert after == "srun ./app\n" + line + "\n"


def test_header_longer_than_the_scan_bound_gets_the_block_where_the_read_stopped(tmp_path):
    # an 80 KiB comment line inside the #SBATCH block: its end is past 64 KiB, so the block goes before it
    script = HEAD + "#" + " " * (80 << 10) + "x\nsrun ./app\n"
    result, _ = hook(tmp_path, script)
    before, _, after = split(result)
    assert (before, after) == (HEAD, script[len(HEAD):])


def test_first_line_longer_than_the_scan_bound_leaves_the_job_unchanged(tmp_path):
    # the #IOADVISE line starts past 64 KiB, so it is not read, and nothing may go before the shebang
    script = "#!/bin/bash #IOADVISE api=MPIIO" + " " * (70 << 10) + "\n#IOADVISE api=MPIIO layout=shared\nsrun ./app\n"
    assert hook(tmp_path, script)[0] == script


def test_huge_body_is_copied_byte_for_byte(tmp_path):
    body = "srun ./app\n" + " " * (1 << 20) + "x\n" + "echo filler\n" * 250_000   # about 4 MiB
    result, _ = hook(tmp_path, HEAD + body)
    before, _, after = split(result)
    assert (before, after) == (HEAD, body)


def test_script_ending_without_newline_gets_one_before_the_block(tmp_path):
    result, _ = hook(tmp_path, HEAD.rstrip("\n"))
    before, _, after = split(result)
    assert (before, after) == (HEAD, "")


def test_wrapped_or_already_injected_scripts_are_left_alone(tmp_path):
    once, _ = hook(tmp_path, HEAD + "srun ./app\n")
    again, _ = hook(tmp_path, once)
    assert again == once
    wrapped = HEAD + "# >>> ioadvise wrap\nsrun ./app\n"
    assert hook(tmp_path, wrapped)[0] == wrapped


def test_lines_past_the_line_bound_are_not_read(tmp_path):
    script = "#!/bin/bash\n" + "#\n" * 500 + "#IOADVISE api=MPIIO layout=fpp\nsrun ./app\n"
    result, _ = hook(tmp_path, script)
    assert result == script   # the #IOADVISE line is line 502, past the 400 lines read


def test_header_of_more_lines_than_the_bound_gets_the_block_at_the_last_line_read(tmp_path):
    script = HEAD + "#SBATCH -t 1\n" * 500 + "srun ./app\n"
    before, _, after = split(hook(tmp_path, script)[0])
    assert before == HEAD + "#SBATCH -t 1\n" * 396   # 3 + 396 lines before it; line 400 is where it stopped
    assert before + after == script


def test_hints_file_is_created_exclusively_not_at_a_predictable_path(tmp_path):
    """mktemp's file, never a planted name; the batch shell holds it open on descriptor 9 and removes its name
    at once, so ROMIO_HINTS (/proc/PID/fd/9) reads the hints and nothing is left in $TMPDIR (a file per job
    was left before)."""
    result, _ = hook(tmp_path, HEAD + 'printf "%s\\n" "$ROMIO_HINTS" "$$"; stat -L -c %a "$ROMIO_HINTS"; '
                                      'cat "$ROMIO_HINTS"\n')
    job_tmp = tmp_path / "jobtmp"
    job_tmp.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    # the old predictable names for this job id, planted as symlinks by another user
    planted = {"ioadvise-romio-hints.4242", "ioadvise-romio-hints.$$"}
    for name in planted:
        (job_tmp / name).symlink_to(victim)
    p = subprocess.run(["bash", "-c", result], capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ["PATH"], "TMPDIR": str(job_tmp), "SLURM_JOB_ID": "4242"})
    assert p.returncode == 0, p.stderr
    path, pid, mode, *hints = p.stdout.splitlines()
    assert path == f"/proc/{pid}/fd/9" and mode == "600"
    assert hints == ["cb_buffer_size 8388608", "romio_cb_write enable", "romio_ds_write disable"]
    assert {f.name for f in job_tmp.iterdir()} == planted
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("ch", ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"],
                         ids=["CR", "VT", "FF", "FS", "GS", "RS", "NEL", "LS", "PS"])
def test_lines_end_at_newline_only(tmp_path, ch):
    """A separator other than "\\n" is inside its line, as bash reads it: the block goes after the whole
    comment (never between the comment and the text after the separator), and running the result with bash
    creates no marker from that text."""
    header = HEAD + f"# c{ch}touch {tmp_path}/marker\n#SBATCH -t 1\n"
    script = header + f"echo a{ch}b > /dev/null\n"
    result, _ = hook(tmp_path, script)
    before, block, after = split(result)
    assert (before, after) == (header, script[len(header):])
    run = tmp_path / "run.sh"
    run.write_bytes(result.encode())
    subprocess.run(["bash", str(run)], cwd=tmp_path, capture_output=True, timeout=60, env={"PATH": os.environ["PATH"]})
    assert not (tmp_path / "marker").exists()


@pytest.mark.parametrize("shebang", ["#!/usr/bin/env python3", "#!/usr/bin/python3 -u", "#!/bin/tcsh", "#!/bin/csh -f",
                                     "#!/usr/bin/env -S perl -w", "#!/usr/bin/env", "#!", "echo no shebang"])
def test_scripts_of_other_interpreters_are_left_unchanged(tmp_path, shebang):
    """Shell lines in a Python or csh batch script would break the job (a SyntaxError before its first line runs):
    what is not a POSIX shell script must come out byte for byte as it went in."""
    script = shebang + "\n#SBATCH -n 2\n#IOADVISE api=MPIIO layout=shared hint=cb_buffer_size:8388608\nprint('x')\n"
    result, log = hook(tmp_path, script)
    assert result == script
    assert "not a POSIX shell script" in log


@pytest.mark.parametrize("shebang", ["#!/bin/bash", "#! /bin/sh", "#!/bin/zsh -l", "#!/usr/bin/env bash",
                                     "#!/usr/bin/env -S bash -l", "#!/usr/bin/ksh", "#!/bin/dash"])
def test_posix_shell_scripts_get_the_block(tmp_path, shebang):
    result, _ = hook(tmp_path, shebang + HEAD[HEAD.index("\n"):] + "srun ./app\n")
    assert split(result)[2] == "srun ./app\n"


def test_hook_knows_the_shells_wrap_writes_for():
    import re
    from ioadvisor.slurm.rewrite import SHELLS
    table = re.search(r"local SHELLS = \{(.*?)\}", (ROOT / "slurm/job_submit.lua").read_text()).group(1)
    assert set(re.findall(r"(\w+) = true", table)) == SHELLS


@pytest.mark.parametrize("api", ["MPIIO", "mpiio", "MPI-IO", "mpi-io", "HDF5"])
def test_every_spelling_of_mpiio_gets_the_center_policy(tmp_path, api):
    """`api=MPI-IO` is MPI-IO to `ioadvise` (ioadvisor/job.py reads it as mpiio): the hook must not read it as
    a non-MPI-IO job and leave it without the policy's hints."""
    result, _ = hook(tmp_path, f"#!/bin/bash\n#IOADVISE api={api} layout=shared\nsrun ./app\n")
    assert "export IOADVISE_HINTS='romio_cb_write=enable,romio_ds_write=disable'" in split(result)[1]
