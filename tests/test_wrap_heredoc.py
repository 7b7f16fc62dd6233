"""Here-document bodies are data, not directive lines: an `#IOADVISE` line inside one must not change what
`advise --script`, `wrap` and `submit` read (ioadvisor/ioadvise_lines.py), nor what the job_submit Lua hook
injects (slurm/job_submit.lua, run in the real Lua 5.1). Each case lists the hints that must be read: one
`#IOADVISE hint=NAME:1` line per place, so a hint from a body shows up by name.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.job import describe

ROOT = Path(__file__).resolve().parent.parent
LUA = shutil.which("lua5.1") or "lua5.1"


def h(name: str) -> str:
    return f"#IOADVISE hint={name}:1\n"


CASES = {
    "plain": ("cat > f <<EOF\n" + h("body") + "EOF\n" + h("after"), ["after"]),
    "quoted word": ("cat <<'EOF' > f\n" + h("body") + "EOF\n" + h("after"), ["after"]),
    "double-quoted word with a blank": ('cat <<"E F"\n' + h("body") + "E F\n" + h("after"), ["after"]),
    "backslashed word": ("cat <<\\EOF\n" + h("body") + "EOF\n" + h("after"), ["after"]),
    "blank before the word": ("cat << EOF\n" + h("body") + "EOF\n" + h("after"), ["after"]),
    "<<- ends at a tab-indented word": ("cat <<-EOF\n\t" + h("body") + "\tEOF\n" + h("after"), ["after"]),
    "<<- does not end at a blank-indented word": ("cat <<-EOF\n" + h("body") + "  EOF\n" + h("in"), []),
    "<< does not end at an indented word": ("cat <<EOF\n\tEOF\n" + h("in") + "EOF\n" + h("after"), ["after"]),
    "a word with a trailing blank is not the end": ("cat <<EOF\nEOF \n" + h("in"), []),
    "two bodies follow one another": ("cat <<A <<B\n" + h("a") + "A\n" + h("b") + "B\n" + h("after"), ["after"]),
    "in a command substitution": ('x=$(cat <<EOF\n' + h("body") + "EOF\n)\n" + h("after"), ["after"]),
    "arithmetic shift is no here-document": ("x=$((1<<2))\n(( y <<= 1 ))\n" + h("after"), ["after"]),
    "a here-string is no here-document": ('cat <<<"$x"\n' + h("after"), ["after"]),
    "<< in quotes is no here-document": ("echo \"<<EOF\" '<<EOF'\n" + h("after"), ["after"]),
    "<< in a comment is no here-document": ("# cat <<EOF\necho x # <<EOF\n" + h("after"), ["after"]),
    "a # inside a word starts no comment": ("echo a#b <<EOF\n" + h("body") + "EOF\n" + h("after"), ["after"]),
    "a directive line opens no body": (h("first") + "#IOADVISE outdir=x <<EOF\n" + h("after"), ["first", "after"]),
}


def script(body: str) -> str:
    return "#!/bin/bash\n#SBATCH -N 1\n" + h("top") + body


@pytest.mark.parametrize("case", sorted(CASES))
def test_python_reads_no_directive_in_a_body(case):
    body, names = CASES[case]
    s = describe(script=script(body), script_path="job.sh", strict=False)
    assert list(s.hints) == ["top", *names]


@pytest.fixture(scope="module")
def lua_hints(tmp_path_factory) -> dict[str, list]:
    d = tmp_path_factory.mktemp("heredoc")
    out = {}
    for case, (body, _) in CASES.items():
        f = d / "job.sh"
        f.write_text(script(body))
        p = subprocess.run([LUA, str(ROOT / "slurm/testcluster/read_ioadvise_lines.lua"),
                            str(ROOT / "slurm/job_submit.lua"), str(f), "script"], capture_output=True, timeout=60)
        assert p.returncode == 0, p.stderr.decode()
        out[case] = [k for k, _ in json.loads(p.stdout)]
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_lua_hook_reads_no_directive_in_a_body(case, lua_hints):
    assert lua_hints[case] == ["top", *CASES[case][1]]


def test_wrap_applies_no_directive_from_a_body(tmp_path):
    """A script that writes another job script through a here-document: the inner `#IOADVISE outdir=` and
    hint are the inner job's, so the wrapped outer job must not write its results to `elsewhere`."""
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n#SBATCH -N 1\n#IOADVISE api=MPIIO hint=romio_cb_write:enable\n"
                   "cat > inner.sh <<'EOF'\n#!/bin/bash\n#IOADVISE outdir=elsewhere hint=cb_nodes:4\nEOF\n"
                   "sbatch inner.sh\n")
    res = CliRunner().invoke(app, ["wrap", str(job), "-o", str(tmp_path / "wrapped.sh"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["settings"]["outdir"] is None and "cb_nodes" not in doc["settings"]["hints"], doc["settings"]
    assert "elsewhere" not in (tmp_path / "wrapped.sh").read_text().split("cat > inner.sh")[0]
