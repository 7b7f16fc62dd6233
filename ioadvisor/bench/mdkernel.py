"""The metadata kernel, after mdtest -F/-D [-u]: create, stat, read and remove files (and directories).

Each rank owns `dirs_per_rank` directories of `files_per_dir` items. With `unique_dir` every rank works in
its own subtree (mdtest -u); otherwise the directories are shared and every rank puts its own items in each.
A phase's rate is all ranks' operations over the span from the earliest start to the latest end.
"""
from __future__ import annotations

import datetime as _dt
import os
import shutil
from pathlib import Path
from typing import Any

from . import BenchError
from .comm import now, synced_span, world
from .kernel import effective_env
from .params import MdParams
from .stats import summarize


def _dirs(p: MdParams, base: str, rank: int) -> list[str]:
    if p.unique_dir:
        return [os.path.join(base, f"rank.{rank}", f"dir.{d}") for d in range(p.dirs_per_rank)]
    return [os.path.join(base, f"dir.{d}") for d in range(p.dirs_per_rank)]


def _items(p: MdParams, base: str, rank: int, kind: str) -> list[str]:
    return [os.path.join(d, f"{kind}.{rank}.{i}") for d in _dirs(p, base, rank) for i in range(p.files_per_dir)]


def _file_phase(phase: str, paths: list[str], payload: bytes) -> None:
    size = len(payload)
    if phase == "file_create":
        for path in paths:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            if size:
                os.write(fd, payload)
            os.close(fd)
    elif phase == "file_stat":
        for path in paths:
            os.stat(path)
    elif phase == "file_read":
        for path in paths:
            fd = os.open(path, os.O_RDONLY)
            if size and len(os.read(fd, size)) != size:
                os.close(fd)
                raise BenchError(f"{path}: short read")
            os.close(fd)
    elif phase == "file_remove":
        for path in paths:
            os.unlink(path)


def _dir_phase(phase: str, paths: list[str]) -> None:
    fn = {"dir_create": os.mkdir, "dir_stat": os.stat, "dir_remove": os.rmdir}[phase]
    for path in paths:
        fn(path)


FILE_PHASES = ("file_create", "file_stat", "file_read", "file_remove")
DIR_PHASES = ("dir_create", "dir_stat", "dir_remove")


def run_md(p: MdParams, comm: Any | None = None) -> dict[str, Any] | None:
    """Run the metadata benchmark on every rank; rank 0 returns the result document, others None."""
    comm = comm if comm is not None else world()
    rank, ranks = comm.Get_rank(), comm.Get_size()
    base = os.path.join(p.dir, f"ioadvise-md.{os.getpid() if rank == 0 else 0}")
    base = comm.bcast(base)
    env = effective_env(comm, p.dir) if _mkdir(p.dir, rank, comm) else {}
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    phases = (FILE_PHASES if p.items in ("files", "both") else ()) + (DIR_PHASES if p.items in ("dirs", "both")
                                                                        else ())
    payload = b"\xa5" * p.file_size
    per_rank = p.files_per_dir * p.dirs_per_rank
    rates: dict[str, list[float]] = {ph: [] for ph in phases}
    try:
        for _rep in range(p.reps):
            # untimed set-up: the directory tree the items live in
            if p.unique_dir or rank == 0:
                for d in _dirs(p, base, rank):
                    os.makedirs(d, exist_ok=True)
            comm.Barrier()
            files, dirs = _items(p, base, rank, "file"), _items(p, base, rank, "dir")
            for ph in phases:
                comm.Barrier()
                origin = now()
                t0 = now()
                if ph.startswith("file_"):
                    _file_phase(ph, files, payload)
                else:
                    _dir_phase(ph, dirs)
                t1 = now()
                span = synced_span(comm, t0, t1, origin)
                rates[ph].append(per_rank * ranks / span if span > 0 else 0.0)
            comm.Barrier()
            if rank == 0:
                shutil.rmtree(base, ignore_errors=True)
            comm.Barrier()
    except OSError as e:
        raise BenchError(f"{getattr(e, 'filename', None) or p.dir}: {e.strerror or e}") from None
    if rank != 0:
        return None
    results = [{"op": ph, "unit": "ops/s", "items": per_rank * ranks, "values": rates[ph], **summarize(rates[ph])}
               for ph in phases]
    effective = {**env, "api": "POSIX", "unique_dir": p.unique_dir, "files_per_dir": p.files_per_dir,
                 "dirs_per_rank": p.dirs_per_rank, "items_per_rank": per_rank, "file_size": p.file_size}
    return {"kind": "md", "started": started, "params": p.to_dict(), "effective": effective, "results": results,
            "warnings": []}


def _mkdir(path: str, rank: int, comm: Any) -> bool:
    err = None
    if rank == 0:
        try:
            Path(path).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            err = f"{path}: cannot create directory: {e.strerror}"
    err = comm.bcast(err)
    if err:
        raise BenchError(err)
    return True
