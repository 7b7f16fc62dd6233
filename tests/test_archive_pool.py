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
            time.sleep(30)
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
    t0 = time.monotonic()
    with WorkerPool(_square_setup, (3,), workers=2, timeout=1.0) as pool:
        out = {o.item: o for o in pool.imap_unordered(range(8))}
    assert time.monotonic() - t0 < 20                       # not the 30 s the item would have slept
    assert out[3].result is None and "gave up after 1 s" in out[3].error
    assert all(out[x].result[0] == x * x for x in range(8) if x != 3) and pool.restarts == 1


def test_a_worker_that_cannot_start_raises_its_setup_error():
    with pytest.raises(UsageError, match="cannot run here"):
        with WorkerPool(_failing_setup, (), workers=2):
            pass
    with pytest.raises(ValueError):
        WorkerPool(_square_setup, (), workers=0)
    assert issubclass(UsageError, IOAdvisorError)
