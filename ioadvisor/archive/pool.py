"""A pool of long-lived worker processes in which one item that kills its worker costs one restart, not the run.

Each worker handles one item at a time, so a worker that dies (a C library aborting on a corrupt Darshan log,
a segmentation fault) or hangs can be blamed on exactly the item it was given: that item is reported as failed
with the signal or the time limit, the worker is replaced, and the other items go on. Workers are forked once
and serve items until the pool closes, so per-item cost is one message each way, not a process start.
"""
from __future__ import annotations

import math
import multiprocessing as mp
import os
import select
import signal
import time
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterable, Iterator

from ..errors import IOAdvisorError
from ..frozen import frozen
from ..util import die_with_parent

__all__ = ["WorkerPool", "Outcome", "Retire", "default_workers", "kb_items"]


def default_workers() -> int:
    """Cores this process may use: Slurm's allocation inside a job (SLURM_CPUS_PER_TASK), else the CPU
    affinity mask."""
    env = os.environ.get("SLURM_CPUS_PER_TASK", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


@frozen
class Outcome:
    """What became of one item: the handler's return value, or why there is none (`error`); `died`, when its
    worker died, says how (a signal's name, an exit code, or "out of memory")."""

    item: Any
    result: Any = None
    error: str | None = None
    died: str | None = None


@frozen
class Retire:
    """A handler's result after which its worker is replaced: for a handler that knows its process was left in a
    bad state (a C library's handle that cannot be closed, holding a file descriptor and memory), so that a long
    run of such items does not pile it up. The item's result is `value`."""

    value: Any


OUT_OF_MEMORY = 75          # a worker's exit code when its own work outside a handler ran out of memory


def _serve(conn: Connection, setup: Callable[..., Callable[[Any], Any]], args: tuple) -> None:
    # a worker inherits its siblings' pipe ends, so it would not see its own pipe close when the parent dies
    die_with_parent()
    try:
        _serve_items(conn, setup, args)
    except MemoryError:
        # out of memory outside a handler (sending a result): the interpreter's own exit would need memory too
        # and can spin in multiprocessing's clean-up; end now, the parent names the code
        os._exit(OUT_OF_MEMORY)


def _serve_items(conn: Connection, setup: Callable[..., Callable[[Any], Any]], args: tuple) -> None:
    try:
        handle = setup(*args)
    except Exception as e:  # reported by the parent, which raises it there
        conn.send(("setup-error", e))
        return
    conn.send(("ready", None))
    while True:
        try:
            item = conn.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        try:
            out = handle(item)
        except Exception as e:  # the handler's own failure: reported for this item, the worker stays
            conn.send(("error", f"{type(e).__name__}: {e}"))
            continue
        if isinstance(out, Retire):
            conn.send(("retire", out.value))
            return
        conn.send(("ok", out))


class _Worker:
    def __init__(self, ctx: Any, setup: Callable, args: tuple):
        parent, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_serve, args=(child, setup, args), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        self.item: Any = None
        self.started = 0.0

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def _death(code: int | None) -> str:
    if code == OUT_OF_MEMORY:
        return "out of memory"
    if code is not None and code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def _ready(fds: list[int], timeout: float) -> set[int]:
    """The file descriptors among `fds` (the workers' pipes and process sentinels) that can be read (a message,
    end of file, or a process's end) within `timeout` seconds: one poll(2), as multiprocessing's `wait` does, but
    without the selector it builds and fills at each call, which cost the scanning process more than the rest of
    handing out a log and taking its result."""
    if not hasattr(select, "poll"):
        return set(wait(fds, timeout=timeout))
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return {fd for fd, _ in poller.poll(math.ceil(timeout * 1000))}


class WorkerPool:
    """`workers` processes, each built by `setup(*args)` (run once in the worker; it returns the per-item
    handler). `imap_unordered(items)` yields an `Outcome` per item as items finish. An item whose handler runs
    longer than `timeout` seconds, or whose worker dies, gets an error and a fresh worker takes its place
    (`restarts` counts them); a handler that returns `Retire(value)` has its worker replaced too (`recycled`)."""

    def __init__(self, setup: Callable[..., Callable[[Any], Any]], args: tuple = (), *, workers: int = 1,
                 timeout: float = 120.0):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.setup, self.args, self.n, self.timeout = setup, args, workers, timeout
        # fork: a worker starts in milliseconds with the parent's imports; it touches nothing of the parent's
        # but its own pipe
        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        self.ctx = mp.get_context(method)
        self.workers: list[_Worker] = []
        self.restarts = 0
        self.recycled = 0

    def __enter__(self) -> "WorkerPool":
        for _ in range(self.n):
            self.workers.append(self._start())
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, kill: bool = False) -> None:
        """Stop the workers: each once it has finished its item, or at once with `kill`."""
        for w in self.workers:
            w.stop(kill=kill)
        self.workers = []

    def _start(self) -> _Worker:
        w = _Worker(self.ctx, self.setup, self.args)
        try:
            if not w.conn.poll(self.timeout):
                w.stop(kill=True)
                raise IOAdvisorError(f"a worker did not start within {self.timeout:.0f} s")
            status, value = w.conn.recv()
        except (EOFError, OSError):
            w.proc.join()
            raise IOAdvisorError(f"a worker stopped while starting ({_death(w.proc.exitcode)})") from None
        if status == "setup-error":
            w.stop()
            self.close()
            raise value if isinstance(value, IOAdvisorError) else IOAdvisorError(
                f"a worker could not start: {type(value).__name__}: {value}")
        return w

    def _replace(self, w: _Worker, kill: bool, count: bool = True) -> _Worker:
        w.stop(kill=kill)
        if count:
            self.restarts += 1
        else:
            self.recycled += 1
        nw = self._start()
        self.workers[self.workers.index(w)] = nw
        return nw

    def imap_unordered(self, items: Iterable[Any]) -> Iterator[Outcome]:
        """Hand out `items` one per idle worker; yield each `Outcome` as it comes back."""
        it = iter(items)
        idle = list(self.workers)
        busy: list[_Worker] = []
        more = True
        while True:
            while idle and more:
                try:
                    item = next(it)
                except StopIteration:
                    more = False
                    break
                w = idle.pop()
                w.item, w.started = item, time.monotonic()
                try:
                    w.conn.send(item)
                except OSError:               # died while idle (killed from outside): replace and resend
                    w = self._replace(w, kill=True)
                    w.item, w.started = item, time.monotonic()
                    w.conn.send(item)
                busy.append(w)
            if not busy:
                return
            now = time.monotonic()
            left = min(w.started + self.timeout for w in busy) - now
            ready = _ready([w.conn.fileno() for w in busy] + [w.proc.sentinel for w in busy], max(0.0, left))
            now = time.monotonic()
            for w in list(busy):
                got = None
                if (has_data := w.conn.fileno() in ready) or w.proc.sentinel in ready:
                    try:
                        got = w.conn.recv() if has_data or w.conn.poll() else None
                    except (EOFError, OSError):
                        got = None
                    if got is not None:
                        busy.remove(w)
                        status, value = got
                        item = w.item
                        idle.append(self._replace(w, kill=False, count=False) if status == "retire" else w)
                        yield Outcome(item, None, value) if status == "error" else Outcome(item, value, None)
                        continue
                    w.proc.join(1)
                    if w.proc.is_alive():       # readable but nothing to read yet: look again next round
                        continue
                    busy.remove(w)
                    item, why = w.item, _death(w.proc.exitcode)
                    idle.append(self._replace(w, kill=False))
                    yield Outcome(item, None, f"the worker died ({why})", died=why)
                elif now - w.started >= self.timeout:
                    busy.remove(w)
                    item = w.item
                    idle.append(self._replace(w, kill=True))
                    yield Outcome(item, None, f"gave up after {self.timeout:.0f} s")


