"""Lustre's facts live in ioadvisor/lustre.py alone, and no command Lustre refuses is ever produced.

lfs-setstripe(1): `-c N` is -1 (every OST) or a count up to LOV_MAX_STRIPE_COUNT (2000); `-S SIZE` is a
multiple of 64 KiB (65536 bytes) below 4 GiB, a number with at most one unit letter (`1M`, never `1MiB`).
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ioadvisor import lustre
from ioadvisor.advise import candidate_point
from ioadvisor.center import load_center
from ioadvisor.cli import app
from ioadvisor.errors import UsageError
from ioadvisor.lustre import MAX_STRIPE_COUNT, STRIPE_UNIT, Setstripe, lfs_size
from ioadvisor.model.run import Run
from ioadvisor.model.types import Config, Workload
from ioadvisor.mpiio import Plan, render
from ioadvisor.predict import run_point

PKG = Path(lustre.__file__).parent
runner = CliRunner()

# Lustre's grammar for what ioadvisor writes: `lfs setstripe [-c N] [-S NUMBER[KMG]] PATH`
LFS = re.compile(r"^lfs (setstripe|migrate)( -c (-1|[1-9][0-9]*))?( -S ([1-9][0-9]*)([KMG]))? \S+$")
UNIT = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _lustre_accepts(cmd: str) -> bool:
    m = LFS.match(cmd)
    if not m:
        return False
    count = int(m.group(3)) if m.group(3) else None
    size = int(m.group(5)) * UNIT[m.group(6)] if m.group(5) else None
    return (count is None or count <= MAX_STRIPE_COUNT) and (size is None or (size % 65536 == 0 and size < 4 << 30))


# ---- one owner per fact -----------------------------------------------------------------------------------------

# byte counts of other things that happen to be 64 KiB (not the stripe unit): file, the line's own name
NOT_THE_STRIPE_UNIT = {("model/validate.py", "MAX_TEXT"), ("kb/store.py", "IMPORT_CACHE_KIB"),
                       ("importers/__init__.py", "SNIFF_BYTES"), ("importers/ior.py", "_kind(data[:65536])"),
                       ("predict/physical.py", '"log_lock"')}
FACTS = {
    "the 64 KiB stripe unit": re.compile(r"\b65536\b|65_536|64 \* 1024|64 << 10|1 << 16|0x10000"),
    "the --constraint pattern": re.compile(r"--constraint=\|-C"),
    "the stripe-count rule": re.compile(r"stripe\w*\s*(==|<)\s*-1\b|\bsc\s*(==|<)\s*-1\b|osts?\b.*else\s+(INF|math\.inf"
                                        r"|float\(.inf.\))|\(n == 0 or n < -1\)|count == 0 or \w+ < -1"),
}


def _hits(rx: re.Pattern[str]) -> list[str]:
    out = []
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG).as_posix()
        for i, line in enumerate(p.read_text().splitlines(), 1):
            if rx.search(line) and not any(rel == f and name in line for f, name in NOT_THE_STRIPE_UNIT):
                out.append(f"{rel}:{i}: {line.strip()}")
    return out


@pytest.mark.parametrize("fact", sorted(FACTS))
def test_each_lustre_fact_is_written_once_in_lustre_py(fact):
    """A second spelling of the stripe unit, the constraint pattern or the stripe-count rule outside lustre.py
    is a second owner that can drift from the first: the grep finds each in lustre.py and nowhere else."""
    hits = _hits(FACTS[fact])
    assert hits and all(h.startswith("lustre.py:") for h in hits), hits
    assert len(hits) == 1, hits


def test_the_grep_finds_a_copy():
    """The grep above can fail: a copied line outside lustre.py is found."""
    for line in ("    if n % 65536:", '    m = re.match(r"^(?:--constraint=|-C\\s*)(.+)$", r)',
                 "    if sc == -1:", "    return p.osts if p.osts and p.osts > 0 else INF"):
        assert any(rx.search(line) for rx in FACTS.values()), line


# ---- the lfs grammar --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("count,size", [
    (0, None), (-2, None), (-5, 1 << 20), (MAX_STRIPE_COUNT + 1, None), (4, 1000000), (4, 4096), (4, 0),
    (4, -(1 << 20)), (4, 4 << 30), (4, (1 << 20) + 1), (True, None), (4, 1.5 * (1 << 20)), ("4", None)])
def test_a_command_lustre_refuses_cannot_be_made(count, size):
    """-c 0 / below -1 / above 2000, -S not a positive multiple of 64 KiB (1000000 = 15 x 65536 + 16960) or
    4 GiB and more: Setstripe refuses to exist, and a plan asking for it is a usage error, not a script."""
    with pytest.raises(ValueError):
        Setstripe("$IOADVISE_DIR", count, size)
    with pytest.raises(UsageError):
        render(Plan(stripe_count=count, stripe_size=size))


@settings(max_examples=300, deadline=None)
@given(count=st.one_of(st.none(), st.integers(-10, 5000)), size=st.one_of(st.none(), st.integers(-(1 << 33), 1 << 33)))
def test_every_setstripe_that_exists_is_one_lustre_accepts(count, size):
    try:
        cmd = Setstripe("/lus/$USER/out", count, size)
    except ValueError:
        assert (count is not None and lustre.stripe_count_problem(count)) or lustre.stripe_size_problem(size)
        return
    text = cmd.render()
    assert _lustre_accepts(shlex.join(shlex.split(text))), text
    assert "iB" not in text and cmd.flags() in text


@pytest.mark.parametrize("n,spelled", [(65536, "64K"), (1 << 20, "1M"), (192 << 10, "192K"), (3 << 30, "3G"),
                                       ((4 << 30) - STRIPE_UNIT, "4194240K")])
def test_sizes_have_one_unit_letter(n, spelled):
    """1 MiB is `1M` (lfs reads `1MiB` as an error); the largest size below 4 GiB is a whole number of K."""
    assert lfs_size(n) == spelled
    assert int(spelled[:-1]) * UNIT[spelled[-1]] == n


def test_flags_are_data_not_sliced_text():
    s = Setstripe('/lus/a dir/"x"', 8, 4 << 20)
    assert s.flags() == "-c 8 -S 4M"
    assert shlex.split(s.render()) == ["lfs", "setstripe", "-c", "8", "-S", "4M", '/lus/a dir/"x"']
    assert Setstripe("FILE", -1).render("migrate") == "lfs migrate -c -1 FILE"
    assert render(Plan(stripe_count=30, stripe_size=1 << 20)).setstripe == Setstripe("$IOADVISE_DIR", 30, 1 << 20)


def test_wrap_refuses_a_stripe_count_lustre_refuses_in_one_line(tmp_path):
    """`wrap --stripe-count 3000` would write `lfs setstripe -c 3000`, which Lustre refuses at run time (more than
    2000 stripes): exit 2, one line, nothing written."""
    src = tmp_path / "job.sh"
    src.write_text("#!/bin/bash\n#SBATCH -N 2\nsrun ./app\n")
    out = tmp_path / "o.sh"
    for bad in ("3000", "0", "-2"):
        r = runner.invoke(app, ["wrap", str(src), "-o", str(out), "--stripe-count", bad])
        assert r.exit_code == 2, r.output
        assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1, r.output
        assert not out.exists()


# ---- stripable and striped --------------------------------------------------------------------------------------

def _center(tmp_path, fstype, striping):
    p = tmp_path / f"{fstype}-{striping}.toml"
    p.write_text(f'name = "Site"\nmpi = "mpich"\n[[filesystems]]\nname = "scratch"\ntype = "{fstype}"\n'
                 f'mount = "/scratch"\nost_count = 16\nstriping = "{striping}"\n')
    return load_center(p)


@pytest.mark.parametrize("fstype,striping,ok", [("lustre", "user", True), ("lustre", "pfl-managed", False),
                                                ("lustre", "none", False), ("beegfs", "user", False),
                                                ("gpfs", "user", False)])
def test_users_stripe_only_lustre_that_lets_them(tmp_path, fstype, striping, ok):
    """`lfs setstripe` acts on Lustre alone, and only where the center leaves striping to users: on BeeGFS
    (striping = "user") `wrap --stripe-count 4` writes no lfs line and says why."""
    c = _center(tmp_path, fstype, striping)
    assert c.filesystems[0].stripable is ok
    src = tmp_path / "job.sh"
    src.write_text("#!/bin/bash\n#SBATCH -N 2\nsrun ./app\n")
    out = tmp_path / "o.sh"
    r = runner.invoke(app, ["wrap", str(src), "-o", str(out), "--center", str(tmp_path / f"{fstype}-{striping}.toml"),
                            "--stripe-count", "4", "--json"])
    assert r.exit_code == 0, r.output
    assert ("lfs setstripe -c 4" in out.read_text()) is ok
    assert ("the center does not let users stripe" in out.read_text()) is not ok


@pytest.mark.parametrize("striping", ["user", "pfl-managed"])
def test_a_candidate_is_modelled_as_the_runs_measured_there(tmp_path, striping):
    """On a PFL-managed Lustre the files are still striped (by the center's layout): a candidate there spans
    its default stripe (1 of 16 OSTs for one shared file), as a measured run there does, not every target."""
    c = _center(tmp_path, "lustre", striping)
    fs = c.filesystems[0]
    w = Workload(nodes=4, ranks_per_node=8, bytes_per_rank=1 << 30, api="mpiio", layout="shared")
    cand = candidate_point(Config(filesystem="scratch", layout="shared", api="MPIIO", collective=True), fs, w)
    run = run_point(Run(system="Site", filesystem="scratch", fs_type="lustre", nodes=4, ranks=32,
                        layout="shared", api="MPIIO", collective=True, op="write", value=1e9, unit="B/s"), fs.ost_count)
    assert cand.striped and run.striped
    assert cand.targets == run.targets == 1.0 and cand.stripes == run.stripes == 1.0


def test_every_ost_is_at_most_2000_stripes():
    assert lustre.stripes_of(-1, 5000) == MAX_STRIPE_COUNT and lustre.stripes_of(-1, 16) == 16
    assert lustre.stripes_of(-1, None) == 1 and lustre.stripes_of(None, 16, 4) == 4 and lustre.stripes_of(0, 16) == 1
    assert lustre.every_ost(-1, None) == -1 and lustre.every_ost(8, 16) == 8
    assert lustre.ost_limit(None) == lustre.ost_limit(0) == float("inf") and lustre.ost_limit(16) == 16.0


def test_mount_patterns_and_constraints():
    assert lustre.mount_regex("/lustre/$USER").match("/lustre/alice/run1")
    assert not lustre.mount_regex("/lustre/$USER").match("/lustre2/alice")
    assert not lustre.mount_regex("/lustre/${USER}/x").match("/lustre/a/b/x")
    assert lustre.constraint_of("--constraint=BEEOND") == lustre.constraint_of("-C BEEOND") == "BEEOND"
    assert lustre.constraint_of("--gres=nvme:1") is None and lustre.constraint_of(None) is None
    assert lustre.has_feature("ib&BEEOND", "BEEOND") and not lustre.has_feature("BEEOND2", "BEEOND")
