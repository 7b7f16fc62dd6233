"""What a Darshan log says about a job, as plain frozen records (no I/O, no PyDarshan).

Every figure here is either a counter of the log or arithmetic on counters whose direction is stated: where the log
cannot tell two things apart (the direction of a common access size, the split of an MPI-IO record's bytes between
collective and independent calls), the summary carries the bound that is certain, and says which bound it is.
"""
from __future__ import annotations

import math
from typing import Any

from ..frozen import field, fields, frozen

# Darshan's size histogram. Its bucket macro (DARSHAN_BUCKET_INC) tests `size < 101`, `< 1025`, `< 10241`,
# `< 102401`, `< 1048577`, ...: each bin includes its upper edge, so a request of exactly 1 MiB (1,048,576 bytes) is
# counted in 100K_1M, and a zero-byte request in 0_100.
SIZE_BINS = ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M", "10M_100M", "100M_1G", "1G_PLUS")
BIN_UPPER = {"0_100": 100, "100_1K": 1024, "1K_10K": 10240, "10K_100K": 102400, "100K_1M": 1 << 20,
             "1M_4M": 4 << 20, "4M_10M": 10 << 20, "10M_100M": 100 << 20, "100M_1G": 1 << 30, "1G_PLUS": None}
MIB = 1 << 20

# Modules whose records hold the job's data traffic and are read here; DXT traces and the heatmap only repeat it.
READ_MODULES = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "LUSTRE")
# Modules whose I/O reaches storage without passing through a module read here: DAOS and its file API DFS bypass
# POSIX. Not among them: PnetCDF (its bytes go through MPI-IO and POSIX, both read), MDHIM (its store writes
# files through POSIX), BG/Q, APXC and APMPI (machine and MPI data, no I/O), DXT and HEATMAP (repeat POSIX/MPI-IO).
UNREAD_IO_MODULES = ("DFS", "DAOS")


def positional(cls: type) -> Any:
    """A constructor of the frozen record `cls` that takes every field, positionally and in the class's field
    order, and fills the instance as the record's own __init__ does (the same attributes in the same order:
    equal, equally hashed and pickled alike). A record's __init__ (`ioadvisor.frozen`) takes keywords and checks
    their names, three times the cost of this constructor for Requests' seven fields; the reader builds the many
    FileSummary, Requests and LustreLayout objects of a summary of thousands of files with this instead. It is a
    function written for the class's fields (one parameter per field, each stored in the new instance's dict in
    turn), so a call with a field too few or too many is refused by Python itself."""
    names = tuple(f.name for f in fields(cls))
    body = "".join(f"    d_[{n!r}] = {n}\n" for n in names)
    src = (f"def {cls.__name__}({', '.join(names)}):\n    obj_ = new_(cls_)\n    d_ = obj_.__dict__\n{body}"
           f"    return obj_\n")
    scope: dict[str, Any] = {"new_": object.__new__, "cls_": cls}
    exec(src, scope)            # the source is made of the class's field names only
    return scope[cls.__name__]


@frozen(kw_only=True)
class ApiTotals:
    """Bytes and operations through one interface (POSIX, MPI-IO, STDIO, HDF5)."""

    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0
    writes: int = 0
    files: int = 0
    read_time: float = 0.0            # rank-seconds
    write_time: float = 0.0
    meta_time: float = 0.0


@frozen(kw_only=True)
class LustreLayout:
    """A file's Lustre layout, one entry per component (plain files have one)."""

    stripe_size: int                  # of the last component that has objects (the one covering EOF for PFL)
    stripe_count: int
    osts: tuple[int, ...]             # every OST index the file has objects on, all components
    components: int = 1
    pool: str = ""