def _reopenable(kb: Any) -> bool:
    """Whether a child process opening `kb.file` again reads what `kb` holds: a KB file with nothing left
    uncommitted, or a KB that does not exist (an empty one stands in, in the child as here)."""
    if kb.conn.in_transaction:
        return False
    if kb.path == ":memory:":
        return kb.file != ":memory:" and not os.path.exists(kb.file)
    return os.path.exists(kb.path)


def _kb_worker(work: Callable[..., Any], file: str, reference: bool) -> Callable[[tuple], Any]:
    """In a worker process: the KB opened again, and the handler that runs `work(kb, *item)` on it."""
    from ..kb import KB
    kb = KB.open(file, create=False, reference=reference)
    return lambda item: work(kb, *item)


# an item worked on a KB has no time limit of its own (a large KB's system takes minutes)
KB_ITEM_TIMEOUT = 86400.0


def kb_items(kb: Any, work: Callable[..., Any], items: list[tuple], workers: int | None = None,
             what: str = "item") -> Iterator[tuple[tuple, Any]]:
    """(item, `work(kb, *item)`) for each of `items` (tuples), as each is done. The items are shared out among
    `workers` processes (default: the cores this process may use), handed out in the order given (the caller
    puts the costliest first, so that no worker is left with a long one at the end), where there are several
    and a child can open the KB again (each opens it itself); else they are worked here, in that order. A result
    goes back through a pipe: small and picklable. An item that fails in a worker raises IOAdvisorError naming
    `what` and the item's first element."""
    workers = min(default_workers() if workers is None else workers, len(items))
    if workers < 2 or not _reopenable(kb):
        for item in items:
            yield item, work(kb, *item)
        return
    with WorkerPool(_kb_worker, (work, kb.file, kb.reference is not None), workers=workers,
                    timeout=KB_ITEM_TIMEOUT) as pool:
        try:
            for o in pool.imap_unordered(items):
                if o.error is not None:
                    raise IOAdvisorError(f"{what} {o.item[0]!r}: {o.error}")
                yield o.item, o.result
        except BaseException:
            # ended early (an item's error, a signal, a caller that stopped asking): the workers' items are of no
            # use any more, and a worker would finish its item before it saw the request to stop
            pool.close(kill=True)
            raise
