"""Derive what a job did from a Darshan log: a `LogSummary` of plain dataclasses.

The Darshan C library (through PyDarshan) is only ever called in a child process: a truncated or corrupt log
can make it print errors and return partial data, or crash outright, and neither may take the caller down or
pass silently. The parent checks the header itself, forks a child that parses the log, and turns any C-level
complaint or signal into an `ImportFormatError` naming the file.
"""
from __future__ import annotations

import functools
import math
import operator
import os
import re
import struct
import sys
import types
from typing import Any

from ..errors import ImportFormatError
from ..frozen import frozen, replace
from ..util import cycles_paused
from .header import memory_refusal
from .jobrecord import ImpossibleJob, checked_job
from .summary import (BIN_UPPER, MIB, READ_MODULES, SIZE_BINS, UNREAD_IO_MODULES, ApiTotals, FileSummary, Heatmap,
                      LogSummary, LustreLayout, MetaTime, MpiioDirection, OstLoad, RankSpread, Requests,
                      positional)

__all__ = ["LogSummary", "FileSummary", "SIZE_BINS", "import_backend", "read_checked"]

# What one log may take to read: records (each about 4 KB once derived: 200,000 records of a hostile log that
# deflates to a few bytes per record are about 1 GB and a minute or two), and address space of the reading process
MAX_RECORDS = 200_000
READ_MEMORY = 4 << 30
LCME_FL_INIT = 0x10              # Lustre component flag: the component has objects
MAX_HEATMAP_BINS = 2 ** 16      # a heatmap record claiming more bins is corrupt: it is not read


# ----------------------------------------------------------------------------------------------------
# the child process

def child_main(path: str, fd: int, parent: int) -> None:
    """The reading child's body (`child.start_read`): capture the C library's stderr, parse, write ("ok",
    LogSummary) or ("error", message) to `fd`, pickled."""
    import faulthandler
    import pickle

    from ..util import die_with_parent, limit_memory
    die_with_parent(parent)
    limit_memory(READ_MEMORY)
    # the library aborting on a corrupt log is an answer the parent turns into one line; a fault handler
    # inherited from the parent (PYTHONFAULTHANDLER, pytest) would print a Python stack on the terminal too
    faulthandler.disable()
    errfile = _scratch_file()
    saved = os.dup(2)
    os.dup2(errfile.fileno(), 2)
    answer: tuple[str, Any]
    try:
        backend = import_backend(without_numpy=True)
        if backend is None:
            answer = ("usage", "diagnosing Darshan logs needs PyDarshan: pip install 'ioadvisor[darshan]'")
        else:
            try:
                answer = ("ok", read_checked(path, backend, errfile))
            except ImportFormatError as e:
                answer = ("error", e.reason)
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:               # a summary this large
            data = pickle.dumps(("error", memory_text()))
        with open(fd, "wb", closefd=True) as out:
            out.write(data)
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _scratch_file() -> Any:
    """An anonymous file in memory for the C library's complaints (`tempfile` costs the reader's start-up more than
    the read of a small log; where memfd_create is missing, tempfile's unnamed file)."""
    try:
        return open(os.memfd_create("darshan-complaints"), "w+b")
    except (AttributeError, OSError):
        import tempfile
        return tempfile.TemporaryFile()


def read_checked(path: str, backend: Any, errfile: Any) -> LogSummary:
    """Parse a log in this process, with file descriptor 2 already pointing at `errfile` (a temporary file):
    whatever the C library complains about while reading makes the log corrupt. The caller must be a process
    that may die (the library aborts on some corrupt logs): a child, or a worker of a pool that restarts it.
    Raises ImportFormatError naming `path`."""
    errfile.seek(0)
    errfile.truncate()

    def complaints() -> list[str]:
        if os.fstat(errfile.fileno()).st_size == 0:      # nothing written: most calls
            return []
        errfile.flush()
        errfile.seek(0)
        lines = errfile.read().decode("utf-8", "replace").splitlines()
        return list(dict.fromkeys(ln.strip() for ln in lines if ln.strip().lower().startswith("error")))

    try:
        # a read makes a few acyclic objects per record: on a log of thousands of records the cycle collections
        # their number set off cost a fifth of the read, for nothing
        with cycles_paused():
            s = _read(path, backend, complaints)
    except _LogError as e:
        raise ImportFormatError(str(e), path) from None
    except MemoryError:
        raise ImportFormatError(memory_text(), path) from None
    except Exception as e:  # the log made the reader fail in a way not foreseen: report, don't trace
        raise ImportFormatError(f"cannot read the log: {type(e).__name__}: {e}", path) from None
    try:
        nodes = nodes_stated(path, s.modules, s.nprocs, backend)
    except Exception:                    # the node count is a detail: the log itself was read
        nodes = None
    return replace(s, nodes=nodes) if nodes else s


def nodes_stated(path: str, modules: tuple[str, ...], nprocs: int, backend: Any) -> int | None:
    """The job's node count where the log states it, else None: the BG/Q module's BGQ_NNODES, or the distinct
    host names of DXT trace records when they cover every rank (a trace of some ranks says nothing of the
    others). Darshan's other modules record no node count."""
    wanted = [m for m in ("BG/Q", "DXT_POSIX", "DXT_MPIIO") if m in modules]
    if not wanted:
        return None
    log = open_log(backend, path)
    try:
        if "BG/Q" in wanted and (n := _bgq_nodes(backend, log)) > 0:
            return n
        hosts: dict[int, str] = {}
        budget = 2 * nprocs + 64          # records read at most: a trace of a few ranks over many files is not read
        for mod in wanted:
            if mod == "BG/Q":
                continue
            while len(hosts) < nprocs and budget > 0 and (rec := backend.log_get_record(log, mod, dtype="dict")):
                budget -= 1
                hosts.setdefault(int(rec["rank"]), rec["hostname"])
        return len(set(hosts.values())) if nprocs > 0 and len(hosts) == nprocs else None
    finally:
        backend.log_close(log)


def _bgq_nodes(backend: Any, log: Any) -> int:
    """BGQ_NNODES of the log's first BG/Q record (0 if it has none), read from the record's C struct through
    PyDarshan's cffi definitions, as the backend's `log_get_record` reads it (the same library call, struct and
    free) but without the numpy array that function makes of the counters: the reading processes run without
    numpy (`import_backend`)."""
    ffi, lib = backend.ffi, backend.libdutil
    buf = ffi.new("void **")
    if lib.darshan_log_get_record(log["handle"], backend.log_get_modules(log)["BG/Q"]["idx"], buf) < 1:
        return 0
    try:
        rec = ffi.cast(backend._structdefs["BG/Q"], buf)
        return int(rec[0].counters[backend.counter_names("BGQ").index("BGQ_NNODES")])
    finally:
        lib.darshan_free(buf[0])


class _NotLoaded(types.ModuleType):
    """Placeholder for a module PyDarshan imports at module level but the log reader never uses: pandas (for
    DataFrame output) and, in the one-log child and the archive workers, numpy (its record arrays; `_records`
    reads the C structs through PyDarshan's own cffi definitions instead). Importing them is most of PyDarshan's
    start-up time."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"{self.__name__} is not loaded in the log reader ({name})")


def import_backend(*, without_numpy: bool = False) -> Any:
    """PyDarshan's C backend, None if missing. pandas (and with `without_numpy`, numpy) is kept out of the import
    where that works; the placeholders leave `sys.modules` again afterwards, so a later import of either gets the
    real module. `without_numpy` is for processes that read records only through `_records`: the backend's own
    record functions (`log_get_record`) need numpy. Such a process (the one-log child, an archive worker) also takes
    the backend's C declarations already parsed (`ffi_cache`)."""
    names = ("pandas", "numpy") if without_numpy else ("pandas",)
    stubbed = [n for n in names if n not in sys.modules]
    for n in stubbed:
        sys.modules[n] = _NotLoaded(n)
    try:
        if without_numpy:            # the one-log child, a worker: C declarations parsed once per installation
            from .ffi_cache import import_cffi_backend
            return import_cffi_backend()
        from darshan.backend import cffi_backend
        return cffi_backend
    except ImportError as e:
        if not stubbed or (e.name or "").split(".")[0] == "darshan":
            return None
    except Exception:
        if not stubbed:
            raise
    finally:
        for n in stubbed:
            if isinstance(sys.modules.get(n), _NotLoaded):
                del sys.modules[n]
    for name in [m for m in sys.modules if m.startswith("darshan")]:
        del sys.modules[name]
    try:
        from darshan.backend import cffi_backend
        return cffi_backend
    except ImportError:
        return None


