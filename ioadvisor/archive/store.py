"""The archive's tables in the KB (schema migration 7): reading what is known, and adding scan results.

A batch of results is one transaction: the logs, the paths they were seen at, the jobs' facts, their findings
and their production runs go in together or not at all. A log already in the KB (same sha256) adds nothing,
so merging the same results twice, or results of two scans that overlap, is harmless.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import sqlite3
from typing import Any, Iterable, Mapping

from ..kb import archive as tables
from ..model.run import PROV_FIELDS, RUN_FIELDS, Provenance, Run
from ..util import printable

__all__ = ["EMPTY_SHA256", "EMPTY_TEXT", "PathSeen", "add_results", "run_from_dict", "path_is_current",
           "hash_status"]

PathSeen = tuple[str, int, int, str]      # path (as os.walk gives it), size, mtime_ns, sha256
# Every empty file is this failure, under whatever name and in whatever order it is met: never read by a worker,
# never a copy of another (all empty files share one sha256), each path listed as failed by the scan that meets it.
EMPTY_TEXT = "empty file (0 bytes): not a Darshan log"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def run_from_dict(d: Mapping[str, Any]) -> Run:
    """A Run back from `Run.to_dict()` (as a worker sent it)."""
    kw = {k: d[k] for k in RUN_FIELDS}
    kw["hints"] = dict(kw["hints"] or {})
    kw["flags"] = tuple(kw["flags"] or ())
    prov = Provenance(**{k: d["provenance"][k] for k in PROV_FIELDS})
    return Run(**kw, provenance=prov)


def path_key(path: str) -> str | bytes:
    """`path` as archive_paths knows it: its text, or for a name with bytes that are not UTF-8 (which text in
    the KB cannot hold) its exact bytes, a BLOB, which no text equals: each name of any bytes is its own key.
    (The logs, runs and reports hold every name as `printable` shows it: such a byte as \\xNN.)"""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return os.fsencode(path)


def path_is_current(kb: Any, path: str, size: int, mtime_ns: int, retry_failed: bool = False) -> bool:
    """True if `path` was scanned before with this size and mtime (its log need not be read again)."""
    row = tables.path_seen(kb, path_key(path))
    if row is None or row[0] != size or row[1] != mtime_ns:
        return False
    return not (retry_failed and row[2] == "failed")


def hash_status(kb: Any, digest: str) -> str | None:
    """'ok' or 'failed' for a log already scanned, None for a new one."""
    return tables.log_status(kb, digest)


def _add_result(kb: Any, r: Mapping[str, Any], added: dict[str, int], *, system: str, flag: Any, now: str) -> None:
    """One worker result into the open transaction (nothing when its log is known already); `added` counts it."""
    digest = r["hash"]
    old = hash_status(kb, digest)
    if old == "ok" or (old == "failed" and r["status"] == "failed"):
        return
    if old == "failed":
        tables.drop_log(kb, digest)
    error = r.get("error")
    tables.add_log(kb, digest, printable(r["path"]), r["size"], r["status"], error and printable(error), system, now)
    added["logs"] += 1
    if r["status"] != "ok":
        added["failed"] += 1
        return
    job = r["job"]
    tables.add_job(kb, digest, job)
    added["jobs"] += 1
    added["measured"] += job.get("filesystem") is not None
    tables.add_findings(kb, [(digest, f["id"], f["severity"], f["time_at_stake_s"],
                              json.dumps(f, sort_keys=True, allow_nan=False)) for f in r["findings"]])
    added["findings"] += len(r["findings"])
    if r["runs"]:
        # a log already imported with `kb import` keeps its runs; one whose every run is in the KB already
        # (another copy of the job's record) adds none
        n, _ = kb.add_source((run_from_dict(d) for d in r["runs"]), source=printable(r["path"]),
                             source_hash=digest, fmt="darshan", importer="darshan/1", flag=flag) or (0, 0)
        added["runs"] += n


def _add_paths(kb: Any, paths: Iterable[PathSeen], added: dict[str, int], *, system: str,
               now: str) -> list[PathSeen]:
    """Record the paths whose log is in the KB (an empty file's as a failed log); the others, to record later."""
    later = []
    for p in paths:
        if p[3] == EMPTY_SHA256 and hash_status(kb, p[3]) is None:
            tables.add_log(kb, EMPTY_SHA256, printable(p[0]), 0, "failed", EMPTY_TEXT, system, now)
            added["logs"] += 1
            added["failed"] += 1
        if hash_status(kb, p[3]) is None:
            later.append(p)
        else:
            tables.add_path(kb, path_key(p[0]), *p[1:])
    return later


def add_results(kb: Any, results: Iterable[Mapping[str, Any]], paths: Iterable[PathSeen], *,
                system: str, center: Any = None, failed: list[tuple[str, str]] | None = None,
                center_known: bool = False) -> tuple[dict[str, int], list[PathSeen]]:
    """Add worker results and the paths seen to the KB in one transaction; returns what was added, and the
    paths not recorded because their log is not in the KB yet (its result is still to come).

    A result for a log whose earlier scan failed replaces that failure (a retry); one for a log already
    scanned successfully adds nothing. Production runs go through the same checks, content ids and evidence
    flags as `kb import`; a log already imported with `kb import` keeps its runs. A result that cannot be stored
    (a number out of its column's range) makes its log a failed log, appended to `failed` as (path, reason).
    `center`: the system's center, looked up by the system's name when None, unless `center_known` (a caller
    that stores many batches looks it up once: None is then "no center")."""
    from ..center import center_for
    from ..ingest import flagger
    # one center for the batch (every log of a scan is filed under one system): looking it up per log was most
    # of the scanning process's time
    center = center if center is not None or center_known else center_for(None, system)
    flag = flagger(center) if center is not None else None
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    added = {"logs": 0, "failed": 0, "jobs": 0, "measured": 0, "findings": 0, "runs": 0}
    with tables.transaction(kb):
        for r in results:
            _add_one(kb, r, added, system=system, flag=flag, now=now, failed=failed)
        later = _add_paths(kb, paths, added, system=system, now=now)
    return added, later


def write_failed(kb: Any, e: sqlite3.OperationalError, stored: int) -> Exception:
    """The one-line error of a batch the KB refused (a full disk, an I/O error, a read-only file): what happened,
    that the logs of earlier batches stay stored, and what to do."""
    from ..errors import KBError
    why = ("the disk holding it is full, or the KB reached its size limit" if "full" in str(e)
           else "it cannot be written")
    return KBError(f"{printable(str(kb.path))}: {why} ({e}): this batch of results was not stored; the {stored} "
                   f"log(s) stored before it are kept, and the next scan goes on from there once the KB can be "
                   f"written")


# what storing one log's result can fail with when the result holds what its column cannot (a number out of
# range, a value sqlite does not take, text a check refuses): that log is stored as failed, the batch goes on.
# Errors of the KB itself (a full disk, a locked or corrupt file: sqlite3.OperationalError) stop the batch.
STORE_ERRORS = (sqlite3.IntegrityError, sqlite3.InterfaceError, sqlite3.ProgrammingError, sqlite3.DataError,
                OverflowError, ValueError, TypeError, KeyError)


def _add_one(kb: Any, r: Mapping[str, Any], added: dict[str, int], *, system: str, flag: Any, now: str,
             failed: list[tuple[str, str]] | None) -> None:
    """`_add_result` of one log inside a savepoint: a result that cannot be stored is rolled back alone and the
    log stored as failed with the reason (and appended to `failed`)."""
    from ..errors import IOAdvisorError
    before = dict(added)
    tables.savepoint(kb)
    try:
        _add_result(kb, r, added, system=system, flag=flag, now=now)
    except (*STORE_ERRORS, IOAdvisorError) as e:
        tables.rollback_to_savepoint(kb)
        added.update(before)
        error = f"its facts cannot be stored: {type(e).__name__}: {getattr(e, 'reason', None) or e}"
        _add_result(kb, {"hash": r["hash"], "path": r["path"], "size": r["size"], "status": "failed",
                         "error": error}, added, system=system, flag=flag, now=now)
        if failed is not None:
            failed.append((printable(r["path"]), error))
    tables.release_savepoint(kb)