@frozen(kw_only=True)
class Requests:
    """POSIX requests of one file (or the job) in one direction, from the size histogram and the common sizes.

    Darshan keeps the four most common access sizes of a record with their counts, for reads and writes together.
    `zero` and `exactly_1mib` are what those common sizes prove about this direction, and the bytes moved: a request
    that moved data moved at least one byte, so of `ops` requests that moved `B` bytes at least `ops - B` returned
    nothing (all of them when `B` is 0). `small` (1 byte to 1 MiB - 1) is the histogram's count below 1 MiB minus
    every zero-byte and exactly-1-MiB request the common sizes or the bytes could place in this direction, and never
    more than `B`; so it is never more than the true count unless a size was too rare to be among the four common
    ones.
    """

    ops: int = 0
    small: int = 0
    zero: int = 0                      # zero-byte requests this direction certainly made (a lower bound)
    exactly_1mib: int = 0              # exactly-1-MiB requests this direction certainly made (a lower bound)
    time: float = 0.0                  # rank-seconds in these requests
    in_bins_below_1mib: int = 0        # the histogram's bins 0_100 .. 100K_1M
    refined_out: int = 0               # of those, what the common sizes or the bytes allow to be empty or 1 MiB

    def __add__(self, o: "Requests") -> "Requests":
        return Requests(ops=self.ops + o.ops, small=self.small + o.small, zero=self.zero + o.zero,
                        exactly_1mib=self.exactly_1mib + o.exactly_1mib, time=self.time + o.time,
                        in_bins_below_1mib=self.in_bins_below_1mib + o.in_bins_below_1mib,
                        refined_out=self.refined_out + o.refined_out)


@frozen(kw_only=True)
class MpiioDirection:
    """One file's MPI-IO traffic in one direction: operations by kind and bounds on the collective share of bytes."""

    bytes: int = 0
    collective_ops: int = 0            # *_all and split collective calls
    independent_ops: int = 0           # independent calls, blocking and nonblocking
    collective_bytes_min: int = 0      # certain: the independent calls were at most the largest requests
    collective_bytes_max: int = 0      # certain: the collective calls were at most the largest requests
    time: float = 0.0                  # rank-seconds

    @property
    def collective_share_min(self) -> float:
        return self.collective_bytes_min / self.bytes if self.bytes else 0.0

    @property
    def collective_share_max(self) -> float:
        return self.collective_bytes_max / self.bytes if self.bytes else 0.0

    def __add__(self, o: "MpiioDirection") -> "MpiioDirection":
        return MpiioDirection(bytes=self.bytes + o.bytes, collective_ops=self.collective_ops + o.collective_ops,
                              independent_ops=self.independent_ops + o.independent_ops,
                              collective_bytes_min=self.collective_bytes_min + o.collective_bytes_min,
                              collective_bytes_max=self.collective_bytes_max + o.collective_bytes_max,
                              time=self.time + o.time)


@frozen(kw_only=True)
class RankSpread:
    """The slowest and fastest rank on one shared file, with the bytes each moved, at one layer (POSIX or MPI-IO)."""

    layer: str
    slowest_rank: int | None
    slowest_time: float
    slowest_bytes: int
    fastest_rank: int | None
    fastest_time: float
    fastest_bytes: int
    mean_bytes: float                  # the file's bytes at this layer / the ranks that share it
    bytes_stddev: float | None         # from Darshan's variance of bytes per rank, where the log has it

    @property
    def bytes_agree_within(self) -> float:
        """Largest relative distance of the extreme ranks' (and the deviation's) bytes from the mean."""
        if self.mean_bytes <= 0:
            return 0.0
        d = max(abs(self.slowest_bytes - self.mean_bytes), abs(self.fastest_bytes - self.mean_bytes))
        if self.bytes_stddev is not None:
            d = max(d, self.bytes_stddev)
        return d / self.mean_bytes


