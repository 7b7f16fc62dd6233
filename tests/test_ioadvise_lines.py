"""One `#IOADVISE` grammar (ioadvisor/ioadvise_lines.py), and the Lua hook reading every line the same way.

tests/data/ioadvise_lines.json holds the golden lines: quoting, unknown keys, duplicates, `=` in values, empty
values, trailing comments, CR, tabs and other blanks, lines that are not `#IOADVISE` lines, and quotes left
open. Each says what the line reads as (`items`, `bare`), or that it is not an `#IOADVISE` line, or that it
is an error. What must not happen: the Python reader and slurm/job_submit.lua (run in the real Lua 5.1)
reading any of them differently, or the hook acting on a value that `advise`/`wrap` would read otherwise or
refuse.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ioadvisor.errors import ImportFormatError
from ioadvisor.ioadvise_lines import read_line
from ioadvisor.job import describe, read_value

ROOT = Path(__file__).resolve().parent.parent
LUA = shutil.which("lua5.1") or "lua5.1"   # scripts/setup.sh installs it; absent, the Lua test fails
CASES = json.loads((ROOT / "tests" / "data" / "ioadvise_lines.json").read_text())


def expected(case: dict) -> dict:
    """A case as both readers report it."""
    if case.get("not_a_line"):
        return {"line": False}
    if "error" in case:
        return {"line": True, "error": True}
    return {"line": True, "items": case["items"], "bare": case["bare"]}


def python_reading(line: str) -> dict:
    try:
        r = read_line(line)
    except ValueError as e:
        assert "is not closed" in str(e)
        return {"line": True, "error": True}
    if r is None:
        return {"line": False}
    return {"line": True, "items": [list(kv) for kv in r.items], "bare": list(r.bare)}


@pytest.fixture(scope="module")
def lua_readings(tmp_path_factory) -> list[dict]:
    """Each golden line as the hook reads it (read_line, and what parse keeps from it)."""
    lines = [c["line"] for c in CASES]
    assert not any("\n" in x for x in lines)    # a line never holds a newline; the file separates them by one
    src = tmp_path_factory.mktemp("lua") / "lines.txt"
    src.write_bytes("\n".join(lines).encode())
    p = subprocess.run([LUA, str(ROOT / "slurm/testcluster/read_ioadvise_lines.lua"), str(ROOT / "slurm/job_submit.lua"),
                        str(src)], capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr.decode()
    out = [json.loads(x) for x in p.stdout.decode().splitlines()]
    assert len(out) == len(lines)
    return out


@pytest.mark.parametrize("case", CASES, ids=[c["why"] for c in CASES])
def test_python_reads_each_golden_line_as_stated(case):
    assert python_reading(case["line"]) == expected(case)


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c["why"] for c in CASES])
def test_lua_hook_reads_each_golden_line_as_python_does(i, lua_readings):
    got = {k: v for k, v in lua_readings[i].items() if k != "taken"}
    assert got == python_reading(CASES[i]["line"]) == expected(CASES[i])


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c["why"] for c in CASES])
def test_what_the_hook_keeps_python_reads_the_same(i, lua_readings):
    """The hook keeps a value only when its strict pattern matches; each kept value is one the Python reader
    read from the same line (the last one for a plain key, each one for hint), and every value the hook acts
    on (hints; api MPIIO or HDF5 and layout shared or fpp, which choose its policy) `read_value` reads alike."""
    taken = lua_readings[i].get("taken", {})
    items = [tuple(kv) for kv in python_reading(CASES[i]["line"]).get("items", [])]
    for key, value in taken.items():
        if key == "hints":
            for name, v in value:
                assert ("hint", f"{name}:{v}") in items
                assert read_value("hint", f"{name}:{v}") == {name: v}
        else:
            assert [v for k, v in items if k == key][-1] == value
            if key == "api" and value.upper() in ("MPIIO", "HDF5") or key == "layout" and value.lower() in (
                    "shared", "fpp"):
                assert read_value(key, value) == value.lower()


def test_quoted_outdir_and_hyphen_key_are_one_reading_everywhere():
    """The line that three readers read three ways: `describe` split inside the quotes and failed (strict)
    or read outdir as '"my' (not strict); `wrap` took `my out` from a second reader and dropped `stage-in`."""
    script = '#!/bin/sh\n#SBATCH -N 2\n#IOADVISE stage-in=x outdir="my out"\nsrun ./app\n'
    for strict in (True, False):
        s = describe(script=script, script_path="job.sh", strict=strict)
        assert (s.outdir, s.stage_in, s.warnings) == ("my out", ("x",), ())
        assert s.sources["outdir"] == s.sources["stage_in"] == "job.sh:3"


def test_duplicates_last_wins_and_repeatable_keys_add_up():
    s = describe(script="#!/bin/sh\n#IOADVISE api=POSIX api=MPIIO hint=a:1\n#IOADVISE hint=b:2 api=HDF5 # later\n")
    assert s.api == "hdf5" and s.hints == {"a": "1", "b": "2"} and s.warnings == ()


def test_open_quote_is_an_error_naming_file_line_and_column():
    with pytest.raises(ImportFormatError, match=r"^job.sh:3: the quote \(\"\) at column 18 is not closed"):
        describe(script='#!/bin/sh\n#SBATCH -N 1\n#IOADVISE outdir="my out\n', script_path="job.sh", strict=False)


def test_words_without_equals_and_unknown_keys_are_errors_only_when_strict():
    script = "#!/bin/sh\n#IOADVISE api=MPIIO shared colour=blue\n"
    with pytest.raises(ImportFormatError, match=r"^job.sh:2: expected key=value, got 'shared'"):
        describe(script=script, script_path="job.sh")
    s = describe(script=script, script_path="job.sh", strict=False)
    assert s.api == "mpiio" and len(s.warnings) == 2 and all(w.startswith("job.sh:2: ") for w in s.warnings)


def test_a_megabyte_line_is_read_in_linear_time():
    """Quotes are matched one character at a time (no nested quantifier): a 1 MiB line, with or without a
    quote left open at its end, is read within 2 s of this process's CPU (a backtracking reader would take hours;
    CPU time, not wall time, so a loaded machine cannot fail it)."""
    for tail in ("", ' "'):
        line = "#IOADVISE api=" + "A" * (1 << 20) + tail
        t0 = time.process_time()
        try:
            read_line(line)
        except ValueError:
            pass
        assert time.process_time() - t0 < 2


def test_open_quote_in_advise_script_is_one_line_exit_2(tmp_path):
    from typer.testing import CliRunner
    from ioadvisor.cli import app
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/sh\n#SBATCH -N 2\n#IOADVISE bytes_per_rank=1GiB outdir='my out\nsrun ./app\n")
    # the quote is character 38 of line 3: 9 for #IOADVISE, 1 blank, 19 for bytes_per_rank=1GiB, 1, 7 for outdir=
    r = CliRunner().invoke(app, ["advise", "--center", "HA8000", "--script", str(job)])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and f"{job}:3: the quote (') at column 38 is not closed" in r.output
