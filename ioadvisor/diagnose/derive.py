"""Derive what a job did from a Darshan log: a `LogSummary` of plain dataclasses.

The Darshan C library (through PyDarshan) is only ever called in a child process: a truncated or corrupt log
can make it print errors and return partial data, or crash outright, and neither may take the caller down or
pass silently. The parent checks the header itself, forks a child that parses the log, and turns any C-level
complaint or signal into an `ImportFormatError` naming the file.
"""
from __future__ import annotations

import math
import os
import statistics
import struct
import sys
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ImportFormatError, UsageError

DARSHAN_MAGIC = 6567223          # DARSHAN_MAGIC_NR, stored as int64 right after the 8-byte version string
SMALL_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")   # requests below 1 MiB
SIZE_BINS = SMALL_BINS + ("1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")
CHILD_TIMEOUT = 120.0
LCME_FL_INIT = 0x10              # Lustre component flag: the component has objects


@dataclass(frozen=True, kw_only=True)
class ApiTotals:
    """Bytes and operations through one interface (POSIX, MPI-IO, STDIO, HDF5)."""

    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0
    writes: int = 0
    files: int = 0


@dataclass(frozen=True, kw_only=True)
class LustreLayout:
    """A file's Lustre layout, one entry per component (plain files have one)."""

    stripe_size: int                  # of the last component that has objects (the one covering EOF for PFL)
    stripe_count: int
    osts: tuple[int, ...]             # every OST index the file has objects on, all components
    components: int = 1
    pool: str = ""


@dataclass(frozen=True, kw_only=True)
class FileSummary:
    """One file as POSIX (and MPI-IO, if used) saw it."""

    id: int
    path: str
    shared: bool                       # opened by more than one rank (rank -1 record, or several rank records)
    ranks: int                         # ranks that have a record for it (all ranks for a shared record)
    fs_type: str | None
    mount: str | None
    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0
    writes: int = 0
    read_time: float = 0.0
    write_time: float = 0.0
    meta_time: float = 0.0
    small_reads: int = 0
    small_writes: int = 0
    fastest_rank_time: float | None = None
    slowest_rank_time: float | None = None
    fastest_rank: int | None = None
    slowest_rank: int | None = None
    mpiio_indep: int = 0               # independent MPI-IO reads + writes on this file
    mpiio_coll: int = 0                # collective MPI-IO reads + writes on this file
    lustre: LustreLayout | None = None

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written


@dataclass(frozen=True, kw_only=True)
class OstLoad:
    """Write time attributed to one OST: each file's POSIX write time is shared equally among its OSTs."""

    ost: int
    files: int
    write_time: float
    bytes_written: int

    @property
    def mean_write_time(self) -> float:
        return self.write_time / self.files if self.files else 0.0


@dataclass(frozen=True, kw_only=True)
class LogSummary:
    """Everything the rules look at, derived once from the log."""

    path: str
    exe: str
    jobid: int | None
    uid: int | None
    nprocs: int
    run_time: float
    start_time: int | None
    darshan_version: str
    log_version: str
    modules: tuple[str, ...]
    mounts: tuple[tuple[str, str], ...]
    apis: dict[str, ApiTotals]
    files: tuple[FileSummary, ...]
    read_sizes: dict[str, int]          # POSIX request-size histogram, bins as in Darshan (0_100 ... 1G_PLUS)
    write_sizes: dict[str, int]
    consec_reads: int = 0
    consec_writes: int = 0
    seq_reads: int = 0
    seq_writes: int = 0
    meta_time: float = 0.0              # POSIX + STDIO metadata time summed over records (rank-seconds)
    max_meta_time_record: float = 0.0
    mpiio_indep_reads: int = 0
    mpiio_indep_writes: int = 0
    mpiio_coll_reads: int = 0
    mpiio_coll_writes: int = 0
    mpiio_nb_ops: int = 0
    h5d_collective: bool | None = None   # H5D_USE_MPIIO_COLLECTIVE on any dataset, None without H5D
    osts: tuple[OstLoad, ...] = ()
    fs_ost_count: int | None = None      # OSTs of the file system, as far as the log tells
    fs_ost_count_source: str = ""        # how fs_ost_count was obtained
    partial: bool = False                # Darshan ran out of memory and dropped records
    notes: tuple[str, ...] = ()

    # convenience views -------------------------------------------------------------------------------
    @property
    def has_mpiio(self) -> bool:
        return "MPI-IO" in self.modules

    @property
    def has_posix(self) -> bool:
        return "POSIX" in self.modules

    @property
    def shared_files(self) -> tuple[FileSummary, ...]:
        return tuple(f for f in self.files if f.shared)

    @property
    def fpp_files(self) -> tuple[FileSummary, ...]:
        return tuple(f for f in self.files if not f.shared)

    @property
    def small_reads(self) -> int:
        return sum(self.read_sizes.get(b, 0) for b in SMALL_BINS)

    @property
    def small_writes(self) -> int:
        return sum(self.write_sizes.get(b, 0) for b in SMALL_BINS)

    @property
    def posix_reads(self) -> int:
        return self.apis.get("POSIX", ApiTotals()).reads

    @property
    def posix_writes(self) -> int:
        return self.apis.get("POSIX", ApiTotals()).writes

    @property
    def bytes_read(self) -> int:
        """Bytes read at the lowest traced layer (POSIX + STDIO)."""
        return sum(self.apis[a].bytes_read for a in ("POSIX", "STDIO") if a in self.apis)

    @property
    def bytes_written(self) -> int:
        return sum(self.apis[a].bytes_written for a in ("POSIX", "STDIO") if a in self.apis)

    @property
    def layout(self) -> str:
        """`shared`, `fpp` or `mixed`, by the bytes moved through POSIX."""
        sb = sum(f.bytes for f in self.files if f.shared)
        fb = sum(f.bytes for f in self.files if not f.shared)
        if sb == 0 and fb == 0:
            return "none"
        if sb >= 0.8 * (sb + fb):
            return "shared"
        if fb >= 0.8 * (sb + fb):
            return "fpp"
        return "mixed"


