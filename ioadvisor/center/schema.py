"""The center file's keys: one table that the loader, `ioadvise center check` and docs/center.md share.

Each key has a kind (how the loader reads it), a unit where it has one, its default and one line of meaning.
The loader accepts exactly these keys; a test checks that docs/center.md lists every one with its kind and
default, so the reference cannot drift from the code.
"""
from __future__ import annotations


from ..frozen import frozen
from ..mpiio.flavours import FLAVOURS as MPI_FLAVOURS  # one flavour list: the renderer's
FS_STRIPING = ("user", "pfl-managed", "none")
TIER_KINDS = ("per-job", "node-local", "burst-buffer")
# file system types ioadvisor knows something about; others load with a warning from `center check`
FS_TYPES = ("lustre", "gpfs", "beegfs", "nfs", "hsfs", "ext3", "ext4", "xfs", "tmpfs", "cephfs", "wekafs")


@frozen
class Key:
    """One key of the center file."""

    section: str            # "" (top level), "filesystems" or "tiers"
    name: str
    kind: str               # string (one line) | text | integer | boolean | size | bandwidth | version | choice
    default: str            # as documented; "required" for keys that must be present
    meaning: str
    unit: str = "-"
    choices: tuple[str, ...] = ()

    @property
    def path(self) -> str:
        return f"{self.section}[].{self.name}" if self.section else self.name


KEYS: tuple[Key, ...] = (
    Key("", "name", "string", "required", "system name runs are filed under (matches `--system` and "
        "`SLURM_CLUSTER_NAME`, case-insensitive)"),
    Key("", "title", "text", "none", "long name shown in the guide"),
    Key("", "source", "text", "none", "where the facts in this file come from"),
    Key("", "mpi", "choice", "mpich", "the MPI flavour most jobs use; picks how hints are passed",
        choices=MPI_FLAVOURS),
    Key("", "mpi_version", "version", "none", "version of that MPI, e.g. `4.1.4`"),
    Key("", "node_memory", "size", "none", "memory of one client (compute) node; runs that move less data "
        "per node than this can be served from the page cache and are flagged `cache-sized`", unit="bytes"),
    Key("", "ranks_per_node", "integer", "none", "MPI processes a job usually runs on one compute node (its "
        "cores); `archive report` counts nodes with it where a Darshan log does not state its node count"),
    Key("filesystems", "name", "string", "required", "unique name of the file system (a `--filesystem` value)"),
    Key("filesystems", "type", "string", "required", "lustre, gpfs, beegfs, nfs, ... (lower case)"),
    Key("filesystems", "mount", "string", "none", "mount point; `$USER`-style variables match any one path "
        "component; `bench` files runs made below it under this file system"),
    Key("filesystems", "ost_count", "integer", "none", "object storage targets (Lustre OSTs, BeeGFS targets); "
        "at least 1"),
    Key("filesystems", "default_stripe_count", "integer", "none", "stripe count a new file gets (-1: all OSTs); "
        "not above ost_count or 2000"),
    Key("filesystems", "default_stripe_size", "size", "none", "stripe size a new file gets; a multiple of "
        "64 KiB below 4 GiB", unit="bytes"),
    Key("filesystems", "striping", "choice", "user for lustre and beegfs, else none",
        "who sets striping: users (`lfs setstripe`, Lustre only), a progressive layout the center manages, or nobody",
        choices=FS_STRIPING),
    Key("filesystems", "persistent", "boolean", "true", "data outlives the job"),
    Key("filesystems", "rated_write_bandwidth", "bandwidth", "none", "the file system's rated peak write "
        "bandwidth; runs above it are flagged `above-peak`", unit="bytes/s"),
    Key("filesystems", "rated_read_bandwidth", "bandwidth", "none", "the rated peak read bandwidth",
        unit="bytes/s"),
    Key("filesystems", "quota", "text", "none", "quota policy, as text for the guide"),
    Key("filesystems", "purpose", "text", "none", "what the file system is for, as text for the guide"),
    Key("filesystems", "citation", "text", "none", "where in the source these facts are stated"),
    Key("tiers", "name", "string", "required", "unique name of the scratch tier"),
    Key("tiers", "filesystem", "string", "required", "the `filesystems` entry that describes the tier"),
    Key("tiers", "kind", "choice", "per-job", "how the tier lives", choices=TIER_KINDS),
    Key("tiers", "request", "string", "none", "the sbatch option that asks for the tier, e.g. "
        "`--constraint=BEEOND`; features are letters, digits, _ and - joined by & (and), a "
        "vertical bar (or) or a comma"),
    Key("tiers", "mount", "string", "none", "where the tier appears in a job; may use $SLURM_JOB_ID, $USER, "
        "$TMPDIR, $HOME, $SLURM_JOBID, $SLURM_JOB_USER only"),
    Key("tiers", "capacity_per_node", "size", "none", "space per node", unit="bytes"),
    Key("tiers", "stage", "boolean", "true", "copy inputs in and results out around the job"),
    Key("tiers", "notes", "text", "none", "anything staff want users to read"),
)


#: the keys of each section, by name: made once, not for each value read (a file may hold 100,000 tables)
_BY_SECTION: dict[str, dict[str, Key]] = {}
for _k in KEYS:
    _BY_SECTION.setdefault(_k.section, {})[_k.name] = _k


def keys_of(section: str) -> dict[str, Key]:
    """The keys of one section ("" for the top level), by name (not to be changed: it is shared)."""
    return _BY_SECTION.get(section, {})


def reference_table() -> str:
    """The Markdown table of every key that docs/center.md carries (a test keeps the two identical)."""
    lines = ["| key | type | unit | default | meaning |", "|---|---|---|---|---|"]
    for k in KEYS:
        kind = f"one of {', '.join(k.choices)}" if k.choices else k.kind
        lines.append(f"| `{k.path}` | {kind} | {k.unit} | {k.default} | {k.meaning} |")
    return "\n".join(lines) + "\n"
