"""The data kernel: IOR-style write and read phases through POSIX, MPI-IO or HDF5.

Offsets follow IOR: with a shared file, transfer i of rank r in segment s is at
`s*ranks*block + r*block + i*xfer`; with a file per process the rank term drops out. Reads are shifted by
one rank (rank r reads what rank r+1 wrote) so that a rank does not read back its own cached pages.
Bandwidth is total bytes over the span from the earliest open to the latest close (fsync included).
"""
from __future__ import annotations

import datetime as _dt
import mmap
import os
import random as _random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from . import BenchError
from .comm import hostname, mpi_library, now, synced_span, world
from .params import DataParams, check_data
from ..model.units import format_size
from .stats import summarize
from .striping import stripe_directory
from .sysinfo import drop_caches, fs_type, mem_total, mount_point

MiB = 1 << 20


def offsets(p: DataParams, rank: int, ranks: int) -> list[int]:
    """Byte offsets of one rank's transfers, in the order they are issued."""
    per_block = p.block_size // p.transfer_size
    out = []
    for seg in range(p.segments):
        base = seg * p.block_size if p.layout == "fpp" else seg * ranks * p.block_size + rank * p.block_size
        out.extend(base + i * p.transfer_size for i in range(per_block))
    return out


def file_path(p: DataParams, rank: int) -> str:
    name = "ioadvise-bench.dat" if p.api != "hdf5" else "ioadvise-bench.h5"
    return os.path.join(p.dir, f"{name}.{rank:05d}" if p.layout == "fpp" else name)


def pattern_byte(rank: int) -> int:
    """The byte value rank `rank` writes; reads check it to prove the shifted read saw the neighbour's data."""
    return (rank * 37 + 11) % 251 + 1


class _Buffer:
    """A transfer buffer; page-aligned (anonymous mmap) when O_DIRECT is used."""

    def __init__(self, size: int, aligned: bool):
        import numpy as np
        self._mm = mmap.mmap(-1, size) if aligned else None
        self.array = np.frombuffer(self._mm, dtype=np.uint8) if aligned else np.empty(size, dtype=np.uint8)

    def fill(self, value: int) -> None:
        self.array.fill(value)

    def close(self) -> None:
        arr = self.array
        self.array = None
        del arr
        if self._mm is not None:
            self._mm.close()


# ---- one phase per API ------------------------------------------------------------------------------------
def _posix(p: DataParams, op: str, path: str, offs: list[int], buf: _Buffer, expect: int) -> tuple[float, float, int]:
    flags = (os.O_WRONLY | os.O_CREAT) if op == "write" else os.O_RDONLY
    if p.direct:
        flags |= getattr(os, "O_DIRECT", 0)
    arr = buf.array
    bad = 0
    t0 = now()
    fd = os.open(path, flags, 0o644)
    try:
        if op == "write":
            for off in offs:
                os.pwrite(fd, arr, off)
            if p.fsync:
                os.fsync(fd)
        else:
            views = [arr]
            for off in offs:
                if os.preadv(fd, views, off) != len(arr) or arr[0] != expect:
                    bad += 1
    finally:
        os.close(fd)
    return t0, now(), bad


def _mpi_info(p: DataParams) -> Any:
    from mpi4py import MPI
    info = MPI.Info.Create()
    for k, v in p.hints.items():
        info.Set(k, v)
    return info


def _mpiio(p: DataParams, op: str, path: str, offs: list[int], buf: _Buffer, expect: int,
           comm: Any, readback: dict[str, str]) -> tuple[float, float, int]:
    from mpi4py import MPI
    fcomm = comm if p.layout == "shared" else MPI.COMM_SELF
    amode = (MPI.MODE_CREATE | MPI.MODE_WRONLY) if op == "write" else MPI.MODE_RDONLY
    info = _mpi_info(p)
    arr = buf.array
    bad = 0
    t0 = now()
    fh = MPI.File.Open(fcomm, path, amode, info)
    try:
        if not readback:
            got = fh.Get_info()
            readback.update({got.Get_nthkey(i): got.Get(got.Get_nthkey(i)) for i in range(got.Get_nkeys())})
            got.Free()
        if op == "write":
            io = fh.Write_at_all if p.collective else fh.Write_at
            for off in offs:
                io(off, arr)
            if p.fsync:
                fh.Sync()
        else:
            io = fh.Read_at_all if p.collective else fh.Read_at
            for off in offs:
                io(off, arr)
                if arr[0] != expect:
                    bad += 1
    finally:
        fh.Close()
        info.Free()
    return t0, now(), bad


