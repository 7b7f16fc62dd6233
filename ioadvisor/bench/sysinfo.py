"""What the machine really provides: file system type from statfs, memory size, cache dropping."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
from pathlib import Path

# statfs f_type magic numbers (linux/magic.h, ROMIO ad_fstype.c, Lustre and BeeGFS client headers)
FS_MAGIC = {
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",
    0x19830326: "beegfs",
    0x6969: "nfs",
    0x58465342: "xfs",
    0xAAD7AAEA: "panfs",
    0xDA05AD10: "daos",
    0x65735546: "fuse",
    0xEF53: "ext4",
    0x01021994: "tmpfs",
    0x9123683E: "btrfs",
    0x794C7630: "overlayfs",
    0x2FC12FC1: "zfs",
    0xFF534D42: "cifs",
}


class _Statfs(ctypes.Structure):
    # struct statfs on 64-bit Linux: f_type comes first and is a long; the rest is not needed here
    _fields_ = [("f_type", ctypes.c_long), ("f_bsize", ctypes.c_long), ("_rest", ctypes.c_byte * 256)]


def statfs_magic(path: str | os.PathLike) -> int | None:
    """The statfs `f_type` of the file system holding `path` (None if it cannot be read)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        buf = _Statfs()
        if libc.statfs(os.fsencode(str(path)), ctypes.byref(buf)) == 0:
            return buf.f_type & 0xFFFFFFFF
    except (OSError, AttributeError):
        pass
    try:  # coreutils fallback
        out = subprocess.run(["stat", "-f", "-c", "%t", str(path)], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            return int(out.stdout.strip(), 16)
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return None


def fs_type(path: str | os.PathLike) -> tuple[str | None, str | None]:
    """(type name, hex magic) of the file system holding `path`; an unknown magic is named by its hex value."""
    magic = statfs_magic(path)
    if magic is None:
        return None, None
    return FS_MAGIC.get(magic, f"unknown-{magic:#x}"), f"{magic:#x}"


def mount_point(path: str | os.PathLike) -> str:
    """The mount point that holds `path`."""
    p = Path(os.path.realpath(path))
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return str(p)


def mem_total(meminfo: str = "/proc/meminfo") -> int | None:
    """MemTotal in bytes, or None where /proc/meminfo is not readable."""
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def drop_caches() -> None:
    """Write back dirty pages and drop the page cache, dentries and inodes (root only).

    Raises PermissionError when not root and OSError when the kernel refuses (e.g. a read-only /proc/sys).
    """
    if os.geteuid() != 0:
        raise PermissionError("dropping caches needs root")
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
