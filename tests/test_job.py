"""The one job description: its sources in precedence order, its key table shared with the Lua hook, and every
documented `#IOADVISE` example accepted by `advise --script`, `wrap` and `submit`."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ioadvisor.errors import ImportFormatError
from ioadvisor.job import KEYS, SCRIPT_KEYS, describe, lua_keys_block, sbatch_sizes

ROOT = Path(__file__).resolve().parent.parent
IOADVISE = str(Path(sys.executable).parent / "ioadvise")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([IOADVISE, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


SCRIPT = "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4\n#IOADVISE bytes_per_rank=1GiB api=MPIIO\nsrun ./a\n"


def test_each_source_overrides_the_one_below():
    # 1. #SBATCH alone
    s = describe(script=SCRIPT)
    assert (s.nodes, s.ranks_per_node) == (2, 4) and s.sources["nodes"] == "<script>:2 (#SBATCH)"
    # 2. #IOADVISE over #SBATCH
    s = describe(script=SCRIPT + "#IOADVISE nodes=3\n")
    assert s.nodes == 3 and s.ranks_per_node == 4
    # 3. TOML over #IOADVISE
    s = describe(script=SCRIPT + "#IOADVISE nodes=3\n", toml="nodes = 5\nlayout = 'fpp'\n")
    assert s.nodes == 5 and s.layout == "fpp"
    # 4. sbatch-style options over TOML: -n 60 over 5 nodes is 12 per node (the script's 4 per node is replaced)
    s = describe(script=SCRIPT, toml="nodes = 5\n", sbatch=sbatch_sizes(["-N", "5", "-n", "60"]))
    assert (s.nodes, s.ranks_per_node) == (5, 12)
    # 5. explicit flags over everything
    s = describe(script=SCRIPT, toml="nodes = 5\n", sbatch={"nodes": 6}, explicit={"ranks_per_node": 7})
    assert (s.nodes, s.ranks_per_node) == (6, 7) and s.sources["ranks_per_node"] == "--ranks-per-node"


def test_ntasks_over_nodes_rounds_up_and_one_node_is_sbatchs_default():
    assert describe(script="#!/bin/sh\n#SBATCH -N 4 -n 10\n").ranks_per_node == 3      # ceil(10/4), not 2
    s = describe(script="#!/bin/sh\n#SBATCH -n 6\n")
    assert (s.nodes, s.ranks_per_node) == (1, 6)
    s = describe(script="#!/bin/sh\n#SBATCH -N 3\n")          # no task count: sbatch runs one task per node
    assert (s.nodes, s.ranks_per_node) == (3, 1) and s.sources["ranks_per_node"] == "sbatch default"
    assert describe(toml="layout = 'fpp'\n").nodes is None    # without a script there is no sbatch default


def test_bad_values_name_file_and_line():
    with pytest.raises(ImportFormatError, match=r"^job.sh:3: .*bytes_per_rank"):
        describe(script="#!/bin/sh\n#SBATCH -N 1\n#IOADVISE bytes_per_rank=lots\n", script_path="job.sh")
    with pytest.raises(ImportFormatError, match=r"^w.toml:2: unknown key 'nodez'"):
        describe(toml="nodes = 1\nnodez = 2\n", toml_path="w.toml")
    # under [workload] the line is the key's in that table, not an earlier one of the same name elsewhere
    with pytest.raises(ImportFormatError, match=r"^w.toml:4: unknown key 'nodez'"):
        describe(toml="# nodez = 1\n[workload]\nnodes = 1\nnodez = 2\n", toml_path="w.toml")
    # `workload` that is not a table is refused in one line (it was an AttributeError, a traceback)
    with pytest.raises(ImportFormatError, match=r"^w.toml:1: workload must be a table"):
        describe(toml="workload = 5\n", toml_path="w.toml")
    with pytest.raises(ImportFormatError, match=r"^job.sh:2: unknown key 'colour'"):
        describe(script="#!/bin/sh\n#IOADVISE colour=blue\n", script_path="job.sh")
    s = describe(script="#!/bin/sh\n#IOADVISE colour=blue\n", script_path="job.sh", strict=False)
    assert any("job.sh:2" in w and "colour" in w for w in s.warnings)


@pytest.mark.parametrize("line", ["nodes=0", "ranks_per_node=0", "files=0", "access_size=0", "stripe_size=1",
                                  "stripe_size=0", "stripe_size=100000", "stripe_size=4GiB"])
def test_impossible_values_are_refused_at_their_line(tmp_path, line):
    """A value no job can have (0 nodes, a stripe size Lustre refuses) must not get past the line it is on: the
    error names job.sh:3, as every other bad #IOADVISE value does, in describe and through `ioadvise wrap`."""
    script = f"#!/bin/sh\n#SBATCH -N 2 -n 8\n#IOADVISE api=MPIIO bytes_per_rank=1GiB {line}\necho\n"
    with pytest.raises(ImportFormatError, match=r"^job.sh:3: " + line.split("=")[0]):
        describe(script=script, script_path="job.sh")
    (tmp_path / "job.sh").write_text(script)
    p = run("wrap", "job.sh", "-o", "w.sh", "--center", "HA8000", cwd=tmp_path)
    assert p.returncode == 2 and "job.sh:3:" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "w.sh").exists()


