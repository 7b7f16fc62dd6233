"""Real MPI jobs on the test cluster, each run from a script `ioadvise wrap` produced, read back the hints.

One C probe, compiled for both MPIs, opens a new file with no info object and prints what
`MPI_File_get_info` returns. MPICH (the venv's) returns ROMIO's hints in effect. Debian's Open MPI 4.1
returns only keys the program set itself (none here), so for Open MPI the probe's job also sets
`ROMIO_PRINT_HINTS=1`, with which ROMIO prints the hints in effect when the file is opened; with the
default OMPIO component nothing is printed at all.

A second test runs the probe outside Slurm with each Open MPI component name in the flavour table: only the
one the table picks for the installed version makes the hints take effect; the others are missing from this
Open MPI (mpirun fails) and OMPIO ignores the hints file.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ioadvisor.mpiio.flavours import RULES, rule_for
from tests.slurm_cluster import slurm_cluster  # noqa: F401

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]

VENV_BIN = Path(sys.executable).parent
IOADVISE = str(VENV_BIN / "ioadvise")
HINTS = {"romio_cb_write": "disable", "cb_buffer_size": "8388608", "romio_ds_write": "disable"}
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

PROBE = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_File fh; MPI_Info info; int rank, n, i, flag;
    char key[MPI_MAX_INFO_KEY + 1], val[1025];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2 || MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                                  &fh) != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 3);
    MPI_File_get_info(fh, &info);
    MPI_Info_get_nkeys(info, &n);
    for (i = 0; rank == 0 && i < n; i++) {
        MPI_Info_get_nthkey(info, i, key);
        MPI_Info_get(info, key, 1024, val, &flag);
        printf("get_info %s=%s\n", key, val);
    }
    MPI_Info_free(&info);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
"""


def _openmpi_version() -> str:
    p = subprocess.run(["ompi_info", "--parsable"], capture_output=True, text=True, timeout=60)
    m = re.search(r"^ompi:version:full:(\S+)$", p.stdout, re.M)
    assert m, "ompi_info printed no version: is openmpi-bin installed (scripts/setup.sh)?"
    return m.group(1)


