"""The center hooks in the real slurmctld/sbatch: job_submit.lua injects MPI-IO hints for jobs with
#IOADVISE lines, and hostile #IOADVISE lines neither run anything nor block a submission (also through
`ioadvise submit`)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.slurm_cluster import slurm_cluster  # noqa: F401

pytestmark = pytest.mark.slurm

IOADVISE = str(Path(sys.executable).parent / "ioadvise")


def _hostile_script(d: Path, out: Path) -> tuple[str, list[Path]]:
    markers = [d / f"pwned{i}" for i in range(5)]
    text = "\n".join([
        "#!/bin/bash",
        f"#SBATCH -o {out}",
        "#IOADVISE api=MPIIO layout=shared hint=cb_buffer_size:8388608",
        f"#IOADVISE outdir=$(touch {markers[0]})",
        f"#IOADVISE api=`touch {markers[1]}`",
        f"#IOADVISE layout=shared;touch {markers[2]}",
        f"#IOADVISE hint=cb_nodes:$(touch {markers[3]}) files=1;touch {markers[4]}",
        "#IOADVISE api=" + "A" * (1 << 20),
        'echo "HINTS=${IOADVISE_HINTS:-none}"',
        'if [ -n "${ROMIO_HINTS:-}" ]; then cat "$ROMIO_HINTS"; fi',
        "",
    ])
    return text, markers


def test_job_submit_injects_hints_and_ignores_hostile_lines(slurm_cluster, tmp_path):
    out = tmp_path / "out.txt"
    text, markers = _hostile_script(tmp_path, out)
    script = tmp_path / "job.sh"
    script.write_text(text)
    jid = slurm_cluster.sbatch(script)
    info = slurm_cluster.wait(jid)
    assert info["ExitCode"] == "0:0"
    lines = out.read_text().splitlines()
    # the valid line's hint plus the center policy for shared-file MPI-IO; nothing from the hostile lines
    assert lines[0] == "HINTS=cb_buffer_size=8388608,romio_cb_write=enable,romio_ds_write=disable"
    assert lines[1:] == ["cb_buffer_size 8388608", "romio_cb_write enable", "romio_ds_write disable"]
    assert not any(m.exists() for m in markers)
    assert "ioadvise: injected 3 MPI-IO hints" in (slurm_cluster.dir / "log" / "slurmctld.log").read_text()


def test_job_without_ioadvise_lines_is_untouched(slurm_cluster, tmp_path):
    out = tmp_path / "out.txt"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH -o {out}\necho \"HINTS=${{IOADVISE_HINTS:-none}}\"\n")
    jid = slurm_cluster.sbatch(script)
    assert slurm_cluster.wait(jid)["ExitCode"] == "0:0"
    assert out.read_text().strip() == "HINTS=none"


def test_hostile_lines_through_ioadvise_submit(slurm_cluster, tmp_path):
    out = tmp_path / "out.txt"
    text, markers = _hostile_script(tmp_path, out)
    script = tmp_path / "job.sh"
    script.write_text(text)
    p = subprocess.run([IOADVISE, "submit", str(script), "--hints", "romio_cb_write=enable"], cwd=tmp_path,
                       env=slurm_cluster.env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip().splitlines()[-1].split()[-1]
    assert slurm_cluster.wait(jid)["ExitCode"] == "0:0"
    lines = out.read_text().splitlines()
    # the wrapped script carries its own hints; job_submit.lua leaves wrapped scripts alone
    assert [x for x in lines if not x.startswith("ioadvise: ")] == ["HINTS=romio_cb_write=enable",
                                                                     "romio_cb_write enable"]
    # and says what it applied: one line each for striping, hints and staging
    said = [x.split(":")[1].strip() for x in lines if x.startswith("ioadvise: ")]
    assert said == ["striping", "hints", "staging"], lines
    assert not any(m.exists() for m in markers)


def test_submit_scrubs_sbatch_environment(slurm_cluster, tmp_path):
    """SBATCH_CONSTRAINT would override the script; plain sbatch is rejected with it, ioadvise submit is not."""
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH -o {tmp_path / 'out.txt'}\ntrue\n")
    env = {**slurm_cluster.env, "SBATCH_CONSTRAINT": "nosuchfeature"}
    plain = slurm_cluster.run(["sbatch", "--parsable", "--hold", str(script)], env=env)
    assert plain.returncode != 0
    p = subprocess.run([IOADVISE, "submit", str(script), "--hints", "a=b", "--hold", "--json"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    import json
    jid = json.loads(p.stdout)["job_id"]
    assert slurm_cluster.job(jid)["JobState"] == "PENDING"
    slurm_cluster.run(["scancel", jid])


def test_80k_comment_line_is_read_to_the_bound(slurm_cluster, tmp_path):
    """An 80 KB comment line took the old trim 31.6 s inside slurmctld (quadratic); the hook now reads at most
    64 KiB and never backtracks (benchmarks/bench_hook.py times it on 4 MiB scripts). The #SBATCH block ends
    past the 64 KiB bound, so the hints go in before the long line, and a second user's job goes through."""
    out = tmp_path / "out.txt"
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#IOADVISE api=MPIIO layout=shared\n#" + " " * 80_000 + "x\n"
                      f"#SBATCH -o {out}\n" 'echo "HINTS=${IOADVISE_HINTS:-none}"\n')
    plain = tmp_path / "plain.sh"
    plain.write_text(f"#!/bin/bash\n#SBATCH -o {tmp_path / 'plain.txt'}\ntrue\n")
    jid = slurm_cluster.sbatch(script)
    other = slurm_cluster.sbatch(plain)
    assert slurm_cluster.wait(jid)["ExitCode"] == "0:0"
    assert slurm_cluster.wait(other)["ExitCode"] == "0:0"
    assert out.read_text().strip() == "HINTS=romio_cb_write=enable,romio_ds_write=disable"


