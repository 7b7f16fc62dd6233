"""Lustre striping of a benchmark's directory: `lfs setstripe` gives the directory the default layout every file
created in it then gets (POSIX, MPI-IO and HDF5 alike), and `lfs getstripe -d` reads back what it holds, so the
result records the striping the files really had."""
from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

from ..lustre import Setstripe
from . import BenchError

_COUNT = re.compile(r"stripe_count:\s*(-?\d+)")
_SIZE = re.compile(r"stripe_size:\s*(\d+)")


def parse_dir_stripe(text: str) -> tuple[int | None, int | None]:
    """(stripe count, stripe size) from `lfs getstripe -d DIR`; None for what it does not state, or states as 0
    (the file system's default)."""
    c, s = _COUNT.search(text), _SIZE.search(text)
    count = int(c.group(1)) if c else None
    size = int(s.group(1)) if s else None
    return (count if count else None), (size if size else None)


def stripe_directory(directory: str, ftype: str | None, count: int = 0, size: int = 0) -> tuple[dict[str, Any], str | None]:
    """Give `directory` `count` stripes of `size` bytes (0: leave that part as it is) where it is on Lustre, and
    return ({stripe_count, stripe_size} read back, or {} where nothing can be read) and a warning, if any.

    Off Lustre nothing can be striped: the request is reported in the warning and no stripe count is recorded.
    On Lustre a request that `lfs` cannot carry out raises BenchError, so no run is filed under a striping it
    did not have."""
    asked = bool(count or size)
    if ftype != "lustre":
        if asked:
            return {}, (f"stripe_count/stripe_size: {directory} is on {ftype or 'an unknown file system'}, not "
                        f"Lustre: its files were not striped as asked and the run records no stripe count")
        return {}, None
    lfs = shutil.which("lfs")
    if lfs is None:
        if asked:
            raise BenchError(f"{directory} is on Lustre but lfs is not on PATH: cannot set the stripe count")
        return {}, None
    if asked:
        try:
            cmd = Setstripe(directory, count or None, size or None).argv(lfs)
        except ValueError as e:
            raise BenchError(f"{directory}: {e}") from None
        _run(cmd)
    got = _run([lfs, "getstripe", "-d", directory], check=asked)
    count_got, size_got = parse_dir_stripe(got)
    return {"stripe_count": count_got, "stripe_size": size_got}, None


def _run(cmd: list[str], check: bool = True) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BenchError(f"lfs {' '.join(cmd[1:])}: {e}") from None
    if p.returncode != 0:
        if not check:
            return ""
        raise BenchError(f"lfs {' '.join(cmd[1:])}: {p.stderr.strip() or f'exit code {p.returncode}'}")
    return p.stdout
