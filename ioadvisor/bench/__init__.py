"""The measurement harness behind `ioadvise bench`: an IOR-like data kernel, an mdtest-like metadata kernel,
their statistics, the result JSON, and the sweep planner. mpi4py and h5py are imported only when a kernel
needs them, so the rest of ioadvisor works without them."""
from __future__ import annotations

from ..errors import IOAdvisorError


class BenchError(IOAdvisorError):
    """A benchmark could not run as asked (I/O failure, missing parallel HDF5, unwritable directory)."""

    exit_code = 1


FORMAT_MARKER = "ioadvisor_bench"
FORMAT_VERSION = 1
