"""A command killed outright (SIGKILL: no handler runs) takes its worker and reader processes with it: none of
them may still be alive 2 s later. Before, the reader of a large `kb import` stayed blocked in a pipe write for
60 s and more, and the workers of `archive scan` waited for work that would never come."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from darshan_copies import wheel_logs

EXE = Path(sys.executable).parent / "ioadvise"
HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads process trees from /proc")


def _children(pid: int) -> set[int]:
    """Every process below `pid` (children of all its threads, and theirs)."""
    out: set[int] = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tasks:
        try:
            kids = Path(f"/proc/{pid}/task/{t}/children").read_text().split()
        except OSError:
            continue
        for k in map(int, kids):
            out |= {k} | _children(k)
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")       # a zombie has ended


def _kill_with_children(args: list[str], n: int, timeout: float = 90) -> tuple[set[int], list[int]]:
    """Start `ioadvise ARGS`, SIGKILL it as soon as it has `n` child processes; (children, those alive 2 s
    later)."""
    p = subprocess.Popen([str(EXE), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kids: set[int] = set()
    end = time.monotonic() + timeout
    try:
        while len(kids) < n:
            assert p.poll() is None, f"ended before it had {n} child process(es): {p.stderr.read().decode()}"
            assert time.monotonic() < end, f"no {n} child process(es) within {timeout} s"
            kids = _children(p.pid)
            time.sleep(0.01)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        time.sleep(2)
        return kids, sorted(k for k in kids if _alive(k))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for k in kids:
            if _alive(k):
                os.kill(k, signal.SIGKILL)


def test_kb_import_reader_ends_with_the_killed_import(tmp_path, kb_path):
    # from 8 MiB (ingest.csvrows.ASIDE_BYTES) a second process reads while the first stores
    rows = "".join(f"x,sysK,lustre,8,write,POSIX,fpp,,1,{i % 4096 + 1},,,,,{i + 1},MB/s,\n" for i in range(400_000))
    f = tmp_path / "big.csv"
    f.write_text(HEADER + "\n" + rows)
    assert f.stat().st_size > 16 << 20
    kids, alive = _kill_with_children(["kb", "import", "--kb", str(kb_path), str(f)], 1)
    assert kids and alive == [], (kids, alive)


def test_archive_scan_workers_end_with_the_killed_scan(tmp_path, kb_path):
    arch = tmp_path / "arch"
    arch.mkdir()
    for p in wheel_logs():
        (arch / p.name).write_bytes(p.read_bytes())
    kids, alive = _kill_with_children(["archive", "scan", str(arch), "--kb", str(kb_path), "-j", "2"], 2)
    assert len(kids) >= 2 and alive == [], (kids, alive)


def test_diagnose_log_reader_ends_with_the_killed_diagnose(tmp_path):
    log = next(p for p in wheel_logs() if p.name == "example.darshan")
    kids, alive = _kill_with_children(["diagnose", str(log), "--json"], 1)
    assert kids and alive == [], (kids, alive)
