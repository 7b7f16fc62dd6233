"""Core types shared by advice, wrapping, docs and diagnosis. Frozen records (`ioadvisor.frozen`), no I/O."""
from __future__ import annotations

from collections.abc import Mapping

from ..frozen import asdict, field, frozen, is_record
from ..lustre import stripable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@frozen(kw_only=True)
class FileSystem:
    """A file system a center offers (global or the backing of a tier)."""

    name: str
    type: str                      # lustre | gpfs | beegfs | nfs | hsfs | ext4 | xfs | tmpfs | ...
    mount: str | None = None
    ost_count: int | None = None
    default_stripe_count: int | None = None
    default_stripe_size: int | None = None
    striping: str = "user"         # user | pfl-managed | none
    persistent: bool = True
    quota: str | None = None
    purpose: str | None = None
    citation: str | None = None
    rated_write_bandwidth: float | None = None   # bytes/s, the rated peak (center file)
    rated_read_bandwidth: float | None = None

    @property
    def stripable(self) -> bool:
        """True where users may run `lfs setstripe` themselves (Lustre, policy permitting)."""
        return stripable(self.type, self.striping)


@frozen(kw_only=True)
class Tier:
    """Job-scoped scratch: per-job BeeOND, node-local NVMe, a burst buffer."""

    name: str
    filesystem: str                # name of the FileSystem describing it
    kind: str = "per-job"          # per-job | node-local | burst-buffer
    request: str | None = None     # sbatch option, e.g. --constraint=BEEOND
    mount: str | None = None       # e.g. /mnt/odfs/$SLURM_JOB_ID or $TMPDIR
    capacity_per_node: int | None = None
    stage: bool = True
    notes: str | None = None


@frozen(kw_only=True)
class Center:
    """What a center offers: file systems, scratch tiers, default MPI flavour."""

    name: str
    title: str | None = None
    source: str | None = None
    mpi: str = "mpich"
    filesystems: tuple[FileSystem, ...] = ()
    tiers: tuple[Tier, ...] = ()
    mpi_version: str | None = None
    node_memory: int | None = None          # bytes of memory on one client node
    ranks_per_node: int | None = None       # MPI processes a job usually runs per node (archive report)

    def filesystem(self, name: str) -> FileSystem | None:
        return next((f for f in self.filesystems if f.name == name), None)

    def tier(self, name: str) -> Tier | None:
        return next((t for t in self.tiers if t.name == name), None)


@frozen(kw_only=True)
class Workload:
    """What a job does, as far as I/O goes."""

    nodes: int
    ranks_per_node: int
    bytes_per_rank: int
    api: str = "POSIX"             # POSIX | MPIIO | HDF5
    layout: str = "any"            # shared | fpp | any (application can do either)
    op: str = "write"              # write | read
    access: str = "sequential"     # sequential | random
    access_size: int | None = None  # bytes per request
    files_per_rank: int = 1        # metadata load
    files_created: int | None = None
    lifetime: str = "after-job"    # job | after-job (must data outlive the job?)

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node

    @property
    def total_bytes(self) -> int:
        return self.bytes_per_rank * self.ranks

    @property
    def metadata_heavy(self) -> bool:
        """Many small files: creates dominate over data movement."""
        files = self.files_created if self.files_created is not None else self.files_per_rank * self.ranks
        return files >= 1000 and (self.bytes_per_rank * self.ranks) / max(files, 1) < (1 << 20)


@frozen(kw_only=True)
class Config:
    """One candidate setting."""

    tier: str | None = None        # None = the global file system
    filesystem: str
    layout: str                    # shared | fpp
    api: str
    collective: bool | None = None
    stripe_count: int | None = None
    stripe_size: int | None = None
    hints: Mapping[str, str] = field(default_factory=dict)
    hdf5_alignment: int | None = None


@frozen(kw_only=True)
class Prediction:
    """Predicted value (MiB/s or ops/s) with an interval and the runs it rests on."""

    value: float
    unit: str
    low: float
    high: float
    evidence: tuple[str, ...] = ()   # run ids
    n_runs: int = 0                  # how many runs the fitted model rests on
    note: str | None = None          # e.g. "extrapolated: few runs"

    @property
    def capped(self) -> bool:
        """Whether the value is the top of its interval: held there by a bound, not the middle of what may come."""
        return self.value is not None and self.high is not None and self.value >= self.high


@frozen(kw_only=True)
class Evidence:
    """A measured run or a published comparison an answer rests on."""

    run_id: str | None
    citation: str
    source: str
    value: float | None = None
    unit: str | None = None
    summary: str | None = None


@frozen(kw_only=True)
class Option:
    """A configuration with its prediction and the commands that apply it."""

    config: Config
    prediction: Prediction
    commands: Mapping[str, Any] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    reasons: tuple[str, ...] = ()


@frozen(kw_only=True)
class Advice:
    """The answer to a workload: the recommendation, the system default and the runners-up."""

    system: str
    workload: Workload
    recommendation: Option
    baseline: Option
    alternatives: tuple[Option, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def gain(self) -> float:
        """Predicted recommendation / predicted baseline."""
        b = self.baseline.prediction.value
        return self.recommendation.prediction.value / b if b else float("inf")


@frozen(kw_only=True)
class Finding:
    """A diagnosis result with a stable ID (e.g. LUS001)."""

    id: str
    title: str
    severity: str                   # high | warn | info | ok
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    advice: Advice | None = None
    time_at_stake_s: float | None = None   # run time (seconds per rank) the finding puts at stake, where it has one


def to_plain(obj: Any) -> Any:
    """Dataclass tree to JSON-ready plain data (mappings become dicts, tuples lists)."""
    if is_record(obj) or hasattr(obj, "__dataclass_fields__"):
        return {k: to_plain(v) for k, v in asdict(obj).items()}
    if isinstance(obj, Mapping):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return obj