@frozen(kw_only=True)
class FileSummary:
    """One file as POSIX (and MPI-IO, if used) saw it."""

    id: int
    path: str
    shared: bool                       # opened by more than one rank of a job with more than one process
    ranks: int                         # ranks that have a record for it (all ranks for a shared record)
    fs_type: str | None
    mount: str | None
    special: str = ""                  # "fifo", "pipe" or "socket" when the name says so; never a file-system file
    bytes_read: int = 0
    bytes_written: int = 0
    reads: int = 0
    writes: int = 0
    read_time: float = 0.0             # rank-seconds
    write_time: float = 0.0
    meta_time: float = 0.0
    # the write time of the rank that wrote longest: its own record's, or for a record shared by all ranks
    # (Darshan keeps sums there) the slowest rank's read + write + metadata time, at most `write_time`
    slowest_write_time: float = 0.0
    read_req: Requests = field(default_factory=Requests)
    write_req: Requests = field(default_factory=Requests)
    spread: RankSpread | None = None   # POSIX, shared files only
    mpiio_read: MpiioDirection | None = None
    mpiio_write: MpiioDirection | None = None
    mpiio_spread: RankSpread | None = None
    lustre: LustreLayout | None = None
    rank: int | None = None            # the one rank of a file no other rank opened
    # ranks whose own POSIX records read or wrote (under collective MPI-IO: the aggregators); None where one
    # record shared by all ranks holds the file (Darshan's reduction): then the count is not in the log
    posix_ranks: int | None = None
    posix_rank_max_time: float = 0.0   # the largest POSIX read + write + metadata time of one rank (rank records)
    not_aligned: int = 0               # POSIX_FILE_NOT_ALIGNED: requests not aligned to `alignment`
    alignment: int = 0                 # POSIX_FILE_ALIGNMENT: the file system's block (on Lustre, the stripe size)
    mpiio_meta_time: float = 0.0       # rank-seconds in MPI-IO open, sync, close, set_view

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def mpiio_bytes(self) -> int:
        return sum(d.bytes for d in (self.mpiio_read, self.mpiio_write) if d)

    @property
    def layer(self) -> str:
        """The layer that carried the file's bytes as the log shows them: MPI-IO where its records hold more bytes
        than POSIX's (a partial log may have lost the POSIX records), POSIX otherwise."""
        return "MPI-IO" if self.mpiio_bytes > self.bytes else "POSIX"

    @property
    def layer_bytes(self) -> int:
        return max(self.bytes, self.mpiio_bytes)

    @property
    def small_reads(self) -> int:
        return self.read_req.small

    @property
    def small_writes(self) -> int:
        return self.write_req.small

    @property
    def io_time(self) -> float:
        return self.read_time + self.write_time

    def mpiio(self, op: str) -> MpiioDirection | None:
        return self.mpiio_read if op == "read" else self.mpiio_write

    @property
    def workers(self) -> int:
        """The ranks that did this file's POSIX I/O: the aggregators under collective MPI-IO, where the log has a
        record per rank; else every rank with a record for it."""
        return max(1, self.posix_ranks or self.ranks)

    def app_time(self) -> tuple[float, float]:
        """(slowest rank, mean over the file's ranks) of the time the application spent on the file, at the layer
        it called: MPI-IO where the file has MPI-IO records with time (its calls include the collective exchange
        and the wait for the aggregators), else POSIX. Read + write + metadata where the slowest rank's figure
        holds all three (Darshan's slowest-rank time), read + write for the mean."""
        mpi = sum(d.time for d in (self.mpiio_read, self.mpiio_write) if d)
        if mpi > 0:
            mean = mpi / max(1, self.ranks)
            sp = self.mpiio_spread
        else:
            mean = self.io_time / max(1, self.ranks)
            sp = self.spread
        slow = max(mean, sp.slowest_time) if sp else mean
        return slow, mean


@frozen(kw_only=True)
class OstLoad:
    """Write time attributed to one OST: each file's POSIX write time is shared equally among its OSTs.
    `write_time` shares the rank-seconds (summed over a shared file's ranks, who write at once),
    `slowest_write_time` the slowest rank's (FileSummary.slowest_write_time): time on that OST, not a sum."""

    ost: int
    files: int
    write_time: float
    bytes_written: int
    slowest_write_time: float = 0.0

    @property
    def mean_write_time(self) -> float:
        return self.write_time / self.files if self.files else 0.0

    @property
    def mean_slowest_write_time(self) -> float:
        return self.slowest_write_time / self.files if self.files else 0.0


@frozen(kw_only=True)
class MetaTime:
    """Metadata time (open, stat, seek, close, ...) of POSIX and STDIO records on files, FIFOs and the like left out."""

    rank_seconds: float = 0.0          # summed over records as Darshan stores them
    per_rank_max: float = 0.0          # the busiest rank: its own records plus shared records / their ranks
    per_rank_mean: float = 0.0         # rank_seconds / processes
    busiest_rank: int | None = None    # None when shared records alone decide (every rank has the same share)
    left_out_rank_seconds: float = 0.0 # on FIFOs, pipes and sockets (blocking opens wait for the other end)
    left_out_files: int = 0


