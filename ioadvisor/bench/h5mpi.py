"""What parallel HDF5 really did, from the HDF5 library that h5py loaded (ctypes; h5py does not expose these).

- `file_hints(f)`: the MPI-IO hints in effect on the `MPI_File` the `mpio` driver opened. h5py's own
  `FileID.get_vfd_handle()` returns that handle cut to a C int (MPICH's `MPI_File` is a pointer), and the
  file access property list only echoes the `MPI_Info` that was passed in, so the handle is taken with
  `H5Fget_vfd_handle` and handed to `MPI_File_get_info` through mpi4py.
- `actual_io_mode(dxpl_id)`: `H5Pget_mpio_actual_io_mode` after a transfer, because HDF5 silently falls back
  to independent I/O when it cannot do a collective one (and says why in `H5Pget_mpio_no_collective_cause`).

Every function returns None when the library or a symbol cannot be found (not Linux, a static build): the
kernel then records nothing rather than a guess.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache
from typing import Any

# H5D_mpio_actual_io_mode_t (H5Ppublic.h)
IO_MODES = {0: "independent", 1: "chunk-independent", 2: "chunk-collective", 3: "chunk-mixed",
            4: "contiguous-collective"}
# H5D_mpio_no_collective_cause_t bits (H5Ppublic.h, HDF5 1.10)
NO_COLLECTIVE_CAUSES = {0x01: "independent I/O was requested", 0x02: "datatype conversion",
                        0x04: "data transforms", 0x08: "MPI-POSIX driver",
                        0x10: "dataspace neither simple nor scalar", 0x20: "not contiguous or chunked",
                        0x40: "filters (parallel writes)", 0x80: "external file storage"}


@lru_cache(maxsize=1)
def _lib() -> Any:
    """The HDF5 shared library mapped into this process by h5py (its symbols are not global); None if not
    found or of another version than h5py's."""
    import h5py  # noqa: F401  (maps the library)
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "/libhdf5" in line}
    except OSError:
        return None
    for path in sorted(paths):
        name = path.rsplit("/", 1)[-1]
        if "_hl" in name or ".so" not in name:
            continue
        try:
            lib = ctypes.CDLL(path)
            lib.H5Fget_vfd_handle.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]
            lib.H5Fget_vfd_handle.restype = ctypes.c_int
            lib.H5Pget_mpio_actual_io_mode.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_int)]
            lib.H5Pget_mpio_actual_io_mode.restype = ctypes.c_int
            lib.H5Pget_mpio_no_collective_cause.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_uint32),
                                                            ctypes.POINTER(ctypes.c_uint32)]
            lib.H5Pget_mpio_no_collective_cause.restype = ctypes.c_int
        except (OSError, AttributeError):
            continue
        if _same_version(lib):
            return lib
    return None


def _same_version(lib: Any) -> bool:
    import h5py
    v = [ctypes.c_uint() for _ in range(3)]
    if lib.H5get_libversion(*(ctypes.byref(x) for x in v)) < 0:
        return False
    return tuple(x.value for x in v) == tuple(h5py.version.hdf5_version_tuple[:3])


def file_hints(f: Any) -> dict[str, str] | None:
    """MPI_File_get_info on the file handle of an h5py File opened with driver='mpio'."""
    try:
        return _file_hints(f)
    except Exception:   # introspection only: a benchmark must not fail because of it
        return None


def _file_hints(f: Any) -> dict[str, str] | None:
    lib = _lib()
    if lib is None:
        return None
    from mpi4py import MPI
    if not hasattr(MPI.File, "fromhandle"):  # mpi4py < 4
        return None
    fapl = f.id.get_access_plist()
    ptr = ctypes.c_void_p()
    if lib.H5Fget_vfd_handle(f.id.id, fapl.id, ctypes.byref(ptr)) < 0 or not ptr.value:
        return None
    handle = ctypes.c_void_p.from_address(ptr.value).value   # the driver hands out an MPI_File *
    if not handle:
        return None
    fh = MPI.File.fromhandle(handle)   # borrowed: HDF5 closes it
    info = fh.Get_info()
    try:
        return {info.Get_nthkey(i): info.Get(info.Get_nthkey(i)) for i in range(info.Get_nkeys())}
    finally:
        info.Free()


def actual_io_mode(dxpl_id: int) -> tuple[str, list[str]] | None:
    """(mode, causes) of the last transfer done with this dataset transfer property list."""
    try:
        lib = _lib()
    except Exception:
        return None
    if lib is None:
        return None
    mode = ctypes.c_int()
    if lib.H5Pget_mpio_actual_io_mode(dxpl_id, ctypes.byref(mode)) < 0:
        return None
    local, glob = ctypes.c_uint32(), ctypes.c_uint32()
    causes: list[str] = []
    if lib.H5Pget_mpio_no_collective_cause(dxpl_id, ctypes.byref(local), ctypes.byref(glob)) >= 0:
        causes = [text for bit, text in NO_COLLECTIVE_CAUSES.items() if (local.value | glob.value) & bit]
    return IO_MODES.get(mode.value, f"mode {mode.value}"), causes
