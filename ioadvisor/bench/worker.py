"""Entry point for one config of a sweep plan.

`python -m ioadvisor.bench.worker run PLAN INDEX` runs the kernel on every rank (start it under a launcher);
`python -m ioadvisor.bench.worker launch PLAN INDEX` starts the launcher for that config (used by job arrays).
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from ..errors import IOAdvisorError
from ..util import printable


def _run(plan_path: str, index: int) -> int:
    from . import result
    from .kernel import run_data
    from .mdkernel import run_md
    from .params import data_params, md_params
    from .sweep import load_plan
    plan = load_plan(plan_path)
    cfg = plan.configs[index]
    comm = _world(plan, index)
    if plan.kind == "data":
        res = run_data(data_params(cfg.settings), comm)
    else:
        res = run_md(md_params(cfg.settings), comm)
    if res is not None:
        res["sweep"] = {"name": plan.name, "index": index, "label": cfg.label, "plan": plan_path}
        result.write(result.document(res, system=cfg.settings.get("system")), path=plan.result_path(index))
    return 0


def _world(plan: Any, index: int) -> Any:
    """The communicator, refused before any file is touched unless it holds the ranks the config asked for:
    ranks that do not form one MPI job each see a world of one, all act as rank 0 and write the same files."""
    from . import BenchError
    from .comm import world
    cfg = plan.configs[index]
    comm = world(require_mpi=cfg.ranks > 1)
    size = comm.Get_size()
    if size != cfg.ranks:
        started = os.environ.get("SLURM_STEP_NUM_TASKS")
        why = (f": srun started {started} tasks that do not form one MPI job (srun without an MPI plugin: set "
               f"launcher = \"srun --mpi=pmi2\" in the sweep file, or use mpiexec)"
               if size == 1 and started and started != "1" else "")
        raise BenchError(f"config {index} asked for {cfg.ranks} ranks but its MPI job has {size}{why}")
    return comm


def _launch(plan_path: str, index: int) -> int:
    from .sweep import launcher_command, load_plan
    plan = load_plan(plan_path)
    return subprocess.run(launcher_command(plan, plan.configs[index], plan_path)).returncode


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] not in ("run", "launch") or not argv[2].isdigit():
        print("usage: python -m ioadvisor.bench.worker run|launch PLAN INDEX", file=sys.stderr)
        return 2
    try:
        return (_run if argv[0] == "run" else _launch)(argv[1], int(argv[2]))
    except IOAdvisorError as e:
        print(f"Error: {printable(str(e))}", file=sys.stderr)
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is not None and mpi.Is_initialized() and mpi.COMM_WORLD.Get_size() > 1:
            sys.stderr.flush()
            mpi.COMM_WORLD.Abort(e.exit_code)
        return e.exit_code
    except IndexError:
        print(f"Error: {printable(argv[1])}: no config {printable(argv[2])}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
