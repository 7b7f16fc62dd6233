"""`ioadvise wrap` / `ioadvise submit --dry-run` through the CLI (no Slurm needed)."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.slurm.rewrite import BEGIN
from ioadvisor.slurm.submit import scrubbed_env

runner = CliRunner()
SCRIPT = "#!/bin/bash\n#SBATCH -N 4 --ntasks-per-node=8\n#IOADVISE bytes_per_rank=1GiB api=MPIIO layout=shared\nsrun ./app\n"


def _script(tmp_path, text=SCRIPT):
    p = tmp_path / "job.sh"
    p.write_text(text)
    return p


def test_wrap_writes_new_file_and_leaves_script_alone(tmp_path):
    src = _script(tmp_path)
    out = tmp_path / "job.wrapped.sh"
    r = runner.invoke(app, ["wrap", str(src), "-o", str(out), "--hints", "romio_cb_write=enable",
                            "--stripe-count", "4", "--stripe-size", "4MiB", "--mpi", "cray", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["source"] == "explicit" and rep["settings"]["stripe_size"] == 4 << 20
    assert src.read_text() == SCRIPT
    text = out.read_text()
    assert BEGIN in text and "export MPICH_MPIIO_HINTS='*:romio_cb_write=enable'" in text
    assert 'lfs setstripe -c 4 -S 4M "$IOADVISE_DIR"' in text
    assert out.stat().st_mode & 0o111


def test_wrap_refuses_to_overwrite_the_script(tmp_path):
    src = _script(tmp_path)
    r = runner.invoke(app, ["wrap", str(src), "-o", str(src), "--hints", "a=b"])
    assert r.exit_code == 2 and src.read_text() == SCRIPT


def test_wrap_bad_input_is_one_line_exit_2(tmp_path):
    src = _script(tmp_path)
    for args in (["--hints", "novalue"], ["--mpi", "lam"], ["--stripe-size", "huge"], ["--tier", "beeond"],
                 ["--hints", "k=$(id)"]):
        r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), *args])
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output
    r = runner.invoke(app, ["wrap", str(tmp_path / "missing.sh"), "-o", str(tmp_path / "o.sh")])
    assert r.exit_code == 2 and "missing.sh" in r.output


def test_wrap_with_advice_from_a_center(tmp_path):
    src = _script(tmp_path)
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), "--center", "HA8000", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["source"] == "advice"
    assert rep["settings"]["stripe_count"] and rep["settings"]["stripe_count"] > 1   # HA8000 is Lustre


def test_submit_fails_open_when_advice_fails(tmp_path):
    src = _script(tmp_path, "#!/bin/bash\necho no-ioadvise-lines\n")
    r = runner.invoke(app, ["submit", str(src), "--center", "HA8000", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["changed"] is False and rep["source"] == "none"
    assert any("unchanged" in w for w in rep["warnings"])
    r = runner.invoke(app, ["submit", str(src), "--center", "HA8000", "--dry-run", "--strict"])
    assert r.exit_code == 2 and "bytes_per_rank" in r.output


def test_submit_passes_unknown_options_to_sbatch(tmp_path):
    src = _script(tmp_path)
    r = runner.invoke(app, ["submit", str(src), "-N", "2", "--time=5", "-C", "nvme", "--hints", "a=b",
                            "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["sbatch_options"] == ["-N", "2", "--time=5", "-C", "nvme"]


def test_sbatch_environment_is_scrubbed():
    env = scrubbed_env({"SBATCH_CONSTRAINT": "x", "SBATCH_ACCOUNT": "a", "PATH": "/bin"})
    assert env == {"SBATCH_ACCOUNT": "a", "PATH": "/bin"}


def test_cli_constraint_keeps_the_tier_feature():
    from ioadvisor.slurm.submit import merge_cli_constraint
    req = "--constraint=BEEOND"
    assert merge_cli_constraint(["-N", "2", "-C", "nvme"], req) == (["-N", "2", "-C", "nvme&BEEOND"], True)
    assert merge_cli_constraint(["--constraint=a|b"], req) == (["--constraint=a|b&BEEOND"], True)
    assert merge_cli_constraint(["-Cnvme"], req) == (["-Cnvme&BEEOND"], True)
    assert merge_cli_constraint(["-C", "BEEOND"], req) == (["-C", "BEEOND"], False)
    assert merge_cli_constraint(["-N", "2"], req) == (["-N", "2"], False)
    assert merge_cli_constraint(["-C", "x"], "--bb=foo") == (["-C", "x"], False)


def test_submit_merges_tier_into_cli_constraint(tmp_path):
    src = _script(tmp_path, "#!/bin/bash\ntrue\n")
    center = tmp_path / "c.toml"
    center.write_text('name = "c"\n[[filesystems]]\nname = "b"\ntype = "beegfs"\nstriping = "none"\n'
                      '[[tiers]]\nname = "beeond"\nfilesystem = "b"\nrequest = "--constraint=BEEOND"\n'
                      'mount = "/mnt/odfs/$SLURM_JOB_ID"\n')
    r = runner.invoke(app, ["submit", str(src), "--center", str(center), "--tier", "beeond", "-C", "nvme",
                            "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["sbatch_options"] == ["-C", "nvme&BEEOND"]
