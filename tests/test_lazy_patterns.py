"""Patterns a command may never use are compiled on first use, not at import (`util.LazyPattern`): importing the
modules a cold advice imports compiles none of them, and a lazy pattern finds what the compiled one finds."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from ioadvisor.util import LazyPattern

LAZY = {"ioadvisor.util": ("_CONTROL", "_UNPRINTABLE"), "ioadvisor.lustre": ("_CONSTRAINT",),
        "ioadvisor.model.validate": ("_CONTROL", "_CONTROL_TEXT", "_HINT_KEY", "_DATE")}

_PROBE = """
import json, re, sys
compiled = []
plain = re.compile
def counting(pattern, flags=0):
    compiled.append(pattern if isinstance(pattern, str) else repr(pattern))
    return plain(pattern, flags)
re.compile = counting
import importlib
mods = {m: importlib.import_module(m) for m in sys.argv[1:]}
at_import = list(compiled)
from ioadvisor.util import check_line_value, printable
printable("a\\x1bb"); check_line_value("x", "name")
print(json.dumps({"at_import": at_import, "after": compiled,
                  "lazy": {m: {n: getattr(mods[m], n).pattern for n in names} for m, names in %r.items()}}))
""" % (LAZY,)


def test_importing_compiles_no_lazy_pattern():
    out = subprocess.run([sys.executable, "-c", _PROBE, *LAZY], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    lazy = {p for names in got["lazy"].values() for p in names.values()}
    assert len(lazy) == 6                                   # util's _CONTROL and validate's are one pattern
    assert not lazy & set(got["at_import"]), "compiled at import"
    # first use compiles: the two patterns used above appear after the import's
    used = set(got["after"][len(got["at_import"]):])
    assert {got["lazy"]["ioadvisor.util"]["_CONTROL"], got["lazy"]["ioadvisor.util"]["_UNPRINTABLE"]} <= used


def test_a_lazy_pattern_finds_what_the_compiled_one_finds():
    text = "a\x1bb\u202ec --constraint=nvme 2026-11-27"
    for pattern in (r"[\x00-\x1f\u202e]", r"^(?:--constraint=|-C\s*)(.*)$", r"(\d{4})-(\d{2})"):
        lazy, plain = LazyPattern(pattern), re.compile(pattern)
        assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in plain.finditer(text)]
        assert lazy.sub("?", text) == plain.sub("?", text)
        assert lazy.search(text) is not None or plain.search(text) is None
        assert (lazy.match(text) is None) == (plain.match(text) is None)
    assert LazyPattern("(x)").groups == 1
