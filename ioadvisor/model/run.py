"""`Run`: one measured result with its settings, statistics and provenance. Pure data, no I/O."""
from __future__ import annotations

import json
import json.encoder
from operator import attrgetter, itemgetter

from ..errors import UsageError
from ..frozen import asdict, field, fields, frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping

APIS = ("POSIX", "MPIIO", "HDF5", "STDIO", "NETCDF", "PNETCDF", "NFS", "OTHER")
DATA_OPS = ("write", "read", "randwrite", "randread", "rewrite", "reread")
WRITE_OPS = ("write", "rewrite", "randwrite")
READ_OPS = ("read", "reread", "randread")
META_OPS = (
    "file_create", "file_stat", "file_read", "file_remove",
    "dir_create", "dir_stat", "dir_rename", "dir_remove",
    "tree_create", "tree_remove", "open_create",
)
OPS = DATA_OPS + META_OPS
LAYOUTS = ("shared", "fpp")
KINDS = ("benchmark", "reference", "production")

_API_ALIASES = {"MPI-IO": "MPIIO", "MPI_IO": "MPIIO", "MPIIO": "MPIIO", "H5": "HDF5", "HDF5": "HDF5",
                "POSIX": "POSIX", "STDIO": "STDIO", "NCMPI": "PNETCDF"}


def norm_api(api: str | None) -> str | None:
    """Canonical API name (`MPI-IO` -> `MPIIO`); None stays None."""
    if api is None or str(api).strip() == "":
        return None
    key = str(api).strip().upper()
    return _API_ALIASES.get(key, key)


def norm_layout(layout: str | None) -> str | None:
    """`shared`/`fpp` from the spellings tools use (N-1, single-shared-file, file-per-process, N-N)."""
    if layout is None or str(layout).strip() == "":
        return None
    key = str(layout).strip().lower().replace("_", "-")
    if key in ("shared", "n-1", "n-to-1", "ssf", "single-shared-file", "single", "one"):
        return "shared"
    if key in ("fpp", "n-n", "n-to-n", "file-per-process", "unique"):
        return "fpp"
    raise UsageError(f"unknown layout {layout!r} (use shared or fpp)")


@frozen(kw_only=True)
class Provenance:
    """Where a run comes from."""

    source: str = ""               # file path or document name
    source_hash: str = ""          # sha256 of the source's bytes
    citation: str | None = None    # table / figure / section in the source
    command: str | None = None     # command line that produced it
    tool: str | None = None
    tool_version: str | None = None
    importer: str | None = None    # importer name and version, e.g. "ior/1"
    date: str | None = None        # ISO date of the measurement
    job_id: str | None = None
    kind: str = "benchmark"        # benchmark | reference | production


