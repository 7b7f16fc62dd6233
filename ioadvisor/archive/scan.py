"""Scanning a Darshan archive on one node: find the logs, skip the ones seen before, diagnose the rest in a pool
of long-lived workers, and add the results to the KB in batches (each batch one transaction)."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..darshanlog.header import check_header, memory_refusal
from ..errors import ImportFormatError, IOAdvisorError, UsageError
from ..inputs import LOG, check_input, open_input
from ..util import printable
from .store import (EMPTY_SHA256, EMPTY_TEXT, PathSeen, add_results, hash_status, path_is_current,
                    write_failed)
from .worker import Settings

__all__ = ["ScanOutcome", "list_logs", "scan", "sha256_of", "pending_logs", "diagnose_logs", "one_scan_at_a_time"]

LOG_SUFFIX = ".darshan"
BATCH_LOGS = 256          # results per KB transaction
BATCH_SECONDS = 2.0       # ... or fewer, when this long has passed since the last commit
CRASH_TEXT = "the Darshan library crashed reading this log ({why}): the log is truncated or corrupt"


@dataclass
class ScanOutcome:
    """What a scan found and did. `failed` lists (path, reason) of the logs that could not be read this time."""

    files: int = 0                 # log files under the roots
    unchanged: int = 0             # paths scanned before with the same size and mtime: not read
    duplicates: int = 0            # new paths whose content was scanned before (or twice in this scan)
    diagnosed: int = 0             # logs read and judged (ok or failed)
    added: dict[str, int] = field(default_factory=lambda: {"logs": 0, "failed": 0, "jobs": 0, "measured": 0,
                                                           "findings": 0, "runs": 0})
    failed: list[tuple[str, str]] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)    # (path, a value of the log left out)
    workers: int = 0
    restarts: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"files": self.files, "unchanged": self.unchanged, "duplicates": self.duplicates,
                "diagnosed": self.diagnosed, "added": dict(self.added),
                "failed": [{"path": p, "error": e} for p, e in self.failed],
                "notes": [{"path": p, "note": n} for p, n in self.notes], "workers": self.workers,
                "worker_restarts": self.restarts, "seconds": round(self.seconds, 3),
                "logs_per_second": round(self.diagnosed / self.seconds, 2) if self.diagnosed and self.seconds > 0 else None}


def list_logs(roots: Iterable[str | Path]) -> list[Path]:
    """Every `*.darshan` file under the roots (a root may also be a log file itself), in path order, each once,
    by its absolute path (a relative root is taken from the current directory now: an array task, or a later
    scan, runs elsewhere). A YEAR/MONTH/DAY tree is just a directory tree here."""
    out: list[Path] = []
    for root in roots:
        p = Path(os.path.abspath(root))
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            for d, dirs, files in os.walk(p):
                dirs.sort()
                here = Path(d)
                out += [here / f for f in sorted(files) if f.endswith(LOG_SUFFIX)]
        elif p.exists():
            check_input(p, ANY_SIZE_LOG)        # says what it is instead (a named pipe, a device)
        else:
            raise UsageError(f"{p}: no such file or directory")
    return list(dict.fromkeys(out))


ANY_SIZE_LOG = LOG._replace(limit=None)


def look_at(p: Path) -> os.stat_result:
    """The stat of a listed log that may be hashed and read: a regular file (a named pipe, a device, a socket or
    a symbolic link to one is not opened) no larger than the cap of a Darshan log; ImportFormatError naming it
    otherwise. Over the cap, the header is looked at first: a file whose header does not fit it is refused for
    that, without its bytes being read."""
    st = check_input(p, ANY_SIZE_LOG, ImportFormatError)
    if LOG.limit is not None and st.st_size > LOG.limit:
        check_header(p)
        check_input(p, LOG, ImportFormatError)
    return st


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open_input(path, ANY_SIZE_LOG, ImportFormatError) as f:     # not a pipe put in its place since the look
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def pending_logs(kb: Any, files: Iterable[Path], out: ScanOutcome, seen: list[PathSeen], *,
                 retry_failed: bool = False) -> Iterator[tuple[str, str, int]]:
    """(path, sha256, size) of each log to read: not a path unchanged since an earlier scan, not a content
    scanned before or earlier in this listing. Every path looked at that needs no reading is appended to
    `seen` (to be recorded with the next batch). Unreadable files, and files `look_at` refuses, are failures of
    this scan (not recorded: the next scan looks at them again)."""
    queued: set[str] = set()
    for p in files:
        try:
            st = look_at(p)
        except IOAdvisorError as e:
            out.failed.append((printable(str(p)), getattr(e, "reason", None) or str(e)))
            continue
        if path_is_current(kb, str(p), st.st_size, st.st_mtime_ns, retry_failed):
            out.unchanged += 1
            continue
        if st.st_size == 0:
            out.failed.append((printable(str(p)), EMPTY_TEXT))
            seen.append((str(p), 0, st.st_mtime_ns, EMPTY_SHA256))
            continue
        try:
            digest = sha256_of(p)
        except OSError as e:
            out.failed.append((printable(str(p)), f"cannot read: {e.strerror}"))
            continue
        except IOAdvisorError as e:
            out.failed.append((printable(str(p)), getattr(e, "reason", None) or str(e)))
            continue
        status = hash_status(kb, digest)
        row = (str(p), st.st_size, st.st_mtime_ns, digest)
        if digest in queued or status == "ok" or (status == "failed" and not retry_failed):
            out.duplicates += 1
            seen.append(row)
            continue
        queued.add(digest)
        seen.append(row)
        yield str(p), digest, st.st_size


def diagnose_logs(items: Iterable[tuple[str, str, int]], settings: Settings, workers: int,
                  timeout: float, on_pool: Callable[[Any], None] | None = None) -> Iterator[dict[str, Any]]:
    """Worker results for `(path, sha256, size)` items, as they finish: the handler's record, or a failure
    naming what killed its worker. `on_pool(pool)` is called once the workers are up."""
    from .pool import WorkerPool
    from .worker import setup
    sizes: dict[str, int] = {}

    def feed() -> Iterator[tuple[str, str]]:
        for path, digest, size in items:
            sizes[digest] = size
            yield path, digest

    with WorkerPool(setup, (settings,), workers=workers, timeout=timeout) as pool:
        if on_pool:
            on_pool(pool)
        for o in pool.imap_unordered(feed()):
            path, digest = o.item
            if o.result is not None:
                rec = dict(o.result)
            elif o.died == "out of memory":       # outside the handler: its result's send
                rec = {"hash": digest, "path": path, "status": "failed", "error": memory_refusal(settings.memory)}
            elif o.died:
                rec = {"hash": digest, "path": path, "status": "failed", "error": CRASH_TEXT.format(why=o.died)}
            else:
                rec = {"hash": digest, "path": path, "status": "failed", "error": o.error}
            rec["size"] = sizes.pop(digest)
            # as reported and stored: a name's bytes that are not UTF-8, and control characters, as \\xNN
            rec["path"], rec["error"] = printable(path), rec.get("error") and printable(rec["error"])
            yield rec


@contextmanager
def one_scan_at_a_time(kb_path: str | Path, waiting: Callable[[], None]) -> Iterator[None]:
    """Hold an exclusive lock on the file KB.scan-lock beside the KB while a scan runs. A second scan of the same
    KB calls `waiting()` and waits for the first to end, then finds the paths it stored unchanged, instead of
    reading every log a second time alongside it. Where no lock file can be made (a read-only directory, where
    the scan cannot store anything either), or the KB is in memory, the scan goes on without it."""
    import fcntl
    fd = -1
    if str(kb_path) != ":memory:":
        try:
            fd = os.open(f"{kb_path}.scan-lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError:
            pass
    try:
        if fd >= 0:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                waiting()
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd >= 0:
            os.close(fd)          # the lock goes with it (the workers, which share it, have ended by now)


def scan(roots: Iterable[str | Path], kb: Any, settings: Settings, *, workers: int, timeout: float = 120.0,
         retry_failed: bool = False, progress: Callable[[int, int], None] | None = None,
         center: Any = None) -> ScanOutcome:
    """Scan the logs under `roots` into the open KB `kb`. `progress(done, total)` is called as logs are
    looked at (total: the files under the roots)."""
    t0 = time.perf_counter()
    out = ScanOutcome(workers=workers)
    files = list_logs(roots)
    out.files = len(files)
    seen: list[PathSeen] = []
    batch: list[dict[str, Any]] = []
    last = time.monotonic()
    # the system's center, looked up at the first batch and kept for the others: a lookup reads every center
    # file, which per batch cost the scanning process about as much as storing the batch
    found: list[Any] = []

    def flush() -> None:
        nonlocal last
        if batch or seen:
            if not found:
                from ..center import center_for
                found.append(center if center is not None else center_for(None, settings.system))
            try:
                got, later = add_results(kb, batch, seen, system=settings.system, center=found[0],
                                         failed=out.failed, center_known=True)
            except sqlite3.OperationalError as e:
                raise write_failed(kb, e, out.added["logs"]) from None
            for k, v in got.items():
                out.added[k] += v
            batch.clear()
            seen[:] = later       # in place: the listing generator appends to this very list
        last = time.monotonic()

    pool_ref: list[Any] = []
    items = pending_logs(kb, files, out, seen, retry_failed=retry_failed)
    for rec in diagnose_logs(items, settings, workers, timeout, on_pool=pool_ref.append):
        out.diagnosed += 1
        if rec["status"] != "ok":
            out.failed.append((rec["path"], rec["error"]))
        out.notes += [(rec["path"], n) for n in rec.get("notes") or ()]
        batch.append(rec)
        if progress:
            progress(out.diagnosed + out.unchanged + out.duplicates, out.files)
        if len(batch) >= BATCH_LOGS or time.monotonic() - last >= BATCH_SECONDS:
            flush()
    flush()
    if progress:
        progress(out.files, out.files)
    out.restarts = pool_ref[0].restarts if pool_ref else 0
    out.seconds = time.perf_counter() - t0
    return out