def _h5_file_options(p: DataParams, op: str, length: int, comm: Any, info: Any) -> dict[str, Any]:
    """h5py.File's keywords: the mpio driver for a shared file (`info` its hints), the alignment for a write."""
    kw: dict[str, Any] = {}
    if info is not None:
        kw = {"driver": "mpio", "comm": comm, "info": info}
    if p.hdf5_alignment and op == "write":
        # like IOR: objects at least this big (the dataset) start at a multiple of it
        kw.update(alignment_threshold=min(p.hdf5_alignment, length), alignment_interval=p.hdf5_alignment)
    return kw


def _note_io_mode(dset: Any, op: str, h5: dict[str, Any]) -> None:
    """Record in `h5` the I/O mode HDF5 reports for the phase's last transfer, and why it was not collective."""
    dxpl = getattr(dset, "_dxpl", None)   # the list h5py's transfers and `collective` use
    if dxpl is None:
        return
    from .h5mpi import actual_io_mode
    got = actual_io_mode(dxpl.id)
    if got:
        h5.setdefault("io_mode", {})[op] = got[0]
        if got[1]:
            h5.setdefault("no_collective_cause", {})[op] = got[1]


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _hdf5(p: DataParams, op: str, path: str, offs: list[int], buf: _Buffer, expect: int,
          comm: Any, ranks: int, readback: dict[str, str], h5: dict[str, Any]) -> tuple[float, float, int]:
    """One phase on an HDF5 file: one contiguous 1-D byte dataset, `data`, each transfer a hyperslab at the
    IOR offset. Shared: h5py's `mpio` driver on `comm`, collective or independent transfers. Timed from the
    open (dataset creation included) to the close, like IOR."""
    try:
        import h5py
    except ImportError:
        raise BenchError("h5py is not installed: HDF5 runs need `pip install ioadvisor[hdf5]`") from None
    shared = p.layout == "shared"
    length = p.segments * p.block_size * (ranks if shared else 1)
    info = _mpi_info(p) if shared else None
    kw = _h5_file_options(p, op, length, comm, info)
    arr = buf.array
    bad = 0
    t0 = now()
    f = h5py.File(path, "w" if op == "write" else "r", **kw)
    try:
        if shared and not readback:
            from .h5mpi import file_hints
            readback.update(file_hints(f) or {})
        if op == "write":
            # no fill values: the writes cover every byte, as with IOR's HDF5 noFill
            dset = f.create_dataset("data", shape=(length,), dtype="u1", fill_time="never")
        else:
            dset = f["data"]
        import contextlib
        ctx = dset.collective if p.collective else contextlib.nullcontext()
        with ctx:
            for off in offs:
                if op == "write":
                    dset.write_direct(arr, dest_sel=slice(off, off + len(arr)))
                else:
                    dset.read_direct(arr, source_sel=slice(off, off + len(arr)))
                    if arr[0] != expect:
                        bad += 1
            if shared and offs:
                _note_io_mode(dset, op, h5)
        if "data_offset" not in h5:   # after the writes: serial HDF5 allocates the storage on the first one
            h5["data_offset"] = dset.id.get_offset()
        if op == "write" and p.fsync and shared:
            f.flush()   # the mpio driver's flush is MPI_File_sync (collective); at close it does not sync
    finally:
        f.close()
        if info is not None:
            info.Free()
    if op == "write" and p.fsync and not shared:
        _fsync_file(path)
    return t0, now(), bad


# ---- the benchmark ----------------------------------------------------------------------------------------
def _check_runtime(p: DataParams) -> None:
    if p.api == "hdf5" and p.layout == "shared":
        try:
            import h5py
        except ImportError:
            raise BenchError("h5py is not installed: HDF5 runs need `pip install ioadvisor[hdf5]`") from None
        if not h5py.get_config().mpi:
            raise BenchError("this h5py is built without MPI: a shared HDF5 file needs parallel h5py "
                             "(driver='mpio'); use --layout fpp, or build h5py with HDF5_MPI=ON")


