"""The generic worker pool under the archive scan: results from long-lived workers, a hung item given up after
the time limit with one restart, and a worker that cannot start reported as the error its setup raised."""
from __future__ import annotations

import os
import time

import pytest

from ioadvisor.archive.pool import WorkerPool
from ioadvisor.errors import IOAdvisorError, UsageError


def _square_setup(delay_on: int | None = None):
    def handle(x: int):
        if x == delay_on:
            time.sleep(600)
        return (x * x, os.getpid())
    return handle


def _failing_setup():
    raise UsageError("this setup cannot run here")


def test_long_lived_workers_serve_many_items():
    with WorkerPool(_square_setup, (), workers=2) as pool:
        out = list(pool.imap_unordered(range(40)))
        pids = {w.proc.pid for w in pool.workers}
    assert sorted(o.result[0] for o in out) == [x * x for x in range(40)]
    # 40 items, 2 processes: the workers served them all (no process per item), and none was restarted
    assert {o.result[1] for o in out} <= pids and len(pids) == 2 and pool.restarts == 0


def test_an_item_over_the_time_limit_costs_one_restart_and_the_rest_go_on():
    # the limit (5 s) is far above what a square takes on a loaded machine, and far below the hung item's 600 s
    t0 = time.monotonic()
    with WorkerPool(_square_setup, (3,), workers=2, timeout=5.0) as pool:
        out = {o.item: o for o in pool.imap_unordered(range(8))}
    assert time.monotonic() - t0 < 300                      # not the 600 s the item would have slept
    assert out[3].result is None and "gave up after 5 s" in out[3].error
    assert all(out[x].result[0] == x * x for x in range(8) if x != 3) and pool.restarts == 1


def test_a_worker_that_cannot_start_raises_its_setup_error():
    with pytest.raises(UsageError, match="cannot run here"):
        with WorkerPool(_failing_setup, (), workers=2):
            pass
    with pytest.raises(ValueError):
        WorkerPool(_square_setup, (), workers=0)
    assert issubclass(UsageError, IOAdvisorError)


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_worker_is_replaced_after_a_log_the_library_failed_on_so_fds_do_not_pile_up(tmp_path):
    """The Darshan library leaves a log open when it fails on it (closing it then aborts), so each corrupt log
    used to keep one more file descriptor in its worker. 30 copies of example.darshan cut at byte 8,000 (the
    library opens each and finds its records cut short; a cut inside the header fails before anything is open):
    every one is reported as failed, and no worker ever holds more than 2 file descriptors above a fresh worker's
    count (30 leaked handles would be 30 more)."""
    darshan = pytest.importorskip("darshan")
    from pathlib import Path

    from ioadvisor.archive.worker import Settings, setup
    example = (Path(darshan.__file__).parent / "examples" / "example_logs" / "example.darshan").read_bytes()
    items = []
    for i in range(30):
        p = tmp_path / f"cut{i}.darshan"
        p.write_bytes(example[:8000])
        items.append((str(p), f"h{i}"))
    with WorkerPool(setup, (Settings(),), workers=1) as pool:
        fresh = _open_fds(pool.workers[0].proc.pid)
        most = fresh
        failed = 0
        for o in pool.imap_unordered(items):
            failed += o.result["status"] == "failed" and "truncated" in o.result["error"]
            most = max(most, _open_fds(pool.workers[0].proc.pid))
        assert pool.restarts == 0                 # none crashed: these are replacements, not deaths
    assert failed == 30
    assert most <= fresh + 2, f"a worker held {most} fds, a fresh one {fresh}"


class _Unsendable:
    """A result whose pickling runs out of memory, as a large result does in a worker under its memory limit."""

    def __reduce__(self):
        raise MemoryError


def _unsendable_setup():
    def handle(x: int):
        return _Unsendable() if x == 2 else (x * x, os.getpid())
    return handle


def test_a_worker_out_of_memory_while_sending_is_named_and_replaced(capfd):
    """Out of memory outside the handler (sending item 2's result): the worker ends at once with the code the pool
    names, no traceback of the worker's own exit is printed, one restart, and every other item is served."""
    with WorkerPool(_unsendable_setup, (), workers=1, timeout=300) as pool:
        out = {o.item: o for o in pool.imap_unordered(range(5))}
    assert out[2].result is None and out[2].died == "out of memory"
    assert out[2].error == "the worker died (out of memory)"
    assert [out[x].result[0] for x in (0, 1, 3, 4)] == [0, 1, 9, 16] and pool.restarts == 1
    assert "Traceback" not in capfd.readouterr().err
