"""PyDarshan's backend, imported with its C declarations parsed once per installation instead of once per process.

Importing `darshan.backend.cffi_backend` hands the Darshan library's C declarations to `cffi.FFI().cdef`, which
imports pycparser (its lexer compiles one large regular expression) and parses them: most of the import's time, and
on the path of every `ioadvise diagnose`. cffi can instead build the same declarations, already parsed, from the
tables its recompiler writes ("out-of-line ABI mode"), and those parse C type names in C without pycparser. Here
the backend is imported with `cffi.FFI` standing in for a moment: the declarations PyDarshan hands to `cdef` are
looked up by their hash in a cache file of those tables, which is written the first time (after one ordinary
parse). The backend's own functions then read the log as always, through the same library and declarations.

The cache file holds only literals (bytes, ints and tuples, read with `ast.literal_eval`, never executed), named by
the hash of the declarations, cffi's version and this format's; it lives in the package's cache directory
(`util.cache_dir`: $XDG_CACHE_HOME/ioadvisor, or ~/.cache/ioadvisor) and is written atomically. Whatever fails here (no cache directory, a file that does not
parse) falls back to the ordinary parse. Only the one-log reading child and the archive scan's workers use this:
processes of their own, where nothing else shares PyDarshan's FFI object.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

FORMAT = "1"               # of the cache file; part of its name
MODULE = "_ioadvisor_darshan_ffi"


def _key(csource: str) -> str:
    import cffi
    return hashlib.sha256(f"{FORMAT}\0{cffi.__version__}\0{csource}".encode()).hexdigest()[:24]


def _load(path: Path) -> Any:
    """The parsed declarations of the cache file `path` as an FFI object; None if it is missing or not one."""
    import ast
    import _cffi_backend
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        (call,) = [n.value for n in tree.body if isinstance(n, ast.Assign)]
        if not (isinstance(call, ast.Call) and [ast.literal_eval(a) for a in call.args] == [MODULE]):
            return None
        return _cffi_backend.FFI(MODULE, **{k.arg: ast.literal_eval(k.value) for k in call.keywords})
    except (OSError, ValueError, SyntaxError, TypeError, AttributeError, MemoryError, RecursionError,
            _cffi_backend.FFI.error):
        return None


def _store(path: Path, parsed: Any) -> None:
    """Write the tables of the parsed declarations `parsed` (a cffi.FFI after cdef) to `path`, atomically; a cache
    that cannot be written is left alone."""
    import io
    from cffi.recompiler import make_py_source
    out = io.StringIO()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        make_py_source(parsed, MODULE, out)
        tmp.write_text(out.getvalue(), encoding="utf-8")
        os.replace(tmp, path)
    except Exception:          # the cache is an optimisation: never a reason to fail the read
        try:
            tmp.unlink()
        except OSError:
            pass


class _Declarations:
    """What `cffi.FFI()` returns while PyDarshan's backend is imported: on `cdef(source)` it becomes the parsed
    declarations of `source`, from the cache or from one ordinary parse (stored for the next time); every other
    attribute is the parsed FFI's."""

    def __init__(self, real_ffi: Any, directory: Path):
        self._real_ffi, self._dir, self.ffi = real_ffi, directory, None

    def cdef(self, csource: str, *args: Any, **kwargs: Any) -> None:
        path = self._dir / f"darshan-ffi-{_key(csource)}.py"
        self.ffi = None if args or kwargs else _load(path)
        if self.ffi is None:
            self.ffi = self._real_ffi()
            self.ffi.cdef(csource, *args, **kwargs)
            if not (args or kwargs):
                _store(path, self.ffi)

    def __getattr__(self, name: str) -> Any:
        if self.ffi is None:
            raise AttributeError(name)
        return getattr(self.ffi, name)


def import_cffi_backend() -> Any:
    """`darshan.backend.cffi_backend`, imported with its declarations from the cache (see the module's text);
    raises what that import raises. A backend already imported is returned as it is."""
    name = "darshan.backend.cffi_backend"
    if name in sys.modules:
        return sys.modules[name]
    from ..util import cache_dir
    directory = cache_dir()
    if directory is None:              # no usable cache directory: the ordinary parse
        from darshan.backend import cffi_backend
        return cffi_backend
    import cffi
    real, made = cffi.FFI, []

    def declarations(*args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            return real(*args, **kwargs)
        made.append(_Declarations(real, directory))
        return made[-1]

    cffi.FFI = declarations
    try:
        from darshan.backend import cffi_backend
    finally:
        cffi.FFI = real
    # the backend's functions look its FFI up by this name when called: from now on, the parsed one itself
    if isinstance(cffi_backend.ffi, _Declarations):
        cffi_backend.ffi = cffi_backend.ffi.ffi
    return cffi_backend