MPI_HINTS = """
import json, sys
from mpi4py import MPI
fh = MPI.File.Open(MPI.COMM_WORLD, "mpiio.dat", MPI.MODE_CREATE | MPI.MODE_WRONLY)
info = fh.Get_info()
hints = {info.Get_nthkey(i): info.Get(info.Get_nthkey(i)) for i in range(info.Get_nkeys())}
fh.Close()
if MPI.COMM_WORLD.Get_rank() == 0:
    json.dump(hints, open("mpi_hints.json", "w"))
"""


def test_hook_hints_reach_mpi_and_leave_no_file(slurm_cluster, tmp_path):
    """The hook's hints file reaches ROMIO in every rank (MPI_File_get_info shows the hint), and nothing of it
    is left in the job's $TMPDIR, neither while the job runs nor after: one /tmp/ioadvise-romio-hints.* file
    was left per job before."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    (tmp_path / "prog.py").write_text(MPI_HINTS)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH -n 2\n#SBATCH -o out.txt\n"
                      "#IOADVISE api=MPIIO layout=shared hint=cb_buffer_size:8388608\n"
                      'ls -A "$TMPDIR" > during.txt\n'
                      f"mpiexec -n 2 {sys.executable} prog.py\n")
    env = {**slurm_cluster.env, "TMPDIR": str(tmpdir),
           "PATH": f"{Path(sys.executable).parent}:{slurm_cluster.env.get('PATH', '/usr/bin:/bin')}"}
    p = slurm_cluster.run(["sbatch", "--parsable", "-D", str(tmp_path), str(script)], env=env)
    assert p.returncode == 0, p.stderr
    jid = p.stdout.strip()
    assert slurm_cluster.wait(jid)["ExitCode"] == "0:0", (tmp_path / "out.txt").read_text()
    hints = json.loads((tmp_path / "mpi_hints.json").read_text())
    assert (hints.get("cb_buffer_size"), hints.get("romio_cb_write")) == ("8388608", "enable"), hints
    assert (tmp_path / "during.txt").read_text() == ""
    assert list(tmpdir.iterdir()) == []
