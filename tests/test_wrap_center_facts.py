"""`wrap` renders a job's MPI-IO lines from the same facts `advise` renders them from: the job's interface (its
description's api, or the advice's) and the type and striping policy of the center's file system.

What must not happen: a wrapped job exporting what `ioadvise advise` would not print for the same job and center,
e.g. Intel MPI told its file system is Lustre (I_MPI_EXTRA_FILESYSTEM_FORCE=lustre) on a GPFS center, or a ROMIO
hints file written and exported for a job that says it uses POSIX (POSIX I/O never reads MPI-IO hints).
"""
from __future__ import annotations

import re

import pytest

from ioadvisor.advise.explain import plan_for
from ioadvisor.center import load_center
from ioadvisor.frozen import replace
from ioadvisor.mpiio.render import render
from ioadvisor.slurm.submit import Explicit, wrap_script

SCRIPT = """#!/bin/bash
#SBATCH -N 4 --ntasks-per-node=8
#IOADVISE bytes_per_rank=1GiB api={api} layout=shared
srun ./app --out "$IOADVISE_DIR/out"
"""
HINT_LINES = re.compile(r"^\s*(export \w+=.*|printf .*romio-hints\"?)$", re.MULTILINE)


@pytest.fixture(autouse=True)
def no_site(monkeypatch, tmp_path):
    for k in ("IOADVISE_KB", "IOADVISE_CENTERS", "IOADVISE_CENTER_KB", "IOADVISE_DATA"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


def mpi_lines(text: str) -> set[str]:
    """The exports and the hints file the wrapped block writes, except its own bookkeeping variables."""
    return {m.strip() for m in HINT_LINES.findall(text) if not re.match(r"export (IOADVISE_\w+|_ioadv)", m.strip())}


HINTS = {"romio_cb_write": "enable"}


@pytest.mark.parametrize("center, api, mpi", [
    ("PixStor-NVMe", "MPIIO", "intel@2021.10"),    # GPFS: Intel MPI's driver is gpfs, never lustre
    ("PixStor-NVMe", "MPIIO", "intel@2018"),
    ("HA8000", "POSIX", "mpich"),                  # a POSIX job: no hints, whatever the flavour
    ("PixStor-NVMe", "POSIX", "intel@2021.10"),
    ("HA8000", "MPIIO", "intel@2021.10"),          # Lustre stays lustre
])
@pytest.mark.parametrize("how", ["advice", "explicit"])
def test_wrap_prints_the_mpi_lines_advise_prints(center, api, mpi, how):
    c = load_center(center)
    flavour, version = mpi.split("@") if "@" in mpi else (mpi, None)
    if how == "advice" and api == "POSIX":
        pytest.skip("advise refuses MPI-IO hints pinned on a POSIX job")
    text = SCRIPT.format(api=api)
    plain = wrap_script(text, Explicit(mpi=flavour, mpi_version=version), center=c, strict=True)
    cfg = plain.advice.recommendation.config
    assert cfg.api == api
    if how == "advice":        # the hint pinned in the job description, the rest advised
        wrapped = wrap_script(text.replace("layout=shared", "layout=shared hint=romio_cb_write:enable"),
                              Explicit(mpi=flavour, mpi_version=version), center=c, strict=True)
        cfg = wrapped.advice.recommendation.config
        assert cfg.hints.get("romio_cb_write") == "enable"
    else:                      # the hints given to wrap, on the configuration advised for the job
        wrapped = wrap_script(text, Explicit(mpi=flavour, mpi_version=version, hints=HINTS), center=c, strict=True)
        cfg = replace(cfg, hints=HINTS)
    # what `advise` prints for this configuration of the job on this center with this MPI
    cmds = render(plan_for(cfg, c, plain.spec.workload(), mpi=flavour, mpi_version=version))
    expected = set(cmds.env) | ({cmds.hints_write} if cmds.hints_write else set())
    assert wrapped.source == how
    got = mpi_lines(wrapped.text)
    assert got == expected, (got, expected)
    if api == "POSIX":
        assert not got and "ROMIO_HINTS" not in wrapped.text and "romio-hints" not in wrapped.text
        assert "the job uses POSIX, which does not read them" in wrapped.text
    else:
        assert 'export ROMIO_HINTS="$IOADVISE_DIR/romio-hints"' in got
    fs = c.filesystem(cfg.filesystem)
    if fs.type != "lustre":
        assert "lustre" not in " ".join(got).lower() and "lfs setstripe" not in wrapped.text
    if flavour == "intel" and api != "POSIX":   # Intel MPI's ROMIO driver is the file system's own
        assert any(line.endswith((f"_FORCE={fs.type}", f"_LIST={fs.type}")) for line in got), got


def test_striping_under_the_current_directory_says_it_must_lie_on_the_file_system():
    """A center file without a mount for its Lustre (TSUBAME3.0's seed names none) gets its job directory under
    $PWD: the commands say that the current directory must lie on Lustre, or lfs setstripe fails. HA8000, whose
    file states /lustre/$USER, gets no such note."""
    from ioadvisor.model.types import Config, Workload
    w = Workload(nodes=16, ranks_per_node=28, bytes_per_rank=1 << 30, api="MPIIO", layout="shared", op="write")
    cfg = Config(filesystem="lustre", layout="shared", api="MPIIO", collective=True, stripe_count=16)
    c = render(plan_for(cfg, load_center("tsubame3"), w))
    assert c.lfs and '"${PWD}/' in c.directory[0]
    assert any("no mount" in n and "lfs setstripe fails elsewhere" in n for n in c.notes), c.notes
    c = render(plan_for(cfg, load_center("ha8000"), w))
    assert c.lfs and "PWD" not in c.directory[0] and not any("no mount" in n for n in c.notes), c.directory