# ----------------------------------------------------------------------------------------------------
# header check (pure Python, runs in the caller)

def check_header(path: str | Path) -> None:
    """Raise ImportFormatError unless `path` starts like a Darshan 3.x log and is not cut inside its header."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{p}: no such file")
    if p.is_dir():
        raise UsageError(f"{p}: is a directory, not a Darshan log")
    with open(p, "rb") as f:
        head = f.read(40)
    if not sniff(head):
        raise ImportFormatError("not a Darshan log (no Darshan magic number in the header)", str(p))
    size = p.stat().st_size
    order = "<" if struct.unpack_from("<q", head, 8)[0] == DARSHAN_MAGIC else ">"
    name_off, name_len = struct.unpack_from(order + "QQ", head, 24)
    if name_off + name_len > size:
        raise ImportFormatError(
            f"truncated Darshan log: the name table ends at byte {name_off + name_len} but the file has "
            f"{size} bytes", str(p))


def sniff(head: bytes) -> bool:
    """True if `head` starts with a Darshan 3.x header (version string, then the magic number either way round)."""
    if len(head) < 16 or not head.startswith(b"3."):
        return False
    return DARSHAN_MAGIC in (struct.unpack_from("<q", head, 8)[0], struct.unpack_from(">q", head, 8)[0])


# ----------------------------------------------------------------------------------------------------
# the child process

def summarize(path: str | Path, *, timeout: float = CHILD_TIMEOUT) -> LogSummary:
    """Parse a Darshan log into a LogSummary, isolated in a child process.

    Raises ImportFormatError (exit 2) for foreign, truncated or corrupt logs, UsageError if PyDarshan is missing.
    """
    import multiprocessing as mp

    p = str(Path(path))
    check_header(p)
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    ctx = mp.get_context(method)
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(p, send), daemon=True)
    child.start()
    send.close()
    try:
        if not recv.poll(timeout):
            child.kill()
            child.join()
            raise ImportFormatError(f"reading the log took more than {timeout:.0f} s; gave up", p)
        status, payload = recv.recv()
    except EOFError:
        child.join()
        code = child.exitcode
        if code is not None and code < 0:
            import signal
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            raise ImportFormatError(
                f"the Darshan library crashed reading this log ({name}): the log is truncated or corrupt", p
            ) from None
        raise ImportFormatError(f"the log reader stopped without an answer (exit code {code})", p) from None
    finally:
        recv.close()
    child.join()
    if status == "ok":
        return payload
    if status == "usage":
        raise UsageError(payload)
    raise ImportFormatError(payload, p)


def _child(path: str, conn: Any) -> None:
    """Child body: capture the C library's stderr, parse, send ("ok", LogSummary) or ("error", message)."""
    errfile = tempfile.TemporaryFile()
    saved = os.dup(2)
    os.dup2(errfile.fileno(), 2)
    try:
        backend = _import_backend()
        if backend is None:
            conn.send(("usage", "diagnosing Darshan logs needs PyDarshan: pip install 'ioadvisor[darshan]'"))
            return
        try:
            summary = _read(path, backend)
        except _LogError as e:
            conn.send(("error", str(e)))
            return
        except Exception as e:  # the log made the reader fail in a way not foreseen: report, don't trace
            conn.send(("error", f"cannot read the log: {type(e).__name__}: {e}"))
            return
        errfile.flush()
        errfile.seek(0)
        complaints = [ln.strip() for ln in errfile.read().decode("utf-8", "replace").splitlines()
                      if ln.strip().lower().startswith("error")]
        if complaints:
            conn.send(("error", "truncated or corrupt Darshan log: " + "; ".join(dict.fromkeys(complaints))))
            return
        conn.send(("ok", summary))
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        conn.close()