@frozen(kw_only=True)
class Heatmap:
    """Darshan's HEATMAP module for one interface (POSIX, MPIIO, STDIO): bytes moved per time bin summed over the
    ranks, and how many ranks read and wrote in each bin. Bin i covers [i x bin_width, (i + 1) x bin_width) seconds
    from the job's start."""

    api: str
    bin_width: float
    read_bytes: tuple[int, ...]
    write_bytes: tuple[int, ...]
    ranks_reading: tuple[int, ...]
    ranks_writing: tuple[int, ...]
    ranks: int                         # ranks with a heatmap record (DXT: a traced segment) for this interface
    source: str = "HEATMAP"            # or "DXT": a time line from the traced segments, by their start time

    @property
    def ranks_active(self) -> tuple[int, ...]:
        """Per bin, the larger of the ranks reading and the ranks writing (a lower bound of the ranks moving data)."""
        return tuple(map(max, self.ranks_reading, self.ranks_writing))

    def phases(self, floor: float = 0.01) -> list[dict]:
        """I/O phases: runs of consecutive bins moving more than `floor` of the busiest bin's bytes, each with its
        start and end (s), bytes read and written, and the most ranks active in one of its bins."""
        moved = [r + w for r, w in zip(self.read_bytes, self.write_bytes)]
        top = max(moved, default=0)
        out: list[dict] = []
        if top <= 0:
            return out
        start = None
        for i, m in enumerate(moved + [0]):
            if m > floor * top and start is None:
                start = i
            elif m <= floor * top and start is not None:
                out.append({"start_s": round(start * self.bin_width, 1), "end_s": round(i * self.bin_width, 1),
                            "bytes_read": sum(self.read_bytes[start:i]),
                            "bytes_written": sum(self.write_bytes[start:i]),
                            "ranks_active_max": max(self.ranks_active[start:i])})
                start = None
        return out