def effective_env(comm: Any, directory: str) -> dict[str, Any]:
    """Where the run really happened: hosts, ranks per node, file system type, MPI library, Slurm job."""
    hosts = comm.allgather(hostname())
    per_node = Counter(hosts)
    ftype, magic = fs_type(directory)
    return {
        "hostnames": sorted(per_node),
        "nodes": len(per_node),
        "ranks": comm.Get_size(),
        "ranks_per_node": max(per_node.values()),
        "fs_type": ftype,
        "fs_magic": magic,
        "mount_point": mount_point(directory),
        "mpi_library": mpi_library(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_array_job_id": os.environ.get("SLURM_ARRAY_JOB_ID"),
        "slurm_array_task_id": os.environ.get("SLURM_ARRAY_TASK_ID"),
        "mem_total": mem_total(),
        "python": sys.version.split()[0],
    }


def cache_warning(total_bytes: int, nodes: int, memtotal: int | None, bypassed: bool) -> str | None:
    """A warning when reads may come from the page cache rather than the storage (`bypassed`: O_DIRECT was
    used or the caches were dropped before reading)."""
    if bypassed or not memtotal:
        return None
    per_node = total_bytes / max(nodes, 1)
    if per_node <= memtotal:
        return (f"the data set ({format_size(per_node)} per node) fits in the page cache "
                f"(MemTotal {format_size(memtotal)}): reads may measure memory, not storage; use --direct, "
                f"a data set larger than memory, or --drop-caches (root)")
    return None


def _prepare_directory(p: DataParams, rank: int) -> tuple[dict[str, Any], str | None]:
    """Rank 0 makes the directory and sets its striping (before any file exists: the directory's default layout
    is what every file made in it gets); the striping applied and a warning, if any."""
    if rank != 0:
        return {}, None
    try:
        Path(p.dir).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BenchError(f"{p.dir}: cannot create directory: {e.strerror}") from None
    return stripe_directory(p.dir, fs_type(p.dir)[0], p.stripe_count, p.stripe_size)


class _Phases:
    """The timed phases of all repetitions on one rank: each phase's span (the same on every rank) and the
    verify errors summed over the ranks, per operation asked for."""

    def __init__(self, p: DataParams, comm: Any, shift: int) -> None:
        self.p, self.comm = p, comm
        self.rank, self.ranks = comm.Get_rank(), comm.Get_size()
        self.src = (self.rank + shift) % self.ranks
        self.readback: dict[str, str] = {}
        self.h5: dict[str, Any] = {}
        self.times: dict[str, list[float]] = {op: [] for op in p.ops}
        self.errors: dict[str, int] = {op: 0 for op in p.ops}
        self.dropped = False

    def run(self, buf: _Buffer) -> None:
        p, rank = self.p, self.rank
        for rep in range(p.reps):
            wr_offs = offsets(p, rank, self.ranks)
            rd_offs = offsets(p, self.src, self.ranks)
            if p.random:
                _random.Random(p.seed + rep * 7919 + rank).shuffle(wr_offs)
                _random.Random(p.seed + rep * 7919 + self.src + 104729).shuffle(rd_offs)
            # a read-only benchmark writes the file first, untimed
            need_prep = "read" in p.ops and "write" not in p.ops
            for op in (("write",) if need_prep else ()) + p.ops:
                span, bad = self._phase(op, buf, wr_offs if op == "write" else rd_offs)
                if op in self.times and not (need_prep and op == "write"):
                    self.times[op].append(span)
                    self.errors[op] += bad
            self.comm.Barrier()
            if not p.keep:
                _remove(p, rank)

    def _phase(self, op: str, buf: _Buffer, offs: list[int]) -> tuple[float, int]:
        p, comm = self.p, self.comm
        if op == "read" and p.drop_caches:
            _drop(comm)
            self.dropped = True
        comm.Barrier()
        origin = now()
        if op == "write":
            buf.fill(pattern_byte(self.rank))
            path, expect = file_path(p, self.rank), 0
        else:
            path, expect = file_path(p, self.src), pattern_byte(self.src)
        t0, t1, bad = _phase(p, op, path, offs, buf, expect, comm, self.ranks, self.readback, self.h5)
        return synced_span(comm, t0, t1, origin), comm.allreduce(bad)


def _hdf5_warnings(h5env: dict[str, Any]) -> list[str]:
    """Phases where HDF5 did not do the collective I/O that was asked for."""
    out = []
    for op, mode in h5env.get("io_mode", {}).items():
        if "collective" not in mode:
            why = ", ".join(h5env.get("no_collective_cause", {}).get(op, [])) or "no cause given"
            out.append(f"HDF5 did {mode} I/O in the {op} phase although collective was asked ({why})")
    return out


def run_data(p: DataParams, comm: Any | None = None) -> dict[str, Any] | None:
    """Run the data benchmark on every rank of `comm`; rank 0 returns the result document, others None.

    Raises BenchError for I/O failures and missing parallel libraries.
    """
    check_data(p)
    _check_runtime(p)
    if comm is None:
        comm = world(require_mpi=p.api == "mpiio" or p.layout == "shared" and p.api == "hdf5")
    rank, ranks = comm.Get_rank(), comm.Get_size()
    striping, stripe_warning = _prepare_directory(p, rank)
    comm.Barrier()
    env = effective_env(comm, p.dir)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    shift = 1 if (p.rank_shift and ranks > 1) else 0
    total = p.segments * p.block_size * ranks
    buf = _Buffer(p.transfer_size, aligned=p.direct)
    phases = _Phases(p, comm, shift)
    try:
        phases.run(buf)
    except OSError as e:
        raise BenchError(f"{getattr(e, 'filename', None) or p.dir}: {e.strerror or e}") from None
    finally:
        buf.close()
    comm.Barrier()
    if rank != 0:
        return None
    results = []
    for op in p.ops:
        bws = [total / t / MiB for t in phases.times[op]]
        results.append({"op": op, "unit": "MiB/s", "bytes": total, "values": bws, "seconds": phases.times[op],
                        **summarize(bws), "verify_errors": phases.errors[op]})
    dropped = phases.dropped
    warnings = [w for w in [stripe_warning, cache_warning(total, env["nodes"], env["mem_total"], p.direct or dropped)]
                if w]
    h5env = _hdf5_env(phases.h5, p.ops) if p.api == "hdf5" else None
    if h5env and p.collective:
        warnings += _hdf5_warnings(h5env)
    effective = {**env, "api": p.api, "layout": p.layout, "collective": p.collective,
                 "access": "random" if p.random else "sequential", "direct": p.direct,
                 "hints": phases.readback, "hints_source": "MPI_File_get_info" if phases.readback else None,
                 "rank_shift": shift, "fsync": p.fsync, "drop_caches": dropped, **striping}
    if h5env:
        effective["hdf5"] = h5env
    return {"kind": "data", "started": started, "params": p.to_dict(), "effective": effective,
            "results": results, "warnings": warnings}


def _phase(p, op, path, offs, buf, expect, comm, ranks, readback, h5):
    if p.api == "posix":
        return _posix(p, op, path, offs, buf, expect)
    if p.api == "mpiio":
        return _mpiio(p, op, path, offs, buf, expect, comm, readback)
    return _hdf5(p, op, path, offs, buf, expect, comm, ranks, readback, h5)


def _hdf5_env(h5: dict[str, Any], ops: tuple[str, ...]) -> dict[str, Any]:
    """HDF5 and h5py versions, whether h5py is parallel, where the dataset's bytes start in the file (IOR's
    offsets are relative to it, so a block boundary is a stripe boundary only when it is aligned) and, for a
    shared file, the I/O mode HDF5 reports it really used per phase."""
    import h5py
    out = {"hdf5_version": h5py.version.hdf5_version, "h5py_version": h5py.version.version,
           "parallel": bool(h5py.get_config().mpi), **h5}
    for key in ("io_mode", "no_collective_cause"):   # only the timed phases, not a read-only run's set-up write
        if key in out:
            out[key] = {op: v for op, v in out[key].items() if op in ops}
            if not out[key]:
                del out[key]
    return out


def _drop(comm: Any) -> None:
    """Drop caches once per node, between the write and the read phase."""
    hosts = comm.allgather(hostname())
    me = comm.Get_rank()
    err = None
    if hosts.index(hosts[me]) == me:
        try:
            drop_caches()
        except OSError as e:
            err = f"cannot drop caches: {e.strerror or e}"
    errs = [e for e in comm.allgather(err) if e]
    if errs:
        raise BenchError(errs[0])


def _remove(p: DataParams, rank: int) -> None:
    if p.layout == "fpp" or rank == 0:
        try:
            os.unlink(file_path(p, rank))
        except FileNotFoundError:
            pass