class _NoPandas(types.ModuleType):
    """Placeholder for pandas in the child: PyDarshan imports it at module level but only uses it for DataFrame
    output, which the child never asks for. Importing pandas is most of PyDarshan's start-up time."""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"pandas is not loaded in the log reader ({name})")


def _import_backend() -> Any:
    """PyDarshan's C backend, imported without pandas where that works, with it otherwise; None if missing."""
    stubbed = False
    if "pandas" not in sys.modules:
        sys.modules["pandas"] = _NoPandas("pandas")
        stubbed = True
    try:
        from darshan.backend import cffi_backend
        return cffi_backend
    except ImportError as e:
        if not stubbed or (e.name or "").split(".")[0] == "darshan":
            return None
    except Exception:
        if not stubbed:
            raise
    if stubbed:
        for name in [m for m in sys.modules if m == "pandas" or m.startswith("darshan")]:
            del sys.modules[name]
    try:
        from darshan.backend import cffi_backend
        return cffi_backend
    except ImportError:
        return None


class _LogError(Exception):
    pass


def _records(backend: Any, log: Any, mod: str) -> list[dict]:
    """All records of a module; counters as dicts of plain Python numbers (much faster to sum than numpy's)."""
    out = []
    if mod == "LUSTRE":
        while (rec := backend.log_get_record(log, mod, dtype="dict")) is not None:
            out.append(rec)
        return out
    cnames = backend.counter_names(mod)
    fnames = backend.fcounter_names(mod)
    while (rec := backend.log_get_record(log, mod, dtype="numpy")) is not None:
        out.append({"id": rec["id"], "rank": rec["rank"],
                    "counters": dict(zip(cnames, rec["counters"].tolist())),
                    "fcounters": dict(zip(fnames, rec["fcounters"].tolist()))})
    return out


def _mount_of(path: str, mounts: list[tuple[str, str]], cache: dict | None = None) -> tuple[str | None, str | None]:
    if cache is not None:
        d = os.path.dirname(path)
        if d not in cache:
            cache[d] = _mount_of(d + "/x", mounts)
        return cache[d]
    best: tuple[str | None, str | None] = (None, None)
    blen = -1
    for mnt, fstype in mounts:
        m = mnt.rstrip("/") or "/"
        if (path == m or path.startswith(m + "/") or m == "/") and len(m) > blen:
            best, blen = (mnt, fstype), len(m)
    return best


def _read(path: str, backend: Any) -> LogSummary:
    log = backend.log_open(path)
    if not log or log.get("handle") is None or backend.ffi.NULL == log["handle"]:
        raise _LogError("the Darshan library could not open this log (truncated, corrupt or of an unknown version)")
    try:
        job = backend.log_get_job(log)
        exe = backend.log_get_exe(log) or ""
        mounts = [(m, t) for m, t in backend.log_get_mounts(log)]
        names = backend.log_get_name_records(log)
        modinfo = backend.log_get_modules(log)
        modules = tuple(modinfo.keys())
        recs: dict[str, list[dict]] = {}
        for mod in ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "LUSTRE"):
            if mod in modinfo:
                recs[mod] = _records(backend, log, mod)
        partial = any(bool(m.get("partial_flag")) for m in modinfo.values())
    finally:
        backend.log_close(log)
    return _derive(path, job, exe, mounts, names, modules, recs, partial)