@frozen(kw_only=True)
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
    partial_modules: tuple[str, ...] = ()
    mounts: tuple[tuple[str, str], ...]
    apis: dict[str, ApiTotals]
    files: tuple[FileSummary, ...]
    read_sizes: dict[str, int]          # POSIX request-size histogram, bins as in Darshan (0_100 ... 1G_PLUS)
    write_sizes: dict[str, int]
    reads: Requests = field(default_factory=Requests)   # POSIX requests on regular files, job-wide
    writes: Requests = field(default_factory=Requests)
    consec_reads: int = 0
    consec_writes: int = 0
    seq_reads: int = 0
    seq_writes: int = 0
    meta: MetaTime = field(default_factory=MetaTime)
    mpiio_indep_reads: int = 0
    mpiio_indep_writes: int = 0
    mpiio_coll_reads: int = 0
    mpiio_coll_writes: int = 0
    mpiio_nb_ops: int = 0
    h5d_collective: bool | None = None   # H5D_USE_MPIIO_COLLECTIVE on any dataset, None without H5D
    stdio_streams: tuple[dict, ...] = ()  # per STDIO record on a file: bytes, calls, time, slowest rank time
    osts: tuple[OstLoad, ...] = ()
    osts_seen: int = 0                   # distinct OST indices in the log's Lustre records
    fs_ost_count_at_least: int | None = None   # highest OST index seen + 1: a lower bound, never a cap
    partial: bool = False                # Darshan ran out of memory and dropped records
    notes: tuple[str, ...] = ()
    nodes: int | None = None             # the node count the log states (`derive.nodes_stated`), else None
    heatmaps: tuple[Heatmap, ...] = ()   # the HEATMAP module's time lines, one per interface

    # convenience views -------------------------------------------------------------------------------
    @property
    def has_mpiio(self) -> bool:
        return "MPI-IO" in self.modules

    @property
    def has_posix(self) -> bool:
        return "POSIX" in self.modules

    @property
    def read_modules(self) -> tuple[str, ...]:
        """The log's modules the analysis reads."""
        return tuple(m for m in self.modules if m in READ_MODULES)

    @property
    def unread_modules(self) -> tuple[str, ...]:
        return tuple(m for m in self.modules if m in UNREAD_IO_MODULES)

    @property
    def shared_files(self) -> tuple[FileSummary, ...]:
        return tuple(f for f in self.files if f.shared)

    @property
    def fpp_files(self) -> tuple[FileSummary, ...]:
        return tuple(f for f in self.files if not f.shared and not f.special)

    @property
    def small_reads(self) -> int:
        return self.reads.small

    @property
    def small_writes(self) -> int:
        return self.writes.small

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

    def io_time(self) -> tuple[float, float]:
        """(the busiest rank, the mean over all ranks) of the job's I/O time per rank, at the layer the application
        called on each file (`FileSummary.app_time`): shared files add their slowest rank's time (the ranks of a
        shared file wait for each other), a rank's own files add to that rank; at most the run time."""
        shared = mean = 0.0
        own: dict[int, float] = {}
        for f in self.files:
            if f.special:
                continue
            slow, m = f.app_time()
            mean += m * max(1, f.ranks) / self.nprocs
            if f.shared or f.rank is None:
                shared += slow
            else:
                own[f.rank] = own.get(f.rank, 0.0) + slow
        for a in self.stdio_streams:
            mean += a["rank_seconds"] / self.nprocs
            shared += a["per_rank_max_s"]
        busiest = shared + max(own.values(), default=0.0)
        cap = self.run_time if self.run_time > 0 else math.inf
        return min(busiest, cap), min(mean, cap)

    def hints_in_effect(self) -> list[dict]:
        """For each file written or read collectively through MPI-IO, what its counters show of the MPI-IO hints
        in effect: the aggregators (ranks with POSIX I/O on the file, where the log has a record per rank: ROMIO's
        cb_nodes) and the Lustre striping (striping_factor, striping_unit). Darshan does not record the hints the
        application set; these are what the job ran with."""
        out = []
        for f in self.files:
            dirs = [d for d in (f.mpiio_read, f.mpiio_write) if d and d.bytes]
            if not f.shared or not dirs or sum(d.collective_ops for d in dirs) == 0:
                continue
            out.append({"file": f.path, "ranks": f.ranks, "cb_nodes": f.posix_ranks,
                        "striping_factor": f.lustre.stripe_count if f.lustre else None,
                        "striping_unit": f.lustre.stripe_size if f.lustre else None})
        return out[:10]

    def nothing_to_judge(self) -> str | None:
        """Why the log holds nothing a rule could judge (no file records, or no byte moved and no time spent on
        files), else None."""
        mods = f" (its modules: {', '.join(self.modules)})" if self.modules else ""
        if not self.files and not self.stdio_streams:
            return ("the log holds no record of a file in the modules read" + mods if self.modules
                    else "the log holds no module records at all: Darshan recorded no I/O for this job")
        busy = any(f.bytes or f.mpiio_bytes or f.reads or f.writes or f.io_time or f.meta_time for f in self.files)
        if not busy and not any(a["bytes"] or a["calls"] for a in self.stdio_streams):
            return "the job opened files but moved no byte and spent no measured time on them" + mods
        return None

    @property
    def layout(self) -> str:
        """`shared`, `fpp` or `mixed`, by the bytes moved through POSIX on regular files."""
        sb = sum(f.bytes for f in self.files if f.shared)
        fb = sum(f.bytes for f in self.files if not f.shared and not f.special)
        if sb == 0 and fb == 0:
            return "none"
        if sb >= 0.8 * (sb + fb):
            return "shared"
        if fb >= 0.8 * (sb + fb):
            return "fpp"
        return "mixed"


NODES_FROM = {"log": "the log states it (BG/Q record, or DXT traces of every rank)",
              "option": "processes / --ranks-per-node", "center": "processes / the center file's ranks_per_node"}


def job_nodes(stated: int | None, nprocs: int, option_rpn: int | None,
              center_rpn: int | None) -> tuple[int | None, str | None]:
    """A job's node count and where it comes from (a key of NODES_FROM): the count the log states, else the
    processes over the ranks per node given by the user, else over the center file's; (None, None) when none
    of them is known: the job is counted in processes only."""
    if stated:
        return stated, "log"
    for rpn, source in ((option_rpn, "option"), (center_rpn, "center")):
        if rpn:
            return max(1, math.ceil(nprocs / rpn)), source
    return None, None


# ----------------------------------------------------------------------------------------------------
# what a summary says of the job (pure functions: the diagnosis uses them without importing the reader)

def median_ost_time(summary: LogSummary) -> float | None:
    """Median over OSTs of the mean write time per file on that OST (each file's slowest rank's)."""
    import statistics
    vals = [o.mean_slowest_write_time for o in summary.osts if o.files]
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
    access = "sequential" if ops == 0 or summary_seq_share(summary, op) >= 0.5 else "random"
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
