"""`ioadvise jobs collect`: job records checked one by one and added to the KB as production runs.

A record is the user's own file, so each is checked before it counts: it must belong to the job it was found
for (`records.tie_problem`), come from the cluster it is filed under, name a tier the center describes and
stay under a bandwidth bound (`importers.jobrecord`). A record that fails is listed with the reason and adds
nothing; the others are imported, each in its own transaction.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any

from ..errors import ImportFormatError, UsageError
from .records import Found, tie_problem


def collect_records(store: Any, found: list[Found], *, system: str | None, center: Any) -> list[dict]:
    """One row per record (path, job id, tier, staged bytes, system, file system, runs, status, error)."""
    return [_collect_one(store, f, system=system, center=center) for f in found]


def _collect_one(store: Any, found: Found, *, system: str | None, center: Any) -> dict:
    from ..importers import ImportContext
    from ..importers.jobrecord import read_record, record_center, record_runs, tier_filesystem
    from ..inputs import RECORD, read_input
    row: dict[str, Any] = {"path": str(found.path), "job_id": None, "exit_code": None, "tier": None,
                           "staged_out_bytes": None, "elapsed_s": None, "system": None, "filesystem": None,
                           "runs": 0, "status": "refused", "error": None, "note": None}
    try:
        data = read_input(found.path, RECORD, ImportFormatError)
        rec = read_record(data, str(found.path))
        row.update(job_id=rec.job_id, exit_code=rec.exit_code, tier=rec.tier,
                   staged_out_bytes=rec.staged_out_bytes, elapsed_s=None if rec.end is None else rec.end - rec.start)
        why = tie_problem(found, rec.job_id, rec.user, rec.cluster) or _cluster_problem(rec.cluster, system, center)
        if why:
            raise ImportFormatError(why, str(found.path))
        where = record_center(center, system or rec.cluster or os.environ.get("SLURM_CLUSTER_NAME"))
        name = system or (where.name if where is not None else None) or rec.cluster \
            or os.environ.get("SLURM_CLUSTER_NAME") or "unknown"
        ctx = ImportContext(source=str(found.path), system=name, center=where, kind="production")
        runs = record_runs(rec, ctx)
        row.update(system=name, filesystem=runs[0].filesystem if runs else
                   (tier_filesystem(rec, where, str(found.path)) if rec.tier and where else rec.tier))
        row["status"] = ("stage-out failed: nothing measured" if rec.stage_out_status
                         else "no staged volume: nothing measured")
        if runs:
            row.update(_store(store, found, data, runs, where))
    except (ImportFormatError, UsageError) as e:
        row["error"] = str(e) if str(found.path) in str(e) else f"{found.path}: {e}"
    return row


def _store(store: Any, found: Found, data: bytes, runs: list, center: Any) -> dict:
    """The record's runs into the KB in one transaction, from the bytes that were checked (a file changed since
    is not read again)."""
    from ..ingest import flagger
    from ..kb.store import batched, keyed_runs
    from ..util import printable
    name = printable(str(found.path))
    res = store.add_batches(batched(flagger(center)(keyed_runs(runs, name)), store.null_default_columns()),
                            source=name, source_hash=hashlib.sha256(data).hexdigest(), fmt="jobrecord",
                            importer="jobrecord/1", require_runs=True)
    return {"runs": res.runs, "status": "already in the KB" if res.skipped else "imported", "note": res.note}


def _cluster_problem(cluster: str | None, system: str | None, center: Any) -> str | None:
    """Why a record from `cluster` cannot be filed under the system or center given, or None."""
    if not cluster or (system is None and center is None):
        return None
    from ..center import center_for
    named = center_for(None, cluster)
    names = {n.lower() for n in (cluster, named.name if named is not None else None) if n}
    wanted = system if system is not None else center.name
    if wanted.lower() in names:
        return None
    return f"the record is from cluster {cluster}, not {wanted}"
