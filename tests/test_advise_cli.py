"""`ioadvise advise` through the real console script: JSON contract, pins, and one-line errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ioadvisor.lustre import Setstripe
from ioadvisor.mpiio import mpich_mpiio_hints, ompio_exports, romio_hints_file

EXE = Path(sys.executable).parent / "ioadvise"
FIELDS = {"tier", "filesystem", "layout", "api", "collective", "stripe_count", "stripe_size_bytes", "hints",
          "predicted", "evidence", "commands", "reasons"}


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(EXE), *args], capture_output=True, text=True, timeout=60)


def test_demo_command_json_contract():
    p = run("advise", "--system", "TSUBAME3.0", "--nodes", "16", "--ranks-per-node", "28", "--bytes-per-rank",
            "1GiB", "--api", "mpiio", "--layout", "shared", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    rec = d["recommendation"]
    assert FIELDS <= set(rec) and FIELDS <= set(d["baseline"])
    assert all(FIELDS <= set(a) for a in d["alternatives"]) and d["alternatives"]
    assert set(rec["predicted"]) >= {"value", "unit", "low", "high"}
    assert rec["hints"]["romio_cb_write"] == "disable"
    assert rec["predicted"]["value"] is None
    assert any(e["citation"] for e in rec["evidence"])


def test_human_output_of_the_demo():
    p = run("advise", "--system", "TSUBAME3.0", "--nodes", "16", "--ranks-per-node", "28", "--bytes-per-rank",
            "1GiB", "--api", "mpiio", "--layout", "shared")
    assert p.returncode == 0, p.stderr
    assert "recommended" in p.stdout and "romio_cb_write disable" in p.stdout and "lfs setstripe" in p.stdout


def test_ha8000_json_prediction_and_pins(tmp_path):
    p = run("advise", "--system", "ha8000", "--nodes", "1", "--ranks-per-node", "1", "--bytes-per-rank", "256MiB",
            "--layout", "shared", "--json")
    d = json.loads(p.stdout)
    rec = d["recommendation"]
    assert rec["stripe_count"] in (3, 4) and rec["stripe_size_bytes"] == 1 << 20
    assert rec["predicted"]["low"] < rec["predicted"]["value"] < rec["predicted"]["high"]
    assert d["baseline"]["stripe_count"] == 1 and d["gain"] > 3
    assert rec["commands"]["lfs"].startswith("lfs setstripe -c ")
    p = run("advise", "--system", "HA8000", "--nodes", "1", "--ranks-per-node", "1", "--bytes-per-rank", "256MiB",
            "--layout", "shared", "--stripe-count", "8", "--json")
    assert json.loads(p.stdout)["recommendation"]["stripe_count"] == 8


def test_workload_file_and_script(tmp_path):
    wf = tmp_path / "w.toml"
    wf.write_text('system = "TSUBAME3.0"\nnodes = 4\nranks_per_node = 4\nbytes_per_rank = "1GiB"\napi = "mpiio"\n'
                  'layout = "shared"\n')
    p = run("advise", "--workload", str(wf), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["workload"]["nodes"] == 4
    js = tmp_path / "job.sh"
    js.write_text("#!/bin/bash\n#SBATCH -N 2\n#IOADVISE system=HA8000 nodes=2 ranks_per_node=4\n"
                  "#IOADVISE bytes_per_rank=64MiB layout=fpp\nsrun ./app\n")
    p = run("advise", "--script", str(js), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["recommendation"]["layout"] == "fpp"
    js.write_text("#IOADVISE nodez=2\n")
    p = run("advise", "--script", str(js))
    assert p.returncode == 2 and f"{js}:1" in p.stderr


@pytest.mark.parametrize("args,needle", [
    (["--system", "Atlantis"], "unknown system"),
    (["--system", "HA8000", "--ranks-per-node", "0"], "ranks_per_node=0: must be at least 1"),
    (["--system", "HA8000", "--bytes-per-rank", "12 parsecs"], "not a size"),
    (["--system", "HA8000", "--api", "netcdf"], "unknown API"),
    (["--system", "HA8000", "--hints", "romio_cb_write"], "bad hint"),
    (["--system", "HA8000", "--stripe-count", "99"], "exceeds the 30 OSTs"),
    (["--system", "HA8000", "--tier", "nvme"], "no tier or file system"),
    # a typo, not a job: more nodes or processes per node than any machine has (was advised, exit 0)
    (["--system", "HA8000", "--nodes", "99999999999999999999"], "nodes must be 1 to 1,000,000"),
    (["--system", "HA8000", "--ranks-per-node", "100001"], "ranks per node must be 1 to 100,000"),
])
def test_errors_are_one_line_exit_2(args, needle):
    base = {"--nodes": "2", "--ranks-per-node": "4", "--bytes-per-rank": "1GiB"}
    for i in range(0, len(args), 2):
        base[args[i]] = args[i + 1]
    flat = [x for kv in base.items() for x in kv]
    p = run("advise", *flat)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert needle in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_hint_renderers():
    h = {"romio_cb_write": "disable", "cb_buffer_size": "16777216", "striping_factor": "8"}
    assert romio_hints_file(h) == "romio_cb_write disable\ncb_buffer_size 16777216\nstriping_factor 8\n"
    assert mpich_mpiio_hints(h) == ("export MPICH_MPIIO_HINTS='*:romio_cb_write=disable:cb_buffer_size=16777216"
                                    ":striping_factor=8'")
    lines, rest = ompio_exports(h)
    assert "export OMPI_MCA_io_ompio_bytes_per_agg=16777216" in lines
    assert "export OMPI_MCA_fs_lustre_stripe_width=8" in lines and rest == {"romio_cb_write": "disable"}
    assert Setstripe("$SCRATCH/out", 8, 4 << 20).render() == 'lfs setstripe -c 8 -S 4M "$SCRATCH/out"'
    with pytest.raises(ValueError):
        romio_hints_file({"bad key": "1"})


def test_cray_commands_in_human_output():
    p = run("advise", "--system", "TSUBAME3.0", "--nodes", "4", "--ranks-per-node", "4", "--bytes-per-rank", "1GiB",
            "--api", "mpiio", "--layout", "shared", "--mpi", "cray")
    assert p.returncode == 0, p.stderr
    assert "MPICH_MPIIO_HINTS='*:romio_cb_write=disable" in p.stdout.replace("\n", "")
    p = run("advise", "--system", "TSUBAME3.0", "--nodes", "4", "--ranks-per-node", "4", "--bytes-per-rank", "1GiB",
            "--mpi", "lam")
    assert p.returncode == 2 and "unknown MPI flavour" in p.stderr