@frozen(kw_only=True)
class Run:
    """One measured result. `value` is normalised (MiB/s for bandwidth, ops/s for rates);
    `value_given`/`unit_given` keep what the source said, for display."""

    system: str
    filesystem: str | None = None
    fs_type: str | None = None
    ost_count: int | None = None
    tier: str | None = None
    op: str
    api: str | None = None
    layout: str | None = None
    collective: bool | None = None
    hints: Mapping[str, str] = field(default_factory=dict)
    stripe_count: int | None = None
    stripe_size: int | None = None
    nodes: int | None = None
    ranks: int | None = None
    ranks_per_node: int | None = None
    transfer_size: int | None = None
    block_size: int | None = None
    segments: int | None = None
    file_size: int | None = None
    total_bytes: int | None = None
    files_per_dir: int | None = None
    items_per_rank: int | None = None
    access: str | None = None      # sequential | random
    direct: bool | None = None
    reps: int | None = None
    value: float
    unit: str
    value_given: float | None = None
    unit_given: str | None = None
    value_min: float | None = None
    value_max: float | None = None
    value_sd: float | None = None
    ci95_low: float | None = None
    ci95_high: float | None = None
    notes: str | None = None
    # evidence flags set at import (ioadvisor.center.evidence): "cache-sized" (the data fit in the client's
    # memory and may have been served from the page cache), "above-peak" (faster than the file system's rated
    # peak); RunFilter(flagged=False) leaves flagged runs out, the guide marks them
    flags: tuple[str, ...] = ()
    provenance: Provenance = field(default_factory=Provenance)
    id: str | None = None          # assigned by the KB: stable hash of content_key (see run_id)

    @property
    def is_bandwidth(self) -> bool:
        return self.unit == "MiB/s"

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready) with provenance flattened under `provenance`."""
        d = asdict(self)
        d["hints"] = dict(self.hints)
        return d


RUN_FIELDS = tuple(f.name for f in fields(Run) if f.name not in ("provenance", "id"))
PROV_FIELDS = tuple(f.name for f in fields(Provenance))

#: what makes two runs the same measurement: the system, every measured setting, the value, unit and kind,
#: and when and by which job it was measured. Not the path it was read from, nor notes or tool versions, so a
#: copy of a file, its CRLF twin, reordered rows, a reformatted job record or an export of the KB add nothing.
IDENTITY_FIELDS = ("system", "filesystem", "fs_type", "ost_count", "tier", "op", "api", "layout", "collective",
                   "hints", "stripe_count", "stripe_size", "nodes", "ranks", "ranks_per_node", "transfer_size",
                   "block_size", "segments", "file_size", "total_bytes", "files_per_dir", "items_per_rank",
                   "access", "direct", "reps", "unit")
IDENTITY_PROV = ("kind", "date", "job_id", "citation")


def bytes_moved(run: Run) -> float | None:
    """The bytes a data run moved in all, from what the run states; None when it does not say."""
    ranks = run.ranks or 1
    if run.total_bytes is not None:
        return float(run.total_bytes)
    if run.block_size:
        return float(run.block_size * (run.segments or 1) * ranks)
    if run.file_size:
        return float(run.file_size * (ranks if run.layout == "fpp" else 1))
    return None


def _content_key_json(run: Run) -> str:
    """The definition of the content key: the identity as JSON with sorted keys (kept to test the fast path
    against, and used for values of types the fast path does not write)."""
    d: dict[str, Any] = {f: getattr(run, f) for f in IDENTITY_FIELDS}
    d["hints"] = {str(k): str(v) for k, v in sorted(dict(run.hints).items())}
    d.update({f: getattr(run.provenance, f) for f in IDENTITY_PROV})
    # the value survives a CSV round trip only to float precision after unit conversion
    d["value"] = f"{run.value:.10g}"
    return json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# The same text written without building a dict and sorting it per run (an import of a million runs spent a
# sixth of its time in json.dumps): the keys in sorted order with their separators are fixed, so only the values
# are encoded, each as json.dumps encodes it (strings by the same encoder json uses with ensure_ascii=False).
_KEY_ORDER = tuple(sorted(IDENTITY_FIELDS + IDENTITY_PROV + ("value",)))
_KEY_TEMPLATE = "{" + ",".join(json.dumps(k) + ":%s" for k in _KEY_ORDER) + "}"
#: the content key is KEY_TEMPLATE % (the JSON text of each field of KEY_ORDER, "value" as '"%.10g"' text); a
#: reader that has these texts already (the KB's CSV reader, ingest.csvrows) fills the template itself
KEY_ORDER, KEY_TEMPLATE = _KEY_ORDER, _KEY_TEMPLATE
_RUN_KEYS = tuple(k for k in _KEY_ORDER if k in IDENTITY_FIELDS)
_PROV_KEYS = tuple(k for k in _KEY_ORDER if k in IDENTITY_PROV)
_GET_RUN_KEYS = attrgetter(*_RUN_KEYS)
_GET_PROV_KEYS = attrgetter(*_PROV_KEYS)
# where each value goes in the template: ("r", i) run attribute, ("p", i) provenance attribute, or the value
_SLOTS = tuple(("r", _RUN_KEYS.index(k)) if k in _RUN_KEYS else ("p", _PROV_KEYS.index(k)) if k in _PROV_KEYS
               else ("v", 0) for k in _KEY_ORDER)
_PLACE = itemgetter(*(i if kind == "r" else len(_RUN_KEYS) + i if kind == "p" else len(_RUN_KEYS) + len(_PROV_KEYS)
                      for kind, i in _SLOTS))
_HINTS_AT = _RUN_KEYS.index("hints")
_JSON_STR = json.encoder.encode_basestring       # what json.dumps(..., ensure_ascii=False) writes a str with


def content_key(run: Run) -> str:
    """The canonical text of a run's identity (IDENTITY_FIELDS, IDENTITY_PROV and the value to 10 digits):
    exactly the text of `_content_key_json`, which defines it (run ids of existing KBs depend on every byte)."""
    values = [*_GET_RUN_KEYS(run), *_GET_PROV_KEYS(run.provenance)]
    hints = values[_HINTS_AT]
    if type(hints) is not dict or not all(type(k) is str and type(x) is str for k, x in hints.items()):
        return _content_key_json(run)
    values[_HINTS_AT] = ""
    out = []
    for v in values:
        t = type(v)
        if v is None:
            out.append("null")
        elif t is str:
            out.append(_JSON_STR(v))
        elif t is int:
            out.append(int.__repr__(v))
        elif t is bool:
            out.append("true" if v else "false")
        else:      # a float where an integer belongs, say: the general encoder
            return _content_key_json(run)
    out[_HINTS_AT] = "{" + ",".join(f"{_JSON_STR(k)}:{_JSON_STR(x)}" for k, x in sorted(hints.items())) + "}"
    out.append(f'"{run.value:.10g}"')
    return _KEY_TEMPLATE % _PLACE(out)


def run_id(key: str, occurrence: int = 0) -> str:
    """Id of the `occurrence`-th run (0, 1, ...) with content key `key` in the KB: the same content always
    gives the same ids, so the same measurement imported twice is found by its id."""
    return _sha1(f"{key}#{occurrence}".encode()).hexdigest()[:12]


def first_ids(keys: Iterable[str]) -> list[str]:
    """`run_id(key)` (occurrence 0) of each key, for a batch of keys (an import's: a million of them)."""
    _sha1(b"")                     # hashlib imported
    sha1 = _sha1
    return [sha1((k + "#0").encode()).hexdigest()[:12] for k in keys]


def _sha1(data: bytes) -> Any:
    """hashlib.sha1, imported at the first id made (loading OpenSSL is a cost `kb list` need not pay)."""
    global _sha1
    import hashlib
    _sha1 = hashlib.sha1
    return _sha1(data)