def _derive(path: str, job: dict, exe: str, mounts: list[tuple[str, str]], names: dict, modules: tuple[str, ...],
            recs: dict[str, list[dict]], partial: bool) -> LogSummary:
    notes: list[str] = []
    exe = exe.strip()
    if not exe:
        exe = "(not recorded)"
        notes.append("the log records no executable name")
    if partial:
        notes.append("Darshan ran out of record memory (partial log): totals are lower bounds")

    # Lustre layouts, keyed by record id (the same for every rank's record of one file)
    layouts: dict[int, LustreLayout] = {}
    for rec in recs.get("LUSTRE", []):
        comps = rec.get("components") or []
        osts: list[int] = []
        size = count = 0
        pool = ""
        # v1 records arrive as one component; v2 (PFL) as several, of which only instantiated ones have
        # objects. The layout that carries the file's data is the last instantiated component.
        chosen = None
        for comp in comps:
            c = comp["counters"]
            ids = [int(o) for o in comp.get("ost_ids", []) if int(o) >= 0]
            osts.extend(ids)
            flags = int(c.get("LUSTRE_COMP_FLAGS", -1))
            instantiated = bool(ids) or (flags > 0 and flags & LCME_FL_INIT)
            if instantiated or chosen is None:
                chosen = c
                pool = comp.get("pool_name") or pool
        if chosen is not None:
            size = int(chosen.get("LUSTRE_COMP_STRIPE_SIZE", 0))
            count = int(chosen.get("LUSTRE_COMP_STRIPE_COUNT", 0))
        if comps:
            layouts[rec["id"]] = LustreLayout(stripe_size=size, stripe_count=count, osts=tuple(dict.fromkeys(osts)),
                                              components=len(comps), pool=pool)

    # MPI-IO per file
    mpi_ops: dict[int, list[int]] = {}
    mi = dict(indep_r=0, indep_w=0, coll_r=0, coll_w=0, nb=0)
    mpi_tot = _Totals()
    for rec in recs.get("MPI-IO", []):
        c = rec["counters"]
        ind = c["MPIIO_INDEP_READS"] + c["MPIIO_INDEP_WRITES"]
        col = c["MPIIO_COLL_READS"] + c["MPIIO_COLL_WRITES"] + c["MPIIO_SPLIT_READS"] + c["MPIIO_SPLIT_WRITES"]
        acc = mpi_ops.setdefault(rec["id"], [0, 0])
        acc[0] += ind
        acc[1] += col
        mi["indep_r"] += c["MPIIO_INDEP_READS"]
        mi["indep_w"] += c["MPIIO_INDEP_WRITES"]
        mi["coll_r"] += c["MPIIO_COLL_READS"] + c["MPIIO_SPLIT_READS"]
        mi["coll_w"] += c["MPIIO_COLL_WRITES"] + c["MPIIO_SPLIT_WRITES"]
        mi["nb"] += c["MPIIO_NB_READS"] + c["MPIIO_NB_WRITES"]
        mpi_tot.add(rec["id"], c["MPIIO_BYTES_READ"], c["MPIIO_BYTES_WRITTEN"],
                    c["MPIIO_INDEP_READS"] + c["MPIIO_COLL_READS"] + c["MPIIO_SPLIT_READS"] + c["MPIIO_NB_READS"],
                    c["MPIIO_INDEP_WRITES"] + c["MPIIO_COLL_WRITES"] + c["MPIIO_SPLIT_WRITES"] + c["MPIIO_NB_WRITES"])

    # POSIX, grouped by file
    by_file: dict[int, list[dict]] = {}
    read_sizes = {b: 0 for b in SIZE_BINS}
    write_sizes = {b: 0 for b in SIZE_BINS}
    posix_tot = _Totals()
    consec_r = consec_w = seq_r = seq_w = 0
    meta = 0.0
    max_meta = 0.0
    for rec in recs.get("POSIX", []):
        c, fc = rec["counters"], rec["fcounters"]
        by_file.setdefault(rec["id"], []).append(rec)
        for b in SIZE_BINS:
            read_sizes[b] += c[f"POSIX_SIZE_READ_{b}"]
            write_sizes[b] += c[f"POSIX_SIZE_WRITE_{b}"]
        posix_tot.add(rec["id"], c["POSIX_BYTES_READ"], c["POSIX_BYTES_WRITTEN"], c["POSIX_READS"], c["POSIX_WRITES"])
        consec_r += c["POSIX_CONSEC_READS"]
        consec_w += c["POSIX_CONSEC_WRITES"]
        seq_r += c["POSIX_SEQ_READS"]
        seq_w += c["POSIX_SEQ_WRITES"]
        meta += fc["POSIX_F_META_TIME"]
        max_meta = max(max_meta, fc["POSIX_F_META_TIME"])

    files: list[FileSummary] = []
    mount_cache: dict[str, tuple[str | None, str | None]] = {}
    for fid, group in by_file.items():
        fname = names.get(fid, f"<record {fid}>")
        mnt, fstype = _mount_of(fname, mounts, mount_cache)
        shared = any(r["rank"] == -1 for r in group) or len({r["rank"] for r in group}) > 1
        nranks = job["nprocs"] if any(r["rank"] == -1 for r in group) else len({r["rank"] for r in group})
        cs = [r["counters"] for r in group]
        fcs = [r["fcounters"] for r in group]
        # rank extremes: a reduced record carries them; rank records are compared directly
        if len(group) == 1 and group[0]["rank"] == -1:
            fast_t, slow_t = fcs[0]["POSIX_F_FASTEST_RANK_TIME"], fcs[0]["POSIX_F_SLOWEST_RANK_TIME"]
            fast_r, slow_r = cs[0]["POSIX_FASTEST_RANK"], cs[0]["POSIX_SLOWEST_RANK"]
        elif len(group) > 1:
            tot = [f["POSIX_F_READ_TIME"] + f["POSIX_F_WRITE_TIME"] + f["POSIX_F_META_TIME"] for f in fcs]
            i_fast, i_slow = tot.index(min(tot)), tot.index(max(tot))
            fast_t, slow_t = tot[i_fast], tot[i_slow]
            fast_r, slow_r = group[i_fast]["rank"], group[i_slow]["rank"]
        else:
            fast_t = slow_t = None
            fast_r = slow_r = None
        ops = mpi_ops.get(fid, [0, 0])
        files.append(FileSummary(
            id=fid, path=fname, shared=shared, ranks=nranks, fs_type=fstype, mount=mnt,
            bytes_read=sum(c["POSIX_BYTES_READ"] for c in cs), bytes_written=sum(c["POSIX_BYTES_WRITTEN"] for c in cs),
            reads=sum(c["POSIX_READS"] for c in cs), writes=sum(c["POSIX_WRITES"] for c in cs),
            read_time=sum(f["POSIX_F_READ_TIME"] for f in fcs), write_time=sum(f["POSIX_F_WRITE_TIME"] for f in fcs),
            meta_time=sum(f["POSIX_F_META_TIME"] for f in fcs),
            small_reads=sum(c[f"POSIX_SIZE_READ_{b}"] for c in cs for b in SMALL_BINS),
            small_writes=sum(c[f"POSIX_SIZE_WRITE_{b}"] for c in cs for b in SMALL_BINS),
            fastest_rank_time=fast_t, slowest_rank_time=slow_t, fastest_rank=fast_r, slowest_rank=slow_r,
            mpiio_indep=ops[0], mpiio_coll=ops[1], lustre=layouts.get(fid)))
    files.sort(key=lambda f: -f.bytes)

    # STDIO and HDF5 totals
    stdio_tot = _Totals()
    for rec in recs.get("STDIO", []):
        c, fc = rec["counters"], rec["fcounters"]
        stdio_tot.add(rec["id"], c["STDIO_BYTES_READ"], c["STDIO_BYTES_WRITTEN"], c["STDIO_READS"], c["STDIO_WRITES"])
        meta += fc["STDIO_F_META_TIME"]
        max_meta = max(max_meta, fc["STDIO_F_META_TIME"])
    h5_tot = _Totals()
    h5_coll: bool | None = None
    for rec in recs.get("H5D", []):
        c = rec["counters"]
        h5_tot.add(rec["id"], c["H5D_BYTES_READ"], c["H5D_BYTES_WRITTEN"], c["H5D_READS"], c["H5D_WRITES"])
        h5_coll = bool(h5_coll) or c["H5D_USE_MPIIO_COLLECTIVE"] > 0
    apis: dict[str, ApiTotals] = {}
    for name, tot, mod in (("POSIX", posix_tot, "POSIX"), ("MPI-IO", mpi_tot, "MPI-IO"),
                           ("STDIO", stdio_tot, "STDIO"), ("HDF5", h5_tot, "H5D")):
        if mod in modules:
            apis[name] = tot.freeze()

    # per-OST write time, and how many OSTs the file system has
    ost_acc: dict[int, list[float]] = {}
    for f in files:
        if f.lustre and f.lustre.osts:
            share = 1.0 / len(f.lustre.osts)
            for o in f.lustre.osts:
                a = ost_acc.setdefault(o, [0, 0.0, 0.0])
                a[0] += 1
                a[1] += f.write_time * share
                a[2] += f.bytes_written * share
    osts = tuple(OstLoad(ost=o, files=int(a[0]), write_time=a[1], bytes_written=int(a[2]))
                 for o, a in sorted(ost_acc.items()))
    fs_osts, fs_src = None, ""
    all_ids = [o for lay in layouts.values() for o in lay.osts]
    if all_ids:
        fs_osts = max(all_ids) + 1
        fs_src = (f"at least {fs_osts}: the highest OST index in the log's Lustre records is {max(all_ids)} "
                  f"({len(set(all_ids))} distinct OSTs seen)")

    meta_j = job.get("metadata") or {}
    start = job.get("start_time_sec")
    return LogSummary(
        path=path, exe=exe, jobid=job.get("jobid"), uid=job.get("uid"), nprocs=int(job["nprocs"]),
        run_time=float(job.get("run_time") or 0.0), start_time=int(start) if start is not None else None,
        darshan_version=str(meta_j.get("lib_ver", "")), log_version=str(job.get("log_ver", "")),
        modules=modules, mounts=tuple(mounts), apis=apis, files=tuple(files),
        read_sizes=read_sizes, write_sizes=write_sizes,
        consec_reads=consec_r, consec_writes=consec_w, seq_reads=seq_r, seq_writes=seq_w,
        meta_time=meta, max_meta_time_record=max_meta,
        mpiio_indep_reads=mi["indep_r"], mpiio_indep_writes=mi["indep_w"], mpiio_coll_reads=mi["coll_r"],
        mpiio_coll_writes=mi["coll_w"], mpiio_nb_ops=mi["nb"], h5d_collective=h5_coll,
        osts=osts, fs_ost_count=fs_osts, fs_ost_count_source=fs_src, partial=partial, notes=tuple(notes))


