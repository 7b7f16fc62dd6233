"""The parser agrees with the real sbatch: submit held jobs and compare what slurmctld recorded."""
from __future__ import annotations

from ioadvisor.slurm.jobscript import parse_jobscript, parse_sbatch_args
from tests.slurm_cluster import slurm_cluster  # noqa: F401

SCRIPT = """#!/bin/bash
# leading comment

#SBATCH --job-name=abc # trailing comment
#SBATCH -C "BEEOND&nvme" --comment="x y"
#SBATCH -n2 -N 1
true
#SBATCH --comment=too-late
"""


def test_parser_matches_sbatch(slurm_cluster, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT)
    js = parse_jobscript(SCRIPT)
    for cli in ((), ("--job-name=fromcli",)):
        jid = slurm_cluster.sbatch(script, "--hold", *cli)
        try:
            info = slurm_cluster.job(jid)
        finally:
            slurm_cluster.run(["scancel", jid])
        parsed = parse_sbatch_args(list(cli))
        assert info["JobName"] == js.option("job-name", parsed)
        assert info["Features"] == js.option("constraint", parsed)
        assert info["NumTasks"] == js.option("ntasks", parsed)
        assert info["NumNodes"].split("-")[0] == js.option("nodes", parsed)   # pending jobs show "1-1"
    comment = slurm_cluster.run(["scontrol", "show", "job", jid]).stdout.split("Comment=")[1].split("  ")[0].strip()
    assert comment == js.option("comment") == "x y"
