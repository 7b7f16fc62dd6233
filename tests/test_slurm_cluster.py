"""The test cluster itself: daemons up, BeeOND stand-in dirs, both lua hooks loaded."""
from __future__ import annotations

from tests.slurm_cluster import slurm_cluster  # noqa: F401


def test_trivial_job_and_beeond_dir_lifecycle(slurm_cluster, tmp_path):
    out = tmp_path / "out.txt"
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\n#SBATCH --constraint=BEEOND\n"
                      f"#SBATCH --output={out}\n"
                      f'test -d "{slurm_cluster.odfs}/$SLURM_JOB_ID" && echo scratch-ok\n'
                      'echo "tier=${IOADVISE_TIER:-}"\nexit 3\n')
    jid = slurm_cluster.sbatch(script)
    info = slurm_cluster.wait(jid)
    assert info["ExitCode"] == "3:0"
    text = out.read_text()
    assert "scratch-ok" in text                       # the Prolog made the per-job dir
    assert "tier=beeond" in text                      # cli_filter.lua marked the BEEOND request
    assert not (slurm_cluster.odfs / jid).exists()    # the Epilog removed it


def test_job_without_beeond_gets_no_scratch_dir(slurm_cluster, tmp_path):
    out = tmp_path / "out.txt"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\n#SBATCH -o {out}\n"
                      f'test -d "{slurm_cluster.odfs}/$SLURM_JOB_ID" && echo has-dir || echo no-dir\n')
    jid = slurm_cluster.sbatch(script)
    assert slurm_cluster.wait(jid)["ExitCode"] == "0:0"
    assert out.read_text().strip() == "no-dir"


def test_lua_plugins_are_loaded(slurm_cluster):
    conf = (slurm_cluster.dir / "etc" / "slurm.conf").read_text()
    assert "JobSubmitPlugins=lua" in conf and "CliFilterPlugins=lua" in conf
    assert (slurm_cluster.dir / "etc" / "job_submit.lua").exists()
    p = slurm_cluster.run(["scontrol", "show", "config"])
    assert "job_submit/lua" in p.stdout or "lua" in p.stdout.split("JobSubmitPlugins")[1].splitlines()[0]