def test_every_dialects_keys_are_one_table():
    """The keys the three former dialects took (advise --script, the job-script parser, the Lua hook) are all
    in the table, with one meaning each."""
    former = {"nodes", "ranks_per_node", "bytes_per_rank", "total_bytes", "api", "layout", "op", "access_size",
              "random", "files", "lifetime", "system", "center", "stripe_count", "stripe_size", "tier",
              "collective", "mpi", "outdir", "stage_in", "hint", "pattern"}
    assert former <= set(SCRIPT_KEYS)
    s = describe(script="#!/bin/sh\n#IOADVISE hint=romio_cb_write:enable hint=cb_nodes:4 stage_in=a stage_in=b\n"
                        "#IOADVISE random=true outdir=res\n")
    assert s.hints == {"romio_cb_write": "enable", "cb_nodes": "4"} and s.stage_in == ("a", "b")
    assert s.pattern == "random" and s.outdir == "res"


def _lua_table(text: str) -> dict[str, str]:
    """The hook's KEYS table as the real Lua 5.1 reads it."""
    block = re.search(r"-- >>> IOADVISE KEYS.*?-- <<< IOADVISE KEYS", text, re.S).group(0)
    prog = block + '\nlocal n = {}\nfor k in pairs(KEYS) do table.insert(n, k) end\ntable.sort(n)\n' \
                   'for _, k in ipairs(n) do io.write(k, "\\t", KEYS[k], "\\n") end\n'
    p = subprocess.run([shutil.which("lua5.1") or "lua5.1", "-"], input=prog, capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return dict(line.split("\t") for line in p.stdout.splitlines())


def test_the_lua_hooks_key_table_equals_the_librarys():
    text = (ROOT / "slurm" / "job_submit.lua").read_text()
    assert lua_keys_block() in text
    assert _lua_table(text) == {k.name: k.lua for k in KEYS if k.script}
    # the hook would take every value the library accepts in the documented example, and refuse a hostile one
    example = {"bytes_per_rank": "2GiB", "api": "MPIIO", "layout": "shared", "lifetime": "after-job",
               "outdir": "results", "stage_in": "input.h5", "hint": "romio_cb_write:enable", "mpi": "openmpi@4.1.4"}
    lua = _lua_table(text)
    for k, v in example.items():
        assert re.fullmatch(_lua_to_re(lua[k]), v), (k, v)
    assert not re.fullmatch(_lua_to_re(lua["outdir"]), "x;rm -rf ~")


def _lua_to_re(pat: str) -> str:
    """A Lua pattern of the kind the table uses (classes %w %a %d, sets, + ? anchors) as a Python regex."""
    cls = {"w": "A-Za-z0-9", "a": "A-Za-z", "d": "0-9"}
    out, inside, i = "", False, 0
    while i < len(pat):
        ch = pat[i]
        if ch == "%":
            nxt = pat[i + 1]
            out += (cls[nxt] if inside else f"[{cls[nxt]}]") if nxt in cls else re.escape(nxt)
            i += 2
            continue
        inside = True if ch == "[" else False if ch == "]" else inside
        out += re.escape(ch) if inside and ch not in "[]" else ch
        i += 1
    return out


def _documented_scripts() -> list[str]:
    """Every job script (a fenced block starting with #!) in docs/ that has #IOADVISE lines."""
    out = []
    for md in sorted((ROOT / "docs").glob("*.md")):
        for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", md.read_text(), re.S):
            if block.startswith("#!") and "#IOADVISE" in block:
                out.append(block + "srun ./app\n")
    return out


def test_advise_accepts_every_documented_ioadvise_example(tmp_path):
    scripts = _documented_scripts()
    assert scripts, "docs/ has no #IOADVISE example"
    documented = set(re.findall(r"^\| `(\w+)` \|", (ROOT / "docs" / "slurm.md").read_text(), re.M))
    assert documented == set(SCRIPT_KEYS)            # docs/slurm.md lists exactly the table's script keys
    for i, text in enumerate(scripts):
        f = tmp_path / f"ex{i}.sh"
        f.write_text(text)
        p = run("advise", "--script", str(f), "--system", "HA8000", "--json")
        assert p.returncode == 0, (text, p.stderr)
        w = json.loads(p.stdout)["workload"]
        sb = re.search(r"#SBATCH -N (\d+) --ntasks-per-node=(\d+)", text)
        if sb:
            assert (w["nodes"], w["ranks_per_node"]) == (int(sb.group(1)), int(sb.group(2)))


def test_submit_dry_run_advises_for_the_nodes_given_on_the_command_line(tmp_path):
    """`ioadvise submit job.sh -N 8` advises for 8 nodes, not the script's 4 (and sbatch gets -N 8)."""
    js = tmp_path / "job.sh"
    js.write_text("#!/bin/bash\n#SBATCH -N 4 --ntasks-per-node=16\n#IOADVISE bytes_per_rank=1GiB api=MPIIO "
                  "layout=shared\nsrun ./app\n")
    p = run("submit", str(js), "--center", "HA8000", "--dry-run", "--json", "-N", "8")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["workload"]["nodes"] == 8 and r["workload"]["ranks_per_node"] == 16
    assert r["workload"]["sources"]["nodes"] == "sbatch option" and r["sbatch_options"] == ["-N", "8"]
    assert r["source"] == "advice" and "8 node(s)" in r["summary"]["job"]
    p4 = run("submit", str(js), "--center", "HA8000", "--dry-run", "--json")
    assert json.loads(p4.stdout)["workload"]["nodes"] == 4


def test_wrap_summary_and_diff(tmp_path):
    js = tmp_path / "job.sh"
    js.write_text("#!/bin/bash\n#SBATCH -N 2\necho hi\n")
    p = run("wrap", str(js), "-o", str(tmp_path / "o.sh"), "--hints", "romio_cb_write=enable", "--mpi",
            "openmpi@4.1.4")
    assert p.returncode == 0, p.stderr
    assert "MPI-IO hints: romio_cb_write=enable for Open MPI 4.x" in p.stdout and "OMPI_MCA_io=romio321" in p.stdout
    assert "@@" not in p.stdout                                        # no diff unless asked
    p = run("wrap", str(js), "-o", str(tmp_path / "o.sh"), "--hints", "romio_cb_write=enable", "--diff")
    assert "@@" in p.stdout and "+# >>> ioadvise wrap" in p.stdout
    p = run("wrap", str(js), "-o", str(tmp_path / "o.sh"), "--hints", "romio_cb_write=enable", "--json")
    r = json.loads(p.stdout)
    assert r["diff"].startswith("---") and r["summary"]["settings"][0].startswith("MPI-IO hints")
    documented = re.search(r"## `wrap --json`.*", (ROOT / "docs" / "json.md").read_text(), re.S).group(0)
    for key in (*r, *r["summary"], *r["settings"]):
        assert f"`{key}`" in documented, key          # docs/json.md names every field wrap --json prints