def _compile(tmp: Path) -> dict[str, Path]:
    src = tmp / "probe.c"
    src.write_text(PROBE)
    out = {}
    for name, cc in (("openmpi", shutil.which("mpicc.openmpi")), ("mpich", str(VENV_BIN / "mpicc"))):
        assert cc and Path(cc).exists(), f"no C compiler wrapper for {name}"
        exe = tmp / f"probe-{name}"
        p = subprocess.run([cc, "-O", "-o", str(exe), str(src)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        out[name] = exe
    return out


def _romio_printed(text: str) -> dict[str, str]:
    """ROMIO_PRINT_HINTS lines: `key = cb_buffer_size   value = 8388608`."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^key = (\S+)\s+value = (\S*)", text, re.M)}


def _get_info(text: str) -> dict[str, str]:
    return dict(re.findall(r"^get_info ([^=\s]+)=(\S*)$", text, re.M))


@pytest.fixture(scope="module")
def jobs(slurm_cluster, tmp_path_factory):
    """Wrap and run one Open MPI and one MPICH job; return {flavour: (slurm record, workdir, wrap report)}."""
    import json
    base = tmp_path_factory.mktemp("mpijobs")
    probes = _compile(base)
    version = _openmpi_version()
    launch = {
        "openmpi": f"export ROMIO_PRINT_HINTS=1\nmpirun.openmpi --allow-run-as-root --oversubscribe -n 2 "
                   f"{probes['openmpi']} data.bin > probe.txt 2>&1\n",
        "mpich": f"{VENV_BIN / 'mpiexec'} -n 2 {probes['mpich']} data.bin > probe.txt 2>&1\n",
    }
    out = {}
    for flavour, mpi in (("openmpi", f"openmpi@{version}"), ("mpich", "mpich")):
        d = base / flavour
        d.mkdir()
        (d / "job.sh").write_text(f"#!/bin/bash\n#SBATCH -n 2\n#SBATCH -o out.txt\nset -euo pipefail\n"
                                  f"{launch[flavour]}")
        env = {**slurm_cluster.env, **ROOT_OK, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        p = subprocess.run([IOADVISE, "wrap", "job.sh", "-o", "wrapped.sh", "--json", "--mpi", mpi,
                            "--hints", ",".join(f"{k}={v}" for k, v in HINTS.items())],
                           cwd=d, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        report = json.loads(p.stdout)
        sb = subprocess.run(["sbatch", "--parsable", "wrapped.sh"], cwd=d, env=env, capture_output=True, text=True,
                            timeout=60)
        assert sb.returncode == 0, sb.stderr
        out[flavour] = (sb.stdout.strip().split(";")[0], d, report)
    return {f: (slurm_cluster.wait(jid, timeout=120), d, rep) for f, (jid, d, rep) in out.items()}


def test_open_mpi_job_from_a_wrapped_script_runs_with_every_hint_in_effect(jobs):
    info, d, report = jobs["openmpi"]
    probe = (d / "probe.txt").read_text()
    assert info["ExitCode"] == "0:0", (d / "out.txt").read_text() + probe
    wrapped = (d / "wrapped.sh").read_text()
    assert "export OMPI_MCA_io=romio321" in wrapped          # the 4.x rule; not romio341 or romio314
    in_effect = _romio_printed(probe)
    assert in_effect, f"ROMIO printed no hints: the romio component was not used\n{probe}"
    for k, v in HINTS.items():
        assert in_effect.get(k) == v, (k, in_effect)
    assert report["settings"]["mpi"] == "openmpi" and report["settings"]["hints"] == HINTS
    said = (d / "out.txt").read_text()
    assert "ioadvise: hints: romio_cb_write=disable" in said and "OMPI_MCA_io=romio321" in said


def test_mpich_job_from_a_wrapped_script_reads_every_hint_back_with_get_info(jobs):
    info, d, report = jobs["mpich"]
    probe = (d / "probe.txt").read_text()
    assert info["ExitCode"] == "0:0", (d / "out.txt").read_text() + probe
    got = _get_info(probe)
    for k, v in HINTS.items():
        assert got.get(k) == v, (k, got)
    assert "OMPI_MCA_io" not in (d / "wrapped.sh").read_text()


def test_only_the_component_the_table_picks_makes_open_mpi_read_the_hints(tmp_path):
    """Outside Slurm, same probe and hints file: the table's component for the installed Open MPI applies every
    hint; the default OMPIO applies none; the other versions' component names do not exist in this Open MPI."""
    probe = _compile(tmp_path)["openmpi"]
    version = _openmpi_version()
    rule, note = rule_for("openmpi", version)
    assert note is None
    chosen = dict(rule.env)["OMPI_MCA_io"]
    hints_file = tmp_path / "romio-hints"
    hints_file.write_text("".join(f"{k} {v}\n" for k, v in HINTS.items()))

    def run(component: str | None) -> subprocess.CompletedProcess:
        env = {**os.environ, **ROOT_OK, "ROMIO_HINTS": str(hints_file), "ROMIO_PRINT_HINTS": "1"}
        env.pop("OMPI_MCA_io", None)
        if component:
            env["OMPI_MCA_io"] = component
        return subprocess.run(["mpirun.openmpi", "--oversubscribe", "-n", "2", str(probe), str(tmp_path / "f.bin")],
                              env=env, capture_output=True, text=True, timeout=120)

    ok = run(chosen)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert all(_romio_printed(ok.stdout).get(k) == v for k, v in HINTS.items()), ok.stdout
    default = run(None)
    assert default.returncode == 0 and _romio_printed(default.stdout) == {}, default.stdout
    assert not any(k in _get_info(default.stdout) for k in HINTS)     # OMPIO applied none of them
    others = {dict(r.env).get("OMPI_MCA_io") for r in RULES if r.flavour == "openmpi"} - {chosen, None}
    assert others == {"romio", "romio314", "romio341"}
    for comp in sorted(others):
        p = run(comp)
        assert p.returncode != 0 and not _romio_printed(p.stdout), (comp, p.stdout)
