"""Every command the product prints or writes, over centers x MPI flavours x workloads, must be safe to paste:
`bash -n` accepts it, every `-S` is in Lustre's size grammar and a multiple of 64 KiB, no `lfs setstripe` lands
on a bare $USER or home directory, the ROMIO hints path is absolute, and a read job is never told to stripe.

The commands are also run (with `lfs` replaced by a shell function that records its arguments) to see where
the variables really point; nothing here needs Lustre.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ioadvisor.advise import advise
from ioadvisor.advise.explain import plan_for
from ioadvisor.center import available_centers, load_center, load_center_file
from ioadvisor.frozen import replace
from ioadvisor.kb import KB
from ioadvisor.model.types import Workload
from ioadvisor.lustre import Setstripe, lfs_size
from ioadvisor.mpiio import FLAVOURS, Plan, render
from ioadvisor.slurm.rewrite import TierSpec, WrapSettings, wrap

LFS_SIZE = re.compile(r"^\d+[bkmgtpeBKMGTPE]?$")        # llapi_parse_size: digits and one optional unit letter
UNIT = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
VERSIONS = {"mpich": [None, "4.1.2"], "mvapich2": [None], "cray": [None, "8.1.28"],
            "openmpi": [None, "1.10.7", "2.1.2", "3.1.6", "4.1.4", "5.0.3", "6.0.0"],
            "intel": [None, "5.0.1", "2019.9", "2021.6", "2021.11"]}
TIER_CENTER = """
name = "GridSite"
mpi = "openmpi"
mpi_version = "4.1.4"
[[filesystems]]
name = "lustre"
type = "lustre"
mount = "/lustre/$USER"
ost_count = 16
default_stripe_size = "1MiB"
[[filesystems]]
name = "home"
type = "nfs"
mount = "$HOME"
[[filesystems]]
name = "bb"
type = "beegfs"
persistent = false
[[tiers]]
name = "bb"
filesystem = "bb"
request = "--constraint=BEEOND"
mount = "/mnt/odfs/$SLURM_JOB_ID"
"""


def _sizes(text: str) -> list[str]:
    return re.findall(r"lfs (?:setstripe|migrate)[^\n`]*?-S (\S+)", text)


def _check_static(text: str, op: str) -> None:
    """The checks that need no shell: size grammar, setstripe target, read jobs."""
    for s in _sizes(text):
        assert LFS_SIZE.match(s), f"-S {s} is not in Lustre's size grammar"
        n = int(s.rstrip("bkmgtpeBKMGTPE")) * UNIT[s[-1].lower() if s[-1].isalpha() else ""]
        assert n % (64 << 10) == 0, f"-S {s} = {n} bytes is not a multiple of 64 KiB"
    for _, target in re.findall(r"^\s*(?:if )?lfs setstripe((?: -\w \S+)*) (\"[^\"]*\"|[^\s;]+)", text, re.M):
        assert target == '"$IOADVISE_DIR"', f"lfs setstripe on {target}, not on the job directory"
    if op == "read":
        assert not re.search(r"^\s*(?:if )?lfs setstripe", text, re.M), "a read job was told to lfs setstripe"
        code = "\n".join(x for x in text.splitlines() if not x.lstrip().startswith(("#", "echo ")))
        assert "striping_factor" not in code and "striping_unit" not in code, "striping hints for a read job"


def _run_where(texts: list[str], tmp: Path) -> list[dict[str, str]]:
    """Run each text in bash (lfs recorded, mkdir/cp real, inside tmp) and report where the variables point."""
    out = []
    script = ['lfs() { printf "LFS %s\\n" "$*"; }', "du() { echo 0; }", "cp() { :; }",
              "export USER=alice HOME=/home/alice SLURM_JOB_ID=77"]
    for i, t in enumerate(texts):
        body = "\n".join(line for line in t.splitlines() if not line.startswith("#SBATCH"))
        script += [f"( cd {str(tmp)!r} && unset IOADVISE_DIR ROMIO_HINTS && mkdir() {{ :; }}",
                   body, 'printf "DIR %s\\nHINTS %s\\nEND\\n" "${IOADVISE_DIR:-}" "${ROMIO_HINTS:-}" )']
    p = subprocess.run(["bash", "-s"], input="\n".join(script), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cur: dict[str, str] = {"lfs": ""}
    for line in p.stdout.splitlines():
        key, _, val = line.partition(" ")
        if key == "END":
            out.append(cur)
            cur = {"lfs": ""}
        elif key == "LFS":
            cur["lfs"] += val + "\n"
        else:
            cur[key] = val
    assert len(out) == len(texts)
    return out


def _check_where(where: dict[str, str]) -> None:
    bare = {"/lustre/alice", "/home/alice", "/home", "/lustre", "/", "/tmp", "/mnt/odfs/77"}
    for line in where["lfs"].splitlines():
        if line.startswith("setstripe"):
            target = line.split()[-1]
            assert target not in bare and target.endswith("/ioadvise-77"), f"lfs setstripe on {target}"
    if where["HINTS"]:
        assert where["HINTS"].startswith("/") and where["HINTS"].endswith("/ioadvise-77/romio-hints")


def _bash_n(texts: list[str]) -> None:
    """`bash -n` on each text; one bash for all of them (each in its own function body), then singly on failure."""
    joined = "\n".join(f"_t{i}() {{\n:\n{t}\n}}" for i, t in enumerate(texts))
    p = subprocess.run(["bash", "-n"], input=joined, capture_output=True, text=True, timeout=60)
    if p.returncode == 0:
        return
    for t in texts:
        p = subprocess.run(["bash", "-n"], input=t, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, f"bash -n rejects:\n{t}\n{p.stderr}"
    raise AssertionError("bash -n rejects the joined texts")


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """(label, op, text) for every option of every advice over the grid, per flavour and version."""
    d = tmp_path_factory.mktemp("grid")
    (d / "grid.toml").write_text(TIER_CENTER)
    centers = [load_center_file(p) for p in available_centers()] + [load_center(d / "grid.toml")]
    out = []
    with KB.open(None, create=False) as kb:
        for c in centers:
            for op in ("write", "read"):
                for layout in ("shared", "fpp"):
                    for api, lifetime in (("MPIIO", "after-job"), ("POSIX", "job"), ("HDF5", "after-job")):
                        w = Workload(nodes=8, ranks_per_node=16, bytes_per_rank=1 << 30, api=api, layout=layout,
                                     op=op, lifetime=lifetime)
                        try:
                            a = advise(w, kb, c)
                        except Exception as e:   # a workload a center cannot serve is reported, not rendered
                            assert "Traceback" not in str(e)
                            continue
                        for opt in (a.recommendation, a.baseline, *a.alternatives):
                            for f in FLAVOURS:
                                for v in VERSIONS[f]:
                                    text = render(plan_for(opt.config, c, w, f, v)).text()
                                    out.append((f"{c.name}/{op}/{layout}/{api}/{f}@{v}", op, text))
    return out


def test_grid_covers_what_it_claims(grid):
    labels = {g[0] for g in grid}
    assert {lab.split("/")[1] for lab in labels} == {"write", "read"}
    assert any("IOADVISE_SCRATCH" in t for _, _, t in grid), "no tier in the grid"
    assert any("lfs setstripe" in t for _, _, t in grid) and any("ROMIO_HINTS" in t for _, _, t in grid)
    assert any("MPICH_MPIIO_HINTS" in t for _, _, t in grid) and any("OMPI_MCA_io=romio314" in t for _, _, t in grid)


def test_every_advised_command_is_safe(grid, tmp_path):
    texts = sorted({t for _, _, t in grid})
    _bash_n(texts)
    for label, op, text in grid:
        _check_static(text, op)
    for where in _run_where(texts, tmp_path):
        _check_where(where)


def test_wrapped_scripts_over_the_grid_pass_bash_n_and_the_same_checks(tmp_path):
    for op in ("write", "read"):
        for f in FLAVOURS:
            for v in VERSIONS[f]:
                for tier in (None, TierSpec(name="bb", request="--constraint=BEEOND", mount="/mnt/odfs/$SLURM_JOB_ID")):
                    s = WrapSettings(stripe_count=4, stripe_size=4 << 20, op=op, mpi=f, mpi_version=v, tier=tier,
                                     hints={"romio_cb_write": "enable", "striping_factor": "4"},
                                     stage_in=("in.dat",))
                    text = wrap("#!/bin/bash\n#SBATCH -N 2\nsrun ./app\n", s)
                    _bash_n([text])
                    _check_static(text, op)


plans = st.builds(
    Plan,
    op=st.sampled_from(["write", "read"]), api=st.sampled_from(["POSIX", "MPIIO", "HDF5"]),
    stripe_count=st.one_of(st.none(), st.integers(1, 2000), st.just(-1)),
    stripe_size=st.one_of(st.none(), st.integers(1, 1 << 14).map(lambda k: k * (64 << 10))),
    striping_allowed=st.booleans(), fs_type=st.sampled_from([None, "lustre", "gpfs", "nfs"]),
    hints=st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
                          st.from_regex(r"[A-Za-z0-9_.,:*=-]{1,12}", fullmatch=True), max_size=4),
    mpi=st.sampled_from(FLAVOURS),
    base=st.sampled_from(["$PWD", "/lustre/$USER", "$HOME", "/gpfs/x y/$USER", "/scratch/it's"]),
    tier=st.sampled_from([None, "bb"]), tier_mount=st.sampled_from(["/mnt/odfs/$SLURM_JOB_ID", "$TMPDIR"]),
    stage_in=st.lists(st.text(alphabet="ab '\"$`;", min_size=1, max_size=6), max_size=2).map(tuple),
    lifetime=st.sampled_from(["job", "after-job"]), hdf5_alignment=st.sampled_from([None, 1 << 20]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans, version=st.sampled_from([None, "2.1.2", "4.1.4", "5.0.3", "2021.11"]))
def test_any_plan_renders_safe_commands(plan, version, tmp_path):
    c = render(replace(plan, mpi_version=version))
    text = c.text()
    _bash_n([text])
    _check_static(text, plan.op)
    (where,) = _run_where([text], tmp_path)
    _check_where(where)


@pytest.mark.parametrize("n,ok", [(1 << 20, "1M"), (64 << 10, "64K"), (192 << 10, "192K"), (3 << 30, "3G"),
                                  (1000000, None), (4096, None), (0, None), (-(1 << 20), None)])
def test_stripe_sizes_in_lustre_grammar(n, ok):
    if ok is None:
        with pytest.raises(ValueError):
            lfs_size(n)
        with pytest.raises(Exception):
            render(Plan(stripe_size=n))
    else:
        assert lfs_size(n) == ok and Setstripe("$IOADVISE_DIR", 2, n).render() == f'lfs setstripe -c 2 -S {ok} "$IOADVISE_DIR"'


def test_center_with_a_decimal_stripe_size_is_rejected(tmp_path):
    """`default_stripe_size = "1 MB"` is 1,000,000 bytes, which Lustre rejects: the center file is refused."""
    from ioadvisor.errors import ConfigError
    p = tmp_path / "c.toml"
    p.write_text('name = "X"\n[[filesystems]]\nname = "l"\ntype = "lustre"\ndefault_stripe_size = "1 MB"\n')
    with pytest.raises(ConfigError, match="multiple of 64 KiB"):
        load_center(p)


def test_advise_wrap_and_diagnose_print_the_same_commands(tmp_path):
    """One configuration (HA8000, 30 stripes of 1 MiB, the advised hints), three commands: the lfs line is the
    same string in all three, and every line advise prints after the directory definition is in the wrapped
    script verbatim."""
    import json
    import sys

    import darshan  # noqa: F401  (PyDarshan ships the example log)
    from ioadvisor.darshanlog.child import summarize
    ioadvise = str(Path(sys.executable).parent / "ioadvise")
    p = subprocess.run([ioadvise, "advise", "--system", "HA8000", "-N", "16", "--ranks-per-node", "4",
                        "--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "shared", "--stripe-count", "30",
                        "--stripe-size", "1MiB", "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    rec, text = doc["recommendation"], doc["mpi"]["commands"]
    assert rec["commands"]["lfs"] == 'lfs setstripe -c 30 -S 1M "$IOADVISE_DIR"'
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n#SBATCH -N 16\nsrun ./app\n")
    hints = ",".join(f"{k}={v}" for k, v in rec["hints"].items())
    w = subprocess.run([ioadvise, "wrap", str(job), "-o", str(tmp_path / "w.sh"), "--stripe-count", "30",
                        "--stripe-size", "1MiB", "--mpi", doc["mpi"]["flavour"], *(["--hints", hints] if hints else [])],
                       capture_output=True, text=True, timeout=60)
    assert w.returncode == 0, w.stderr
    wrapped = (tmp_path / "w.sh").read_text()
    lines = [x for x in text.splitlines() if not x.startswith("#")]
    assert lines[0].startswith('export IOADVISE_DIR="/lustre/${USER}/ioadvise-')          # advise: the mount
    assert 'export IOADVISE_DIR="${_ioadv_out}/ioadvise-${SLURM_JOB_ID:-$$}"' in wrapped    # wrap: its outdir
    for line in lines[1:]:
        assert line in wrapped, f"advise prints {line!r}, the wrapped script does not"
    # diagnose: a 2 TiB shared file on one OST of a 30-OST center gets the same lfs command (flags and size
    # spelling identical; diagnose names a new directory beside the file)
    import os
    from ioadvisor.diagnose.rules import Context, run_rules
    from ioadvisor.lustre import Setstripe
    log = Path(darshan.__file__).parent / "examples" / "example_logs" / "example.darshan"
    base = summarize(log)
    (f,) = base.shared_files            # its 2 TiB shared file, as if created with one stripe
    big = replace(f, lustre=replace(f.lustre, stripe_count=1, osts=(f.lustre.osts[0],)))
    s = replace(base, files=(big,))
    (lus,) = [x for x in run_rules(s, ctx=Context(center_ost_count=30, center_name="HA8000")) if x.id == "LUS001"]
    assert big.lustre.stripe_size == 1 << 20
    sdir = os.path.join(os.path.dirname(big.path) or ".", "striped")
    want = Setstripe(sdir, 30, 1 << 20).render()
    assert f"`{want}`" in lus.message and f"`mkdir -p {sdir}`" in lus.message and lus.evidence["command"] == want
    # never on the file's own directory, which may be a top-level $USER directory
    assert f"{Setstripe(os.path.dirname(big.path), 30, 1 << 20).render()}`" not in lus.message
    assert want.rsplit(" ", 1)[0] == rec["commands"]["lfs"].rsplit(" ", 1)[0] == "lfs setstripe -c 30 -S 1M"


def test_diagnose_never_stripes_an_existing_directory():
    """Every LUS001 command over the wheel's logs (each shared file made single-striped) targets a new directory
    `striped` beside the file, made by the mkdir printed with it; -S in Lustre's grammar."""
    import os

    import darshan
    from ioadvisor.darshanlog.child import summarize
    from ioadvisor.diagnose.rules import Context, run_rules
    logs = sorted((Path(darshan.__file__).parent / "examples" / "example_logs").glob("*.darshan"))
    seen = 0
    for log in logs:
        try:
            base = summarize(log)
        except Exception:
            continue                      # logs the reader refuses are diagnose's own tests' business
        files = tuple(replace(f, lustre=replace(f.lustre, stripe_count=1,
                                                                       osts=f.lustre.osts[:1]))
                      if f.lustre is not None else f for f in base.files)
        s = replace(base, files=files)
        for ctx in (Context(), Context(center_ost_count=30, center_name="HA8000")):
            for f in run_rules(s, ctx=ctx):
                for cmd in re.findall(r"`(lfs setstripe [^`]*)`", f.message):
                    seen += 1
                    _check_static(cmd.replace(cmd.split()[-1], '"$IOADVISE_DIR"'), "write")
                    target = cmd.split()[-1]
                    assert target.endswith("/striped") and f"`mkdir -p {target}`" in f.message, cmd
                    # the parent is the shared file's own directory: striping lands one level below it
                    assert any(os.path.dirname(x.path) == os.path.dirname(target) for x in s.files), cmd
    assert seen > 0