def memory_text() -> str:
    """Why a log this process ran out of memory reading is refused, with the process's address-space limit."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, ValueError, OSError):
        soft = -1
    return memory_refusal(soft)


class _LogError(Exception):
    pass


class _TooLarge(_LogError):
    pass


# Counters no run can produce negative: counts of operations and bytes, the size histograms. Other counters hold -1
# by design (rank ids of a shared record) or signed values (record-name hashes, offsets, strides).
_COUNT_NAME = re.compile(r"_(READS|WRITES|OPENS|SEEKS|STATS|FLUSHES|BYTES_READ|BYTES_WRITTEN|RANK_BYTES|NOT_ALIGNED"
                         r"|CONSEC_READS|CONSEC_WRITES|SEQ_READS|SEQ_WRITES)$|_SIZE_(READ|WRITE)_|_ACCESS\d_COUNT$")


@frozen
class Dropped:
    """A counter value no run can produce (a negative, infinite or NaN timer; a negative count), left out of
    every total and finding (read as 0); or a Lustre stripe count no file system lays out (the record is given no
    layout)."""

    module: str
    counter: str
    value: float
    rank: int
    record_id: int


def _picker(names: Any, test: Any) -> tuple[Any, tuple[int, ...]]:
    """An itemgetter returning a tuple of the values at the names `test` accepts (None if none), and their indices."""
    import operator
    idx = tuple(i for i, n in enumerate(names) if test(n))
    if not idx:
        return None, ()
    get = operator.itemgetter(*idx)
    return (get if len(idx) > 1 else (lambda v, g=get: (g(v),))), idx


def _sane(mod: str, rid: int, rank: int, names: Any, vals: list, idx: tuple[int, ...], is_time: bool,
          dropped: list) -> list:
    """`vals` with the impossible values at `idx` set to 0, each one listed in `dropped`. More than `limit` records: _LogError."""
    vals = list(vals)
    for i in idx:
        v = vals[i]
        if (0.0 <= v < math.inf) if is_time else v >= 0:
            continue
        dropped.append(Dropped(mod, names[i], float(v), int(rank), int(rid)))
        vals[i] = 0.0 if is_time else 0
    return vals


def _layout(ffi: Any, ctype: Any) -> tuple[int, tuple[struct.Struct, struct.Struct, int, int], int]:
    """How to read a module's record struct (`ctype`: PyDarshan's `struct X **`) from its memory: its size; a
    Struct of (id, rank, fcounters...) at the struct's own offsets (native byte order, the counters, other fields
    and padding skipped), a Struct of the counters, and where the counters' bytes start and end; and the number of
    counters."""
    t = ctype.item.item
    fields = dict(t.fields)
    nc, nf = fields["counters"].type.length, fields["fcounters"].type.length
    base = ffi.offsetof(t, "base_rec")
    parts = [(base + ffi.offsetof("struct darshan_base_record", "id"), "Q"),
             (base + ffi.offsetof("struct darshan_base_record", "rank"), "q"),
             (ffi.offsetof(t, "fcounters"), f"{nf}d")]
    fmt, at = "=", 0
    for off, code in parts:
        if off < at:
            raise ValueError(f"{t.cname}: fields out of order")
        fmt += f"{off - at}x{code}"
        at = off + struct.calcsize("=" + code)
    start = ffi.offsetof(t, "counters")
    return ffi.sizeof(t), (struct.Struct(fmt), struct.Struct(f"={start}x{nc}q"), start, start + 8 * nc), nc


@functools.lru_cache(maxsize=None)
def _reader(backend: Any, mod: str) -> tuple:
    """What `_records` needs to read a module's records, worked out once per process: the struct's type, the
    counter and timer names, the record's layout (`_layout`; none for Lustre's), and the picks of the counters
    that are checked in the same pass as the read (C-level picks of the timers and counts: a closer look only
    where one of them is out of range)."""
    ffi = backend.ffi
    ctype = ffi.typeof(backend._structdefs[mod])
    lustre = mod == "LUSTRE"
    cnames = tuple(backend.counter_names("LUSTRE_COMP" if lustre else mod))
    fnames = () if lustre else tuple(backend.fcounter_names(mod))
    # a record's id, rank and timers in one unpack of its memory, its counters in another (reading each through
    # cffi costs more than all the rest of the read)
    size, layout, nc = _lustre_layout(ffi, ctype) if lustre else _layout(ffi, ctype)
    # each record's counters fill a copy of a dict with the names already in place (a copy of a dict is one block
    # copy; a dict built from pairs grows and rehashes several times)
    return (ctype, cnames, fnames, size, layout, nc, _picker(cnames, _COUNT_NAME.search),
            _picker(fnames, lambda n: n.endswith("_TIME") or "VARIANCE" in n), dict.fromkeys(cnames),
            dict.fromkeys(fnames))


def _records(backend: Any, log: Any, mod: str, dropped: list | None = None,
             limit: int = MAX_RECORDS) -> list[dict]:
    """All records of a module, read through PyDarshan's cffi definitions of the module's C struct: counters as
    dicts of plain Python numbers (much faster to sum than numpy's, and no numpy needed). A Lustre record holds
    components (stripe counters, pool, OST list) instead of counters. A timer that is negative, infinite or NaN,
    or a count of operations or bytes that is negative, is read as 0 and listed in `dropped`. Records whose
    counters are equal (and in range) share their dict: the records are read, never changed. More than `limit`
    records: _TooLarge."""
    if mod == "LUSTRE":
        return _lustre_records(backend, log, limit)
    ffi = backend.ffi
    idx = backend.log_get_modules(log)[mod]["idx"]
    _, cnames, fnames, size, layout, nc, (cget, cidx), (fget, fidx), cdict, fdict = _reader(backend, mod)
    dropped = [] if dropped is None else dropped
    out: list[dict] = []
    # records with the same counters share one dict of them (nothing changes a record once read): the ranks of a
    # job mostly make the same calls, and a file-per-process job's thousands of records often hold one set of
    # counters (their timers, with the times of day, differ)
    counters: dict[bytes, dict] = {}
    same = counters.get
    # one record's memory, which the library fills with each record in turn (the modules read here have records
    # of one fixed size, the struct's; given NULL, the library would allocate, and the caller free, every one)
    mem = ffi.new("char[]", size)
    buf = ffi.new("void **", mem)
    # the loop's lookups made once: it runs once per record, of which a log may hold 200,000
    handle, get_record, append = log["handle"], backend.libdutil.darshan_log_get_record, out.append
    (head, cstruct, start, end), view, isfinite = layout, ffi.buffer(mem), math.isfinite
    unpack, n = head.unpack_from, 0
    while get_record(handle, idx, buf) >= 1:
        if n >= limit:
            raise _TooLarge(f"the log holds more than {MAX_RECORDS:,} records (of {mod} and the modules before "
                            f"it): more than one log may take to read (about 4 KB of memory each); refused")
        n += 1
        v = unpack(view)
        # counters seen before (their bytes equal, so their values) were checked then, and are not unpacked again
        c = same(key := view[start:end])
        if c is None:
            cv = cstruct.unpack_from(view)
            if cget is not None and min(cget(cv)) < 0:
                cv = _sane(mod, v[0], v[1], cnames, cv, cidx, False, dropped)
                c = dict(zip(cnames, cv))         # its own: each such record's values are listed in `dropped`
            else:
                c = counters[key] = cdict.copy()
                c.update(zip(cnames, cv))
        fv = v[2:]
        # every timer is among the record's floats: when none of those is negative and their sum is finite
        # (no NaN, no infinity), no timer needs a closer look
        if fget is not None and (min(fv) < 0 or not isfinite(sum(fv))):
            fv = _sane(mod, v[0], v[1], fnames, fv, fidx, True, dropped)
        f = fdict.copy()
        f.update(zip(fnames, fv))
        append({"id": v[0], "rank": v[1], "counters": c, "fcounters": f})
    return out


def _lustre_records(backend: Any, log: Any, limit: int) -> list[dict]:
    """`_records` of the LUSTRE module: each record's id, rank and components (of a size each record states,
    so the library allocates every record)."""
    ffi, lib = backend.ffi, backend.libdutil
    idx = backend.log_get_modules(log)["LUSTRE"]["idx"]
    _, cnames, _, size, layout, *_ = _reader(backend, "LUSTRE")
    buf = ffi.new("void **")         # NULL: the library allocates each record (it would write into a non-NULL one)
    out: list[dict] = []
    while lib.darshan_log_get_record(log["handle"], idx, buf) >= 1:
        if len(out) >= limit:
            raise _TooLarge(f"the log holds more than {MAX_RECORDS:,} records (of LUSTRE and the modules before "
                            f"it): more than one log may take to read (about 4 KB of memory each); refused")
        rid, rank, n_comps, comps_at, osts_at = layout.unpack_from(ffi.buffer(buf[0], size))
        out.append({"id": rid, "rank": rank, "components": _components(ffi, n_comps, comps_at, osts_at, cnames)})
        lib.darshan_free(buf[0])
        buf[0] = ffi.NULL
    return out


#: the words of the note on counter values left out (dropped_note), by which the archive scan keeps it
DROPPED_NOTE = "counter value(s) no run can produce"


def dropped_note(dropped: list[Dropped], names: dict) -> str:
    """One note naming the counter values left out (the first three, with their file and rank)."""
    shown = "; ".join(f"{d.counter} = {d.value:g} (rank {d.rank}, {names.get(d.record_id, f'record {d.record_id}')})"
                      for d in dropped[:3])
    more = f"; and {len(dropped) - 3} more" if len(dropped) > 3 else ""
    return (f"{len(dropped)} {DROPPED_NOTE} (a negative, infinite or NaN timer, a negative count, or a Lustre "
            f"stripe count outside 0-{MAX_STRIPES}) left out of every total and finding: {shown}{more}")


@functools.lru_cache(maxsize=None)
def _component_layout(ffi: Any) -> tuple[int, struct.Struct, Any, Any]:
    """The size of a Lustre component struct, a Struct of its counters and pool name (at its own offsets), and the
    C types `char *` and `int64_t *` (looked up once, not at each cast)."""
    t = "struct darshan_lustre_component"
    fields = dict(ffi.typeof(t).fields)
    nc, name_len = fields["counters"].type.length, fields["pool_name"].type.length
    at, pool = ffi.offsetof(t, "counters"), ffi.offsetof(t, "pool_name")
    return (ffi.sizeof(t), struct.Struct(f"={at}x{nc}q{pool - at - 8 * nc}x{name_len}s"), ffi.typeof("char *"),
            ffi.typeof("int64_t *"))


@functools.lru_cache(maxsize=64)
def _pool_name(raw: bytes) -> str:
    """A pool name as C reads it: up to its first NUL (most logs name one pool, or none, for every file)."""
    return raw.split(b"\0", 1)[0].decode("utf-8")


def _lustre_layout(ffi: Any, ctype: Any) -> tuple[int, struct.Struct, int]:
    """How to read the head of a Lustre record in one unpack of its memory: its size, and a Struct of its id,
    rank, component count and the addresses of its components and of its OST list (at the struct's own
    offsets, native byte order); no counters of its own."""
    t = ctype.item.item
    base = ffi.offsetof(t, "base_rec")
    ptr = {4: "I", 8: "Q"}[ffi.sizeof("void *")]
    parts = [(base + ffi.offsetof("struct darshan_base_record", "id"), "Q"),
             (base + ffi.offsetof("struct darshan_base_record", "rank"), "q"), (ffi.offsetof(t, "num_comps"), "q"),
             (ffi.offsetof(t, "comps"), ptr), (ffi.offsetof(t, "ost_ids"), ptr)]
    fmt, at = "=", 0
    for off, code in parts:
        fmt += f"{off - at}x{code}"
        at = off + struct.calcsize("=" + code)
    return ffi.sizeof(t), struct.Struct(fmt), 0


#: the most stripes a Lustre file (one component of it) has: LOV_MAX_STRIPE_COUNT
MAX_STRIPES = 2000


class _Unlaid(Exception):
    """A Lustre component whose stripe count no Lustre file system lays out (`args[0]`): the library has that many
    OST ids read for it, which a hostile log need not hold, so none is read."""


def _components(ffi: Any, n_comps: int, comps_at: int, osts_at: int, cnames: tuple[str, ...]) -> list[dict]:
    """A Lustre record's components (`n_comps` of them at address `comps_at`): counters, pool name and the OST ids
    of each (the record's OST list, at `osts_at`, holds every component's ids in turn, as many as its stripe
    count). Each component's counters and pool name are read in one unpack of its memory; the pool name ends at
    its first NUL, as C reads it."""
    if n_comps <= 0:
        return []
    size, layout, char_p, int64_p = _component_layout(ffi)
    raw = ffi.buffer(ffi.cast(char_p, comps_at), size * n_comps)
    ost_ids = ffi.cast(int64_p, osts_at)
    count_at = cnames.index("LUSTRE_COMP_STRIPE_COUNT")
    comps, at = [], 0
    for i in range(n_comps):
        *counters, pool = layout.unpack_from(raw, i * size)
        n = int(counters[count_at])
        if not 0 <= n <= MAX_STRIPES:
            raise _Unlaid(n)
        comps.append({"counters": dict(zip(cnames, counters)), "pool_name": _pool_name(pool),
                      "ost_ids": ffi.unpack(ost_ids + at, n) if at else ffi.unpack(ost_ids, n)})
        at += n
    return comps


def _mount_of(path: str, mounts: list[tuple[str, str]]) -> tuple[str | None, str | None]:
    """The mount point and file-system type of the longest mount `path` lies under, (None, None) under none."""
    best: tuple[str | None, str | None] = (None, None)
    blen = -1
    for mnt, fstype in mounts:
        m = mnt.rstrip("/") or "/"
        if (path == m or path.startswith(m + "/") or m == "/") and len(m) > blen:
            best, blen = (mnt, fstype), len(m)
    return best


def open_log(backend: Any, path: str) -> Any:
    """`backend.log_open(path)` for a name of any bytes. PyDarshan hands the library the name encoded as UTF-8,
    which a name that is not UTF-8 cannot be: such a log is opened here and named to the library as
    /proc/self/fd/N, the same file (the library opens its own descriptor, so this one is closed at once)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            return backend.log_open(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
    return backend.log_open(path)


def _name_records(backend: Any, log: Any) -> dict[int, str]:
    """The log's record names by record id, as PyDarshan's `log_get_name_records` makes them (each name decoded
    as UTF-8, and freed), from the library's array of name records unpacked in one call instead of indexed
    twice per name: a log of thousands of files names each of them."""
    ffi, lib = backend.ffi, backend.libdutil
    recs, cnt = ffi.new("struct darshan_name_record **"), ffi.new("int *")
    lib.darshan_log_get_name_records(log["handle"], recs, cnt)
    string, free = ffi.string, lib.darshan_free
    names: dict[int, str] = {}
    for rec in ffi.unpack(recs[0], cnt[0]) if cnt[0] > 0 else ():
        name = rec.name
        names[rec.id] = string(name).decode("utf-8")
        free(name)
    free(recs[0])
    return names


def _mounts(backend: Any, log: Any) -> list[tuple[str, str]]:
    """The log's mounts as (mount point, file-system type), as PyDarshan's `log_get_mounts` makes them, from the
    library's array unpacked in one call."""
    ffi, lib = backend.ffi, backend.libdutil
    mnts, cnt = ffi.new("struct darshan_mnt_info **"), ffi.new("int *")
    lib.darshan_log_get_mounts(log["handle"], mnts, cnt)
    string = ffi.string
    out = [(string(m.mnt_path).decode("utf-8"), string(m.mnt_type).decode("utf-8"))
           for m in (ffi.unpack(mnts[0], cnt[0]) if cnt[0] > 0 else ())]
    lib.darshan_free(mnts[0])
    return out


def _read(path: str, backend: Any, complaints: Any) -> LogSummary:
    """Read the log region by region, stopping at the first complaint of the C library (`complaints()` returns
    what it has written to fd 2 so far). The handle is closed only after a clean read: once the library has
    failed on a region it has freed part of its state, and closing then aborts the process."""
    log = open_log(backend, path)
    if not log or log.get("handle") is None or backend.ffi.NULL == log["handle"]:
        raise _LogError("the Darshan library could not open this log (truncated, corrupt or of an unknown version)")

    def step(fn: Any, *args: Any) -> Any:
        try:
            out = fn(*args)
        except (_TooLarge, MemoryError):      # what the log costs to read, not a fault of its bytes
            raise
        except Exception as e:
            said = complaints()
            raise _LogError("truncated or corrupt Darshan log: " + ("; ".join(said) if said else
                                                                   f"{type(e).__name__}: {e}")) from None
        said = complaints()
        if said:
            raise _LogError("truncated or corrupt Darshan log: " + "; ".join(said))
        return out

    try:
        job, job_notes = checked_job(step(backend.log_get_job, log))
    except ImpossibleJob as e:
        backend.log_close(log)
        raise _LogError(str(e)) from None
    exe = step(backend.log_get_exe, log) or ""
    mounts = step(_mounts, backend, log)
    names = step(_name_records, backend, log)
    modinfo = step(backend.log_get_modules, log)
    modules = tuple(modinfo.keys())
    recs: dict[str, list[dict]] = {}
    dropped: list[Dropped] = []
    layouts, n_lustre = None, 0
    for mod in READ_MODULES:
        if mod == "LUSTRE" and mod in modinfo:       # the layouts are all the analysis takes of its records
            layouts, n_lustre = step(_lustre_layouts, backend, log, MAX_RECORDS - sum(map(len, recs.values())),
                                     dropped)
        elif mod in modinfo:
            recs[mod] = step(_records, backend, log, mod, dropped,
                              MAX_RECORDS - n_lustre - sum(map(len, recs.values())))
    heat, timed = _timelines(step, backend, log, modinfo, names, float(job.get("run_time") or 0.0))
    done = set(recs) | timed | ({"LUSTRE"} if layouts is not None else set())
    # the regions lie in the file in module order, so a log cut short loses the end of its last region: read
    # that one too where the analysis does not (DXT traces, ...), or a cut log would pass as whole
    last = max(modinfo, key=lambda m: modinfo[m]["idx"], default=None)
    if last is not None and last not in done:
        step(_drain, backend, log, modinfo[last]["idx"])
    partial_mods = tuple(k for k, m in modinfo.items() if m.get("partial_flag"))
    backend.log_close(log)
    s = _derive(path, job, exe, mounts, names, modules, recs, bool(partial_mods), partial_mods, dropped, layouts)
    if job_notes:
        s = replace(s, notes=(*job_notes, *s.notes))
    return replace(s, heatmaps=heat) if heat else s


def _heatmaps(backend: Any, log: Any, idx: int, names: dict) -> tuple[Heatmap, ...]:
    """The HEATMAP module's records summed per interface: bytes read and written per time bin over all ranks, and
    the ranks active in each bin. Records binned at another width are put on the widest width's grid. The sums
    run column by column over all records at the end (C-level sums), not record by record."""
    ffi, lib = backend.ffi, backend.libdutil
    ctype = ffi.typeof(backend._structdefs["HEATMAP"])     # parsed once, not per record
    rows: dict[str, list] = {}
    buf = ffi.new("void **")
    while (got := lib.darshan_log_get_record(log["handle"], idx, buf)) >= 1:
        rec = ffi.cast(ctype, buf)[0]
        n, width = int(rec.nbins), float(rec.bin_width_seconds)
        if 0 < n <= MAX_HEATMAP_BINS and 0 < width < math.inf:
            w, r = ffi.unpack(rec.write_bins, n), ffi.unpack(rec.read_bins, n)
            if min(w) < 0 or min(r) < 0:          # no bin can hold fewer than 0 bytes
                w, r = [max(0, v) for v in w], [max(0, v) for v in r]
            api = names.get(rec.base_rec.id, "heatmap:?").split(":", 1)[-1]
            rows.setdefault(api, []).append((width, r, w))
        lib.darshan_free(buf[0])
        buf[0] = ffi.NULL
    if got < 0:                  # a region cut short: the log is not whole (as `_drain` finds for other modules)
        raise _LogError(f"the Darshan library failed to read module {idx}'s records")
    return tuple(_heatmap(api, rs) for api, rs in sorted(rows.items()))


DXT_BINS = 100                  # a DXT time line has this many bins over the run
MAX_DXT_SEGMENTS = 2_000_000    # segments summed at most; the rest of the trace is read and dropped


def _dxt(backend: Any, log: Any, idx: int, api: str, run_time: float) -> Heatmap | None:
    """A DXT trace's segments as a time line of DXT_BINS bins over the run: bytes read and written by the bin each
    segment started in, and the ranks that read and wrote in each bin. Segments (offset, length, start, end: int64,
    int64, double, double; a record's writes first, then its reads) are unpacked from the record's memory in one
    call per record, length and start only."""
    ffi, lib = backend.ffi, backend.libdutil
    ctype = ffi.typeof(backend._structdefs["DXT_POSIX"])
    head = ffi.sizeof("struct dxt_file_record")
    seg = struct.Struct("=8xqd8x")
    width = max(run_time, 1.0) / DXT_BINS
    rb, wb = [0] * DXT_BINS, [0] * DXT_BINS
    readers: list[set] = [set() for _ in range(DXT_BINS)]
    writers: list[set] = [set() for _ in range(DXT_BINS)]
    ranks: set[int] = set()
    budget = MAX_DXT_SEGMENTS
    buf = ffi.new("void **")
    while (got := lib.darshan_log_get_record(log["handle"], idx, buf)) >= 1:
        rec = ffi.cast(ctype, buf)[0]
        rank, nw, nr = int(rec.base_rec.rank), int(rec.write_count), int(rec.read_count)
        if 0 < nw + nr <= budget:
            budget -= nw + nr
            ranks.add(rank)
            raw = memoryview(ffi.buffer(ffi.cast("char *", buf[0]) + head, seg.size * (nw + nr)))
            _dxt_bins(seg.iter_unpack(raw[:seg.size * nw]), width, rank, wb, writers)
            _dxt_bins(seg.iter_unpack(raw[seg.size * nw:]), width, rank, rb, readers)
        lib.darshan_free(buf[0])
        buf[0] = ffi.NULL
    if got < 0:
        raise _LogError(f"the Darshan library failed to read module {idx}'s records")
    if not ranks:
        return None
    return Heatmap(api=api, bin_width=width, read_bytes=tuple(rb), write_bytes=tuple(wb),
                   ranks_reading=tuple(map(len, readers)), ranks_writing=tuple(map(len, writers)),
                   ranks=len(ranks), source="DXT")


def _dxt_bins(segments: Any, width: float, rank: int, moved: list[int], active: list[set]) -> None:
    """Add one rank's segments (length, start) of one direction to the time line: the bytes to the bin each started
    in (bins of `width` seconds; a start before 0 or NaN in the first, past the run in the last), the rank to its
    active ranks."""
    last, prev = DXT_BINS - 1, -1
    for length, start in segments:
        b = int(start / width) if start == start else 0
        b = 0 if b < 0 else last if b > last else b
        if length > 0:
            moved[b] += length
        if b != prev:           # a rank's segments mostly follow each other in time: the same bin, its rank added
            active[b].add(rank)
            prev = b


def _heatmap(api: str, rows: list[tuple[float, list, list]]) -> Heatmap:
    """One interface's heatmap records summed bin by bin (on the widest bin width's grid where they differ)."""
    width = max(wd for wd, _, _ in rows)
    n = max(math.ceil(len(r) * wd / width) for wd, r, _ in rows)
    if any(wd != width or len(r) != n for wd, r, _ in rows):
        rows = [(width, _onto(r, wd, width, n), _onto(w, wd, width, n)) for wd, r, w in rows]
    rcols, wcols = list(zip(*(r for _, r, _ in rows))), list(zip(*(w for _, _, w in rows)))
    return Heatmap(api=api, bin_width=width, read_bytes=tuple(map(sum, rcols)), write_bytes=tuple(map(sum, wcols)),
                   ranks_reading=tuple(len(c) - c.count(0) for c in rcols),
                   ranks_writing=tuple(len(c) - c.count(0) for c in wcols), ranks=len(rows))


def _onto(vals: list, wd: float, width: float, n: int) -> list:
    """Bins of `wd` seconds summed onto `n` bins of `width` seconds."""
    out = [0] * n
    for i, v in enumerate(vals):
        if v:
            out[min(n - 1, int(i * wd / width))] += v
    return out


def _timelines(step: Any, backend: Any, log: Any, modinfo: dict, names: dict,
               run_time: float) -> tuple[tuple[Heatmap, ...], set[str]]:
    """The time lines of the HEATMAP records, else of the DXT traces (the heatmap covers every rank, a trace may
    not), read through `step`; and the modules read for them."""
    heat: tuple[Heatmap, ...] = ()
    done: set[str] = set()
    if "HEATMAP" in modinfo and "HEATMAP" in backend._structdefs:
        heat = step(_heatmaps, backend, log, modinfo["HEATMAP"]["idx"], names)
        done.add("HEATMAP")
    for mod, api in (("DXT_POSIX", "POSIX"), ("DXT_MPIIO", "MPIIO")):
        if not heat and mod in modinfo and mod in backend._structdefs:
            line = step(_dxt, backend, log, modinfo[mod]["idx"], api, run_time)
            heat += (line,) if line else ()
            done.add(mod)
    return heat, done


def _drain(backend: Any, log: Any, idx: int) -> int:
    """Read every record of module `idx` through the C library and drop it; returns how many there were."""
    n = 0
    while True:
        buf = backend.ffi.new("void **")
        r = backend.libdutil.darshan_log_get_record(log["handle"], idx, buf)
        if r < 1:
            if r < 0:
                raise _LogError(f"the Darshan library failed to read module {idx}'s records")
            return n
        backend.libdutil.darshan_free(buf[0])
        n += 1


def _log_notes(exe: str, nprocs: int, modules: tuple[str, ...], partial: bool,
               partial_modules: tuple[str, ...]) -> list[str]:
    """What the reader of the summary should know about the log itself."""
    notes: list[str] = []
    if not exe:
        notes.append("the log records no executable name")
    if partial:
        notes.append("Darshan ran out of record memory (partial log"
                     + (f": {', '.join(partial_modules)}" if partial_modules else "") + "): totals are lower bounds")
    unread = [m for m in modules if m in UNREAD_IO_MODULES]
    if unread:
        notes.append(f"I/O through {', '.join(unread)} is in the log but not analysed here")
    if nprocs == 1:
        notes.append("a single process: no file is shared")
    return notes


def _files(recs: dict[str, list[dict]], names: dict, mounts: list[tuple[str, str]], nprocs: int,
           layouts: dict) -> list[FileSummary]:
    """One FileSummary per file, the most bytes first."""
    mpiio = _mpiio_files(recs.get("MPI-IO", []), nprocs)
    by_file: dict[int, list[dict]] = {}
    for rec in recs.get("POSIX", []):
        by_file.setdefault(rec["id"], []).append(rec)
    files: list[FileSummary] = []
    mount_cache: dict[str, tuple[str | None, str | None]] = {}
    counted: dict[int, tuple] = {}      # what `_posix_one` makes of each counters dict (records share them)
    # a file MPI-IO moved data to is a file even where its POSIX records are missing (a partial log drops them)
    for fid in mpiio:
        by_file.setdefault(fid, [])
    for fid, group in by_file.items():
        fname = names.get(fid)
        if fname is None:
            fname = f"<record {fid}>"
        # the mount of a file's directory, looked up once per directory (the name up to its last slash is all
        # os.path.dirname reads of it)
        where = mount_cache.get(d := fname[:fname.rfind("/") + 1])
        if where is None:
            where = mount_cache[d] = _mount_of(os.path.dirname(fname) + "/x", mounts)
        if len(group) == 1 and fid not in mpiio:
            files.append(_file_one(fid, fname, group[0], nprocs, *where, layouts.get(fid), counted))
        else:
            files.append(_file(fid, fname, group, nprocs, *where, mpiio.get(fid), layouts.get(fid), counted))
    files.sort(key=lambda f: -f.bytes)          # the most bytes first (stable: ties keep the records' order)
    return files


_SEQ = ("CONSEC_READS", "CONSEC_WRITES", "SEQ_READS", "SEQ_WRITES")
_POSIX_COUNTS = operator.itemgetter(*(f"POSIX_SIZE_{d}_{b}" for d in ("READ", "WRITE") for b in SIZE_BINS),
                                    *(f"POSIX_{k}" for k in _SEQ))


def _by_counters(records: list[dict], skip: set[int] | frozenset = frozenset()) -> list[list]:
    """[counters dict, records holding it] of the records (those of a file id in `skip` left out), in the order
    each dict is first met: records with equal counters share one dict (`_records`), whose integer counters
    are then picked once and multiplied, not picked and added once per record."""
    shared: dict[int, list] = {}
    for rec in records:
        if rec["id"] not in skip:
            c = rec["counters"]
            if (seen := shared.get(id(c))) is None:
                shared[id(c)] = [c, 1]
            else:
                seen[1] += 1
    return list(shared.values())


def _posix_counts(recs: dict[str, list[dict]], special_ids: set[int], grouped: list[list] | None = None
                  ) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """The POSIX access-size histograms (read, write) and sequential-access counts, special files left out
    (summed column by column: the counters are integers, whose sums do not depend on the order). `grouped`: the
    POSIX records' `_by_counters` when made already (used only where no file is special)."""
    sums = [0] * (2 * len(SIZE_BINS) + len(_SEQ))
    if grouped is None or special_ids:
        grouped = _by_counters(recs.get("POSIX", []), special_ids)
    for c, held in grouped:
        sums = [a + b * held for a, b in zip(sums, _POSIX_COUNTS(c))]
    n = len(SIZE_BINS)
    return (dict(zip(SIZE_BINS, sums[:n])), dict(zip(SIZE_BINS, sums[n:2 * n])),
            dict(zip(_SEQ, sums[2 * n:])))


_REQUEST_COUNTS = operator.attrgetter("ops", "small", "zero", "exactly_1mib", "in_bins_below_1mib", "refined_out")


def _total(reqs: Any) -> Requests:
    """Requests summed as `sum(reqs, Requests())` sums them (counts as ints, the time added in turn from 0.0),
    without a `Requests` made at each step."""
    reqs = list(reqs)
    ops, small, zero, one, below, out = ([sum(col) for col in zip(*map(_REQUEST_COUNTS, reqs))]
                                         if reqs else [0] * 6)
    return _new_requests(ops, small, zero, one, sum((q.time for q in reqs), 0.0), below, out)


def _mpiio_ops(recs: dict[str, list[dict]]) -> dict[str, int]:
    """MPI-IO operations by kind: independent reads and writes, collective ones (split counted as collective),
    non-blocking ones."""
    m_ops = {"ir": 0, "iw": 0, "cr": 0, "cw": 0, "nb": 0}
    for rec in recs.get("MPI-IO", []):
        c = rec["counters"]
        m_ops["ir"] += c["MPIIO_INDEP_READS"]
        m_ops["iw"] += c["MPIIO_INDEP_WRITES"]
        m_ops["cr"] += c["MPIIO_COLL_READS"] + c["MPIIO_SPLIT_READS"]
        m_ops["cw"] += c["MPIIO_COLL_WRITES"] + c["MPIIO_SPLIT_WRITES"]
        m_ops["nb"] += c["MPIIO_NB_READS"] + c["MPIIO_NB_WRITES"]
    return m_ops


def _derive(path: str, job: dict, exe: str, mounts: list[tuple[str, str]], names: dict, modules: tuple[str, ...],
            recs: dict[str, list[dict]], partial: bool, partial_modules: tuple[str, ...] = (),
            dropped: list[Dropped] | tuple = (), layouts: dict[int, LustreLayout] | None = None) -> LogSummary:
    """The LogSummary of one log's records (plain dicts, as `_records` returns them; `dropped`: the counter values
    `_records` left out; `layouts`: the Lustre layouts when read already, else made of the LUSTRE records)."""
    nprocs = max(1, int(job["nprocs"]))
    exe = exe.strip()
    notes = _log_notes(exe, nprocs, modules, partial, partial_modules)
    if dropped:
        notes.append(dropped_note(list(dropped), names))
    layouts = _layouts(recs.get("LUSTRE", [])) if layouts is None else layouts
    files = _files(recs, names, mounts, nprocs, layouts)
    special_ids = {f.id for f in files if f.special}
    grouped = _by_counters(recs.get("POSIX", []))
    read_sizes, write_sizes, seq = _posix_counts(recs, special_ids, grouped)
    regular = [f for f in files if not f.special]
    reads = _total([f.read_req for f in regular])
    writes = _total([f.write_req for f in regular])
    stdio = _stdio_streams(recs.get("STDIO", []), names, nprocs)
    apis = _api_totals(modules, recs, grouped)
    osts = _ost_loads(files)
    all_ids = [o for lay in layouts.values() for o in lay.osts]
    m_ops = _mpiio_ops(recs)
    h5_coll: bool | None = None
    for rec in recs.get("H5D", []):
        h5_coll = bool(h5_coll) or rec["counters"]["H5D_USE_MPIIO_COLLECTIVE"] > 0
    meta_j = job.get("metadata") or {}
    start = job.get("start_time_sec")
    return LogSummary(
        path=path, exe=exe or "(not recorded)", jobid=job.get("jobid"), uid=job.get("uid"), nprocs=nprocs,
        run_time=float(job.get("run_time") or 0.0), start_time=int(start) if start is not None else None,
        darshan_version=str(meta_j.get("lib_ver", "")), log_version=str(job.get("log_ver", "")),
        modules=modules, partial_modules=partial_modules, mounts=tuple(mounts), apis=apis, files=tuple(files),
        read_sizes=read_sizes, write_sizes=write_sizes, reads=reads, writes=writes,
        consec_reads=seq["CONSEC_READS"], consec_writes=seq["CONSEC_WRITES"], seq_reads=seq["SEQ_READS"],
        seq_writes=seq["SEQ_WRITES"], meta=_meta_time(recs, names, special_ids, nprocs),
        mpiio_indep_reads=m_ops["ir"], mpiio_indep_writes=m_ops["iw"], mpiio_coll_reads=m_ops["cr"],
        mpiio_coll_writes=m_ops["cw"], mpiio_nb_ops=m_ops["nb"], h5d_collective=h5_coll, stdio_streams=stdio,
        osts=osts, osts_seen=len(set(all_ids)), fs_ost_count_at_least=(max(all_ids) + 1) if all_ids else None,
        partial=partial, notes=tuple(notes))


_SPECIAL_NAME = re.compile(r"(fifo|pipe|socket|sock)(?=$|[_.:\-\[0-9])", re.IGNORECASE)
#: every character that the first letter of _SPECIAL_NAME's words (f, p, s) matches, case ignored as `re` ignores it
#: (U+017F, the long s, matches s): a name starting with none of them is no special file, without the regex
_SPECIAL_FIRST = "fpsFPS\u017f"


def special_kind(path: str, fs_type: str | None = None) -> str:
    """"fifo", "pipe" or "socket" when a record's name (or its mount's type) says it is not a file-system file."""
    if fs_type in ("pipefs", "sockfs"):
        return "pipe" if fs_type == "pipefs" else "socket"
    base = path[path.rfind("/") + 1:]        # the last part of the name (all of a name without a slash)
    if base[:1] not in _SPECIAL_FIRST:       # most names: "" falls through (and matches nothing below)
        return ""
    if base.startswith("pipe:["):
        return "pipe"
    if base.startswith("socket:["):
        return "socket"
    m = _SPECIAL_NAME.match(base)
    if not m:
        return ""
    word = m.group(1).lower()
    return "socket" if word.startswith("sock") else "fifo"


def _layouts(records: list[dict]) -> dict[int, LustreLayout]:
    """Lustre layouts by record id (the same for every rank's record of one file)."""
    layouts: dict[int, LustreLayout] = {}
    for rec in records:
        lay = _layout_of(rec.get("components") or [])
        if lay is not None:
            layouts[rec["id"]] = lay
    return layouts


def _layout_of(comps: list[dict]) -> LustreLayout | None:
    """The layout of one Lustre record's components (None: a record without components)."""
    if len(comps) == 1:          # a plain file's layout (most of them): what the loop below makes of it
        comp = comps[0]
        c = comp["counters"]
        return _new_layout(int(c.get("LUSTRE_COMP_STRIPE_SIZE", 0)), int(c.get("LUSTRE_COMP_STRIPE_COUNT", 0)),
                           tuple(dict.fromkeys(o for o in map(int, comp.get("ost_ids", [])) if o >= 0)), 1,
                           comp.get("pool_name") or "")
    osts: list[int] = []
    pool = ""
    # v1 records arrive as one component; v2 (PFL) as several, of which only instantiated ones have
    # objects. The layout that carries the file's data is the last instantiated component.
    chosen = None
    for comp in comps:
        c = comp["counters"]
        ids = [o for o in map(int, comp.get("ost_ids", [])) if o >= 0]
        osts.extend(ids)
        flags = int(c.get("LUSTRE_COMP_FLAGS", -1))
        instantiated = bool(ids) or (flags > 0 and flags & LCME_FL_INIT)
        if instantiated or chosen is None:
            chosen = c
            pool = comp.get("pool_name") or pool
    if chosen is None:
        return None
    return _new_layout(int(chosen.get("LUSTRE_COMP_STRIPE_SIZE", 0)), int(chosen.get("LUSTRE_COMP_STRIPE_COUNT", 0)),
                       tuple(dict.fromkeys(osts)), len(comps), pool)


def _lustre_layouts(backend: Any, log: Any, limit: int = MAX_RECORDS,
                    dropped: list | None = None) -> tuple[dict[int, LustreLayout], int]:
    """`_layouts(_records(backend, log, "LUSTRE"))` and the number of records read, made straight from each
    record's memory: a record of one component (a plain file: most of them) becomes its layout without the
    component's counters being made into a dict first (files whose component and OST list are the same share
    one layout); a record of several goes through `_components`. A record with a stripe count outside
    0-`MAX_STRIPES` gets no layout (its OST ids are not read) and is listed in `dropped`. More than `limit`
    records: _TooLarge."""
    dropped = [] if dropped is None else dropped
    ffi, lib = backend.ffi, backend.libdutil
    idx = backend.log_get_modules(log)["LUSTRE"]["idx"]
    _, cnames, _, size, head, *_ = _reader(backend, "LUSTRE")
    csize, comp, char_p, _ = _component_layout(ffi)
    ssize_at, count_at = cnames.index("LUSTRE_COMP_STRIPE_SIZE"), cnames.index("LUSTRE_COMP_STRIPE_COUNT")
    layouts: dict[int, LustreLayout] = {}
    alike: dict[tuple, LustreLayout] = {}
    made = alike.get
    n = 0
    buf = ffi.new("void **")
    handle, get_record, free, buffer, unpack = (log["handle"], lib.darshan_log_get_record, lib.darshan_free,
                                                ffi.buffer, head.unpack_from)
    cast, unbytes = ffi.cast, ffi.unpack
    stripes = struct.Struct(f"={ffi.offsetof('struct darshan_lustre_component', 'counters') + 8 * count_at}xq"
                            ).unpack_from
    while get_record(handle, idx, buf) >= 1:
        if n >= limit:
            raise _TooLarge(f"the log holds more than {MAX_RECORDS:,} records (of LUSTRE and the modules before "
                            f"it): more than one log may take to read (about 4 KB of memory each); refused")
        n += 1
        rid, rank, n_comps, comps_at, osts_at = unpack(buffer(buf[0], size))
        if n_comps == 1:
            # the component's bytes, and its OST list's (as many ids as its stripe count): files striped alike
            # (equal bytes) share their (frozen) layout, made of the first one's values
            raw = unbytes(cast(char_p, comps_at), csize)
            n_ids = stripes(raw)[0]
            if not 0 <= n_ids <= MAX_STRIPES:
                _unlaid(dropped, rid, rank, n_ids)
                lay = None
            elif (lay := made(key := (raw, unbytes(cast(char_p, osts_at), 8 * n_ids)))) is None:
                values = comp.unpack_from(raw)
                ids = struct.unpack(f"={n_ids}q", key[1])        # the OST list's bytes read above
                lay = alike[key] = _new_layout(values[ssize_at], values[count_at],
                                               tuple(dict.fromkeys(o for o in ids if o >= 0)), 1,
                                               _pool_name(values[-1]))
        else:
            try:
                lay = _layout_of(_components(ffi, n_comps, comps_at, osts_at, cnames))
            except _Unlaid as e:
                _unlaid(dropped, rid, rank, e.args[0])
                lay = None
        if lay is not None:
            layouts[rid] = lay
        free(buf[0])
        buf[0] = ffi.NULL
    return layouts, n


def _unlaid(dropped: list, rid: int, rank: int, count: int) -> None:
    """A Lustre record left without a layout for its stripe count `count`, listed in `dropped`."""
    dropped.append(Dropped("LUSTRE", "LUSTRE_COMP_STRIPE_COUNT", float(count), rank, rid))


def _largest(hist: list[int], n: int, total: int) -> int:
    """The most bytes `n` requests of a size histogram can carry: the n largest, each at its bin's upper edge."""
    out = 0
    for b, count in zip(reversed(SIZE_BINS), reversed(hist)):
        take = min(n, count)
        if take <= 0:
            continue
        upper = BIN_UPPER[b]
        out += total if upper is None else take * upper
        n -= take
        if n <= 0 or out >= total:
            break
    return min(out, total)


def _mpiio_names(op: str) -> tuple[str, str, str, str, str, Any]:
    """The counters of one direction of an MPI-IO record: collective, split, independent and nonblocking calls,
    bytes, and a getter of the aggregate size histogram."""
    D, B, H = ("READS", "MPIIO_BYTES_READ", "READ") if op == "read" else ("WRITES", "MPIIO_BYTES_WRITTEN", "WRITE")
    return (f"MPIIO_COLL_{D}", f"MPIIO_SPLIT_{D}", f"MPIIO_INDEP_{D}", f"MPIIO_NB_{D}", B,
            operator.itemgetter(*(f"MPIIO_SIZE_{H}_AGG_{b}" for b in SIZE_BINS)))


_MPIIO_NAMES = {op: _mpiio_names(op) for op in ("read", "write")}


def _mpiio_direction(c: dict, t: float, op: str) -> MpiioDirection:
    coll_k, split_k, indep_k, nb_k, bytes_k, hist_of = _MPIIO_NAMES[op]
    coll = int(c[coll_k] + c[split_k])
    ind = int(c[indep_k] + c[nb_k])
    total = int(c[bytes_k])
    if ind == 0:
        lo = hi = total
    elif coll == 0:
        lo = hi = 0
    else:
        hist = list(map(int, hist_of(c)))
        hi = _largest(hist, coll, total)
        lo = max(0, total - _largest(hist, ind, total))
    return MpiioDirection(bytes=total, collective_ops=coll, independent_ops=ind, collective_bytes_min=lo,
                          collective_bytes_max=hi, time=t)


def _mpiio_files(records: list[dict], nprocs: int) -> dict[int, tuple]:
    """Per file id: (read MpiioDirection, write MpiioDirection, RankSpread of the MPI-IO layer or None)."""
    groups: dict[int, list[dict]] = {}
    for rec in records:
        groups.setdefault(rec["id"], []).append(rec)
    out: dict[int, tuple] = {}
    for fid, group in groups.items():
        rd = sum((_mpiio_direction(r["counters"], r["fcounters"]["MPIIO_F_READ_TIME"], "read") for r in group),
                 MpiioDirection())
        wr = sum((_mpiio_direction(r["counters"], r["fcounters"]["MPIIO_F_WRITE_TIME"], "write") for r in group),
                 MpiioDirection())
        spread = _spread("MPIIO", group, nprocs, rd.bytes + wr.bytes) if nprocs > 1 else None
        meta = sum(r["fcounters"]["MPIIO_F_META_TIME"] for r in group)
        out[fid] = (rd, wr, spread, {r["rank"] for r in group}, meta)
    return out


def _spread(prefix: str, group: list[dict], nprocs: int, total_bytes: int) -> RankSpread | None:
    """Slowest and fastest rank with their bytes: from a shared record's counters, or compared across rank records."""
    layer = "POSIX" if prefix == "POSIX" else "MPI-IO"
    if len(group) == 1 and group[0]["rank"] == -1:
        c, fc = group[0]["counters"], group[0]["fcounters"]
        var = fc.get(f"{prefix}_F_VARIANCE_RANK_BYTES")
        return RankSpread(layer=layer, slowest_rank=int(c[f"{prefix}_SLOWEST_RANK"]),
                          slowest_time=float(fc[f"{prefix}_F_SLOWEST_RANK_TIME"]),
                          slowest_bytes=int(c[f"{prefix}_SLOWEST_RANK_BYTES"]),
                          fastest_rank=int(c[f"{prefix}_FASTEST_RANK"]),
                          fastest_time=float(fc[f"{prefix}_F_FASTEST_RANK_TIME"]),
                          fastest_bytes=int(c[f"{prefix}_FASTEST_RANK_BYTES"]),
                          mean_bytes=total_bytes / nprocs,
                          bytes_stddev=math.sqrt(var) if var and var > 0 else None)
    ranks = {r["rank"] for r in group}
    if len(ranks) < 2 or -1 in ranks:
        return None
    per: dict[int, list[float]] = {}
    for r in group:
        c, fc = r["counters"], r["fcounters"]
        a = per.setdefault(r["rank"], [0.0, 0])
        a[0] += fc[f"{prefix}_F_READ_TIME"] + fc[f"{prefix}_F_WRITE_TIME"] + fc[f"{prefix}_F_META_TIME"]
        a[1] += c[f"{prefix}_BYTES_READ"] + c[f"{prefix}_BYTES_WRITTEN"]
    slow = max(per, key=lambda k: per[k][0])
    fast = min(per, key=lambda k: per[k][0])
    # among the ranks that opened the file: ranks without a record did not share it
    values = [v[1] for v in per.values()]
    mean = sum(values) / len(values)
    import statistics                  # here, not at the top: the reader's start-up is on every diagnosis's path
    return RankSpread(layer=layer, slowest_rank=slow, slowest_time=per[slow][0], slowest_bytes=int(per[slow][1]),
                      fastest_rank=fast, fastest_time=per[fast][0], fastest_bytes=int(per[fast][1]),
                      mean_bytes=mean, bytes_stddev=statistics.pstdev(values) if len(values) > 1 else 0.0)


#: the counters a record's requests are reckoned from: ops, bytes and the histogram's bins 0_100 .. 100K_1M of
#: reads, then of writes, then the four common access sizes (reads and writes together) and their counts
_REQUEST_COUNTERS = operator.itemgetter(
    *(k for d, moved in (("READ", "READ"), ("WRITE", "WRITTEN"))
      for k in (f"POSIX_{d}S", f"POSIX_BYTES_{moved}", *(f"POSIX_SIZE_{d}_{b}" for b in SIZE_BINS[:5]))),
    *(f"POSIX_ACCESS{i}_{w}" for i in range(1, 5) for w in ("ACCESS", "COUNT")))
_Counts = tuple[int, int, int, int, int, int]


def _request_counts(c: dict) -> tuple[_Counts, _Counts]:
    """One POSIX record's requests (see `Requests`), reads and writes: (ops, small, zero, exactly_1mib,
    in_bins_below_1mib, refined_out) each."""
    return _counts_of(_REQUEST_COUNTERS(c))


@functools.lru_cache(maxsize=4096)
def _counts_of(values: tuple) -> tuple[_Counts, _Counts]:
    """`_request_counts` of a record's request counters (`_REQUEST_COUNTERS`), remembered: the ranks of a job
    mostly make the same requests, so many records hold the same values."""
    v = list(map(int, values))
    zeros = ones = 0            # the common sizes' counts of 0 bytes and of exactly 1 MiB, both directions
    for s, n in zip(v[14::2], v[15::2]):
        if n > 0 and s == 0:
            zeros += n
        elif n > 0 and s == MIB:
            ones += n
    return _direction(v[0:7], v[7:14], zeros, ones), _direction(v[7:14], v[0:7], zeros, ones)


def _direction(this: list[int], other: list[int], zeros: int, ones: int) -> _Counts:
    """One direction's requests from its (ops, bytes, bins 0_100 .. 100K_1M), the other direction's, and the
    common sizes' counts of 0 bytes and of exactly 1 MiB."""
    ops, moved, b0, b1, b2, b3, b4 = this
    # every request that moved data moved at least one byte, so at most `moved` of them did: the other
    # ops - moved returned 0 bytes (all of them when nothing moved), whatever the common sizes list
    empty = max(0, min(b0, ops - moved))
    zero_max = max(min(zeros, b0), empty)
    zero_min = max(0, min(b0, zeros - other[2]), empty)
    one_max, one_min = min(ones, b4), max(0, min(b4, ones - other[6]))
    below = b0 + b1 + b2 + b3 + b4
    small = min(max(0, below - zero_max - one_max), moved)
    return ops, small, zero_min, one_min, below, below - small


def _requests(c: dict, op: str, t: float) -> Requests:
    """One POSIX record's requests in one direction (see `Requests`)."""
    return _as_requests(_request_counts(c)[op == "write"], t)


_new_requests = positional(Requests)  # ops, small, zero, exactly_1mib, time, in_bins_below_1mib, refined_out
_new_file = positional(FileSummary)
_new_layout = positional(LustreLayout)     # stripe_size, stripe_count, osts, components, pool


def _as_requests(counts: _Counts, t: float) -> Requests:
    ops, small, zero, one, below, out = counts
    return _new_requests(ops, small, zero, one, t, below, out)


def _requests_of(group: list[dict]) -> tuple[Requests, Requests]:
    """A file's POSIX records' requests, reads and writes, summed (counts as ints, the time record by record from
    0.0: what adding up each record's `Requests` gives)."""
    read, write = [0] * 6, [0] * 6
    rt = wt = 0.0
    for r in group:
        rc, wc = _request_counts(r["counters"])
        read, write = list(map(operator.add, read, rc)), list(map(operator.add, write, wc))
        fc = r["fcounters"]
        rt, wt = rt + fc["POSIX_F_READ_TIME"], wt + fc["POSIX_F_WRITE_TIME"]
    return _as_requests(read, rt), _as_requests(write, wt)


_FILE_COUNTS = operator.itemgetter("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN", "POSIX_READS", "POSIX_WRITES",
                                   "POSIX_FILE_NOT_ALIGNED", "POSIX_FILE_ALIGNMENT")
_FILE_TIMES = operator.itemgetter("POSIX_F_READ_TIME", "POSIX_F_WRITE_TIME", "POSIX_F_META_TIME")


def _file(fid: int, fname: str, group: list[dict], nprocs: int, mnt: str | None, fstype: str | None,
          mpiio: tuple | None, lustre: LustreLayout | None, counted: dict[int, tuple]) -> FileSummary:
    posix_ranks = {r["rank"] for r in group}
    ranks = posix_ranks | mpiio[3] if mpiio else posix_ranks
    reduced = -1 in ranks
    shared = nprocs > 1 and (reduced or len(ranks) > 1)
    (br, bw, reads, writes, not_aligned, alignment, read_time, write_time, meta_time, read_req, write_req, own,
     slowest) = _posix_one(group, counted) if len(group) == 1 else _posix_sums(group)
    # FileSummary's fields in order
    return _new_file(
        fid, fname, shared, nprocs if reduced else len(ranks), fstype, mnt, special_kind(fname, fstype), br, bw,
        reads, writes, read_time, write_time, meta_time, slowest, read_req, write_req,
        _spread("POSIX", group, nprocs, br + bw) if shared else None,
        mpiio[0] if mpiio else None, mpiio[1] if mpiio else None, mpiio[2] if mpiio and shared else None, lustre,
        next(iter(ranks)) if len(ranks) == 1 and not reduced else None,
        None if not group or -1 in posix_ranks else len(own), max(own.values(), default=0.0), not_aligned,
        alignment, mpiio[4] if mpiio else 0.0)


def _file_one(fid: int, fname: str, r: dict, nprocs: int, mnt: str | None, fstype: str | None,
              lustre: LustreLayout | None, counted: dict[int, tuple]) -> FileSummary:
    """`_file` of a file with one POSIX record and no MPI-IO record (most files: one a rank opened, or one record
    shared by all ranks), with the arithmetic of `_file` and `_posix_one` (each sum from 0, so a timer of -0.0
    becomes 0.0) but none of their sets, dicts and tuples: the file's ranks are the record's rank (or all of
    them), and its own time is the record's when that rank read or wrote."""
    rank, fc = r["rank"], r["fcounters"]
    br, bw, reads, writes, not_aligned, alignment, rc, wc = _record_counts(r["counters"], counted)
    rt, wt, mt = _FILE_TIMES(fc)
    w = min(wt, fc["POSIX_F_SLOWEST_RANK_TIME"]) if rank == -1 else wt
    own = 0.0 + rt + wt + mt if rank >= 0 and reads + writes > 0 else None
    shared = nprocs > 1 and rank == -1
    r_ops, r_small, r_zero, r_one, r_below, r_out = rc       # `_as_requests`, without a call per direction
    w_ops, w_small, w_zero, w_one, w_below, w_out = wc
    # FileSummary's fields in order
    return _new_file(
        fid, fname, shared, nprocs if rank == -1 else 1, fstype, mnt, special_kind(fname, fstype), br, bw, reads,
        writes, 0 + rt, 0 + wt, 0 + mt, max(0.0, 0.0 + w),
        _new_requests(r_ops, r_small, r_zero, r_one, 0.0 + rt, r_below, r_out),
        _new_requests(w_ops, w_small, w_zero, w_one, 0.0 + wt, w_below, w_out),
        _spread("POSIX", [r], nprocs, br + bw) if shared else None, None, None, None, lustre,
        None if rank == -1 else rank, None if rank == -1 else int(own is not None), 0.0 if own is None else own,
        not_aligned, alignment, 0.0)


def _posix_sums(group: list[dict]) -> tuple:
    """A file's POSIX records summed: bytes read and written, reads, writes, requests not aligned, the largest
    alignment, read, write and metadata time, the read and write Requests, each rank's read + write + metadata
    time (ranks with a record of their own that read or wrote), and the slowest rank's write time. Each record's
    counters are picked once, then summed column by column (in record order)."""
    counts = [_FILE_COUNTS(r["counters"]) for r in group]
    times = [_FILE_TIMES(r["fcounters"]) for r in group]
    br, bw, reads, writes, not_aligned, alignment = zip(*counts) if group else ((),) * 6
    read_time, write_time, meta_time = zip(*times) if group else ((),) * 3
    read_req, write_req = _requests_of(group)
    own: dict[int, float] = {}
    for r, cv, (rt, wt, mt) in zip(group, counts, times):
        if r["rank"] >= 0 and cv[2] + cv[3] > 0:
            own[r["rank"]] = own.get(r["rank"], 0.0) + rt + wt + mt
    return (sum(map(int, br)), sum(map(int, bw)), sum(map(int, reads)), sum(map(int, writes)),
            sum(map(int, not_aligned)), max(map(int, alignment), default=0), sum(read_time), sum(write_time),
            sum(meta_time), read_req, write_req, own, _slowest_write_time(group))


def _record_counts(c: dict, counted: dict[int, tuple]) -> tuple:
    """What one POSIX record's counters give (bytes read and written, reads, writes, requests not aligned, the
    alignment, and the read and write request counts), taken from `counted` (by the id of the counters dict, which
    records with equal counters share, and which the records keep alive meanwhile) where made before, else made
    and put there."""
    got = counted.get(id(c))
    if got is None:
        got = counted[id(c)] = (*map(int, _FILE_COUNTS(c)), *_request_counts(c))
    return got


def _posix_one(group: list[dict], counted: dict[int, tuple]) -> tuple:
    """`_posix_sums` of a file with one record (a file one rank opened, or one record shared by all ranks), with
    the same arithmetic: each sum starts from 0 (so a timer of -0.0 becomes 0.0, as a sum makes it); what the
    record's counters give comes from `_record_counts`."""
    r = group[0]
    fc, rank = r["fcounters"], r["rank"]
    br, bw, reads, writes, not_aligned, alignment, rc, wc = _record_counts(r["counters"], counted)
    rt, wt, mt = _FILE_TIMES(fc)
    own = {rank: 0.0 + rt + wt + mt} if rank >= 0 and reads + writes > 0 else {}
    w = min(wt, fc["POSIX_F_SLOWEST_RANK_TIME"]) if rank == -1 else wt
    return (br, bw, reads, writes, not_aligned, alignment, 0 + rt, 0 + wt, 0 + mt,
            _as_requests(rc, 0.0 + rt), _as_requests(wc, 0.0 + wt), own, max(0.0, 0.0 + w))


def _slowest_write_time(group: list[dict]) -> float:
    """The POSIX write time of a file's slowest rank: the largest of its ranks' write times; a record shared by
    all ranks holds their sum and the slowest rank's read + write + metadata time, the smaller of which bounds
    that rank's write time."""
    per: dict[int, float] = {}
    for r in group:
        fc = r["fcounters"]
        t = fc["POSIX_F_WRITE_TIME"]
        if r["rank"] == -1:
            t = min(t, fc["POSIX_F_SLOWEST_RANK_TIME"])
        per[r["rank"]] = per.get(r["rank"], 0.0) + t
    return max(0.0, max(per.values(), default=0.0))


def _is_stream(name: str) -> bool:
    return name in ("<STDIN>", "<STDOUT>", "<STDERR>")


def _meta_time(recs: dict[str, list[dict]], names: dict, special_ids: set[int], nprocs: int) -> MetaTime:
    """Metadata time per rank: a shared (rank -1) record's time divided among the job's processes."""
    own: dict[int, float] = {}
    shared = total = left = 0.0
    left_ids: set[int] = set()
    for mod, key in (("POSIX", "POSIX_F_META_TIME"), ("STDIO", "STDIO_F_META_TIME")):
        stdio = mod == "STDIO"
        for rec in recs.get(mod, []):
            t = float(rec["fcounters"][key])
            if rec["id"] in special_ids or (stdio and (_is_stream(name := names.get(rec["id"], ""))
                                                      or special_kind(name))):
                left += t
                if t > 0:
                    left_ids.add(rec["id"])
                continue
            total += t
            if rec["rank"] == -1:
                shared += t / nprocs
            else:
                own[rec["rank"]] = own.get(rec["rank"], 0.0) + t
    busiest = max(own, key=own.get) if own else None
    return MetaTime(rank_seconds=total, per_rank_max=shared + (own[busiest] if busiest is not None else 0.0),
                    per_rank_mean=total / nprocs, busiest_rank=busiest, left_out_rank_seconds=left,
                    left_out_files=len(left_ids))


def _stdio_streams(records: list[dict], names: dict, nprocs: int) -> tuple[dict, ...]:
    """STDIO use per file (terminal streams left out): bytes, calls and time per rank."""
    acc: dict[int, dict] = {}
    for rec in records:
        name = names.get(rec["id"], f"<record {rec['id']}>")
        if _is_stream(name):
            continue
        c, fc = rec["counters"], rec["fcounters"]
        a = acc.setdefault(rec["id"], {"file": name, "bytes": 0, "calls": 0, "flushes": 0, "rank_seconds": 0.0,
                                       "shared_seconds": 0.0, "own": {}})
        a["bytes"] += int(c["STDIO_BYTES_READ"] + c["STDIO_BYTES_WRITTEN"])
        a["calls"] += int(c["STDIO_READS"] + c["STDIO_WRITES"])
        a["flushes"] += int(c["STDIO_FLUSHES"])
        t = max(0.0, float(fc["STDIO_F_READ_TIME"] + fc["STDIO_F_WRITE_TIME"]))
        a["rank_seconds"] += t
        if rec["rank"] == -1:
            a["shared_seconds"] += t / nprocs
        else:
            a["own"][rec["rank"]] = a["own"].get(rec["rank"], 0.0) + t
    out = []
    for a in acc.values():
        own = a.pop("own")
        a["per_rank_max_s"] = a.pop("shared_seconds") + max(own.values(), default=0.0)
        a["busiest_rank"] = max(own, key=own.get) if own else None
        out.append(a)
    return tuple(sorted(out, key=lambda a: -a["bytes"]))


def _api_totals(modules: tuple[str, ...], recs: dict[str, list[dict]],
                posix_grouped: list[list] | None = None) -> dict[str, ApiTotals]:
    """Bytes, operations (of every kind the module counts), files and time per interface, summed column by column
    over its records: the counts as ints, the times in record order from 0.0. The records of one module hold the
    same counters (the module's), so the kinds of operation it counts are read off its first record.
    `posix_grouped`: the POSIX records' `_by_counters`, when made already."""
    spec = (("POSIX", "POSIX", "POSIX"), ("MPI-IO", "MPI-IO", "MPIIO"), ("STDIO", "STDIO", "STDIO"),
            ("HDF5", "H5D", "H5D"))
    apis: dict[str, ApiTotals] = {}
    for name, mod, p in spec:
        if mod not in modules:
            continue
        rs = recs.get(mod, [])
        kinds = [(f"{p}{k}_READS", f"{p}{k}_WRITES") for k in ("", "_INDEP", "_COLL", "_SPLIT", "_NB")]
        kinds = [k for k in kinds if rs and k[0] in rs[0]["counters"]]
        counts = operator.itemgetter(f"{p}_BYTES_READ", f"{p}_BYTES_WRITTEN", *(k for kw in kinds for k in kw))
        times = operator.itemgetter(f"{p}_F_READ_TIME", f"{p}_F_WRITE_TIME", f"{p}_F_META_TIME")
        cols = [0] * (2 + 2 * len(kinds)) if rs else [0, 0]
        for c, held in posix_grouped if mod == "POSIX" and posix_grouped is not None else _by_counters(rs):
            cols = [a + int(b) * held for a, b in zip(cols, counts(c))]
        rt, wt, mt = (sum(col, 0.0) for col in zip(*(times(r["fcounters"]) for r in rs))) if rs else (0.0,) * 3
        apis[name] = ApiTotals(bytes_read=cols[0], bytes_written=cols[1], reads=sum(cols[2::2]),
                               writes=sum(cols[3::2]), files=len({r["id"] for r in rs}), read_time=rt,
                               write_time=wt, meta_time=mt)
    return apis


def _ost_loads(files: list[FileSummary]) -> tuple[OstLoad, ...]:
    ost_acc: dict[int, list[float]] = {}
    for f in files:
        if (lay := f.lustre) and (osts := lay.osts):
            share = 1.0 / len(osts)
            for o in osts:
                a = ost_acc.get(o)
                if a is None:
                    a = ost_acc[o] = [0, 0.0, 0.0, 0.0]
                a[0] += 1
                a[1] += f.write_time * share
                a[2] += f.bytes_written * share
                a[3] += f.slowest_write_time * share
    return tuple(OstLoad(ost=o, files=int(a[0]), write_time=a[1], bytes_written=int(a[2]), slowest_write_time=a[3])
                 for o, a in sorted(ost_acc.items()))
