"""The communicator the kernels run on: MPI's COMM_WORLD when mpi4py is there (with or without a launcher),
else a one-process stand-in with the same few methods, so POSIX runs need no MPI at all."""
from __future__ import annotations

import os
import platform
import socket
import time
from typing import Any


class SelfComm:
    """A single process: the collective calls the kernels use, done locally."""

    rank = 0
    size = 1

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def Barrier(self) -> None:
        pass

    def allgather(self, obj: Any) -> list[Any]:
        return [obj]

    def gather(self, obj: Any, root: int = 0) -> list[Any]:
        return [obj]

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj

    def allreduce(self, obj: Any, op: Any = None) -> Any:
        return obj


def world(require_mpi: bool = False) -> Any:
    """COMM_WORLD from mpi4py; SelfComm when mpi4py is missing and MPI is not required."""
    try:
        from mpi4py import MPI
    except ImportError:
        if require_mpi:
            from . import BenchError
            raise BenchError("mpi4py is not installed: MPI-IO needs `pip install ioadvisor[mpi]`") from None
        return SelfComm()
    return MPI.COMM_WORLD


def mpi_library() -> str | None:
    """The MPI library's version line (e.g. `MPICH Version: 4.1.2`), or None without mpi4py."""
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    text = MPI.Get_library_version().strip().splitlines()
    return " ".join(text[0].split()) if text else None


def hostname() -> str:
    return socket.gethostname() or platform.node()


def launcher_rank() -> int:
    """This process's rank as the launcher tells it, read before MPI starts (0 without a launcher)."""
    for var in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "MPI_LOCALRANKID"):
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    return 0


def synced_span(comm: Any, start: float, end: float, origin: float) -> float:
    """Seconds from the earliest start to the latest end over all ranks.

    Times are taken relative to each rank's own exit from the preceding barrier (`origin`), so clocks that
    disagree between nodes do not enter the result.
    """
    spans = comm.allgather((start - origin, end - origin))
    return max(e for _, e in spans) - min(s for s, _ in spans)


now = time.perf_counter