class _Totals:
    def __init__(self) -> None:
        self.br = self.bw = self.r = self.w = 0
        self.ids: set[int] = set()

    def add(self, fid: int, br: int, bw: int, r: int, w: int) -> None:
        self.br += int(br)
        self.bw += int(bw)
        self.r += int(r)
        self.w += int(w)
        self.ids.add(fid)

    def freeze(self) -> ApiTotals:
        return ApiTotals(bytes_read=self.br, bytes_written=self.bw, reads=self.r, writes=self.w, files=len(self.ids))


# ----------------------------------------------------------------------------------------------------
# from the summary to a Workload

def median_ost_time(summary: LogSummary) -> float | None:
    """Median over OSTs of the mean write time per file on that OST."""
    vals = [o.mean_write_time for o in summary.osts if o.files]
    return statistics.median(vals) if vals else None


def to_workload(summary: LogSummary, ranks_per_node: int | None = None) -> Any:
    """The job as a `Workload`; Darshan records no node count, so `ranks_per_node` is an assumption (default 1)."""
    from ..model.types import Workload

    rpn = max(1, ranks_per_node or 1)
    nprocs = max(1, summary.nprocs)
    op = "write" if summary.bytes_written >= summary.bytes_read else "read"
    moved = summary.bytes_written if op == "write" else summary.bytes_read
    api = "MPIIO" if summary.has_mpiio else "POSIX"
    if "HDF5" in summary.apis:
        api = "HDF5"
    ops = summary.posix_writes if op == "write" else summary.posix_reads
    consec = (summary.consec_writes + summary.seq_writes) if op == "write" else (summary.consec_reads + summary.seq_reads)
    access = "sequential" if ops == 0 or summary_seq_share(summary, op) >= 0.5 else "random"
    del consec
    layout = summary.layout if summary.layout in ("shared", "fpp") else "any"
    return Workload(
        nodes=max(1, math.ceil(nprocs / rpn)), ranks_per_node=min(rpn, nprocs), bytes_per_rank=moved // nprocs,
        api=api, layout=layout, op=op, access=access,
        access_size=(moved // ops) if ops else None,
        files_per_rank=max(1, round(len(summary.fpp_files) / nprocs)) if summary.fpp_files else 1,
        files_created=len(summary.files) or None)


def summary_seq_share(summary: LogSummary, op: str) -> float:
    """Share of POSIX operations of kind `op` that were sequential (offset after the previous one)."""
    if op == "write":
        n, s = summary.posix_writes, summary.seq_writes
    else:
        n, s = summary.posix_reads, summary.seq_reads
    return s / n if n else 1.0
