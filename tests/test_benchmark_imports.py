"""The benchmark scripts run by hand (their figures are in README.md), not by the suite: what they import of the
package must still be there, or a figure cannot be re-measured with the command its row names. Every
`from ioadvisor... import NAME` in benchmarks/, at any depth of the script, is resolved here."""
from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _imports() -> list[tuple[str, int, str, str]]:
    out = []
    for f in sorted(BENCH.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "ioadvisor":
                out += [(f.name, node.lineno, node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                out += [(f.name, node.lineno, a.name, "") for a in node.names if a.name.split(".")[0] == "ioadvisor"]
    return out


IMPORTS = _imports()


def test_the_benchmarks_import_the_package():
    assert len({f for f, *_ in IMPORTS}) >= 5        # the scan found them: bench_scale, bench_kb, ...


@pytest.mark.parametrize("script,line,module,name", IMPORTS, ids=[f"{f}:{n}" for f, n, *_ in IMPORTS])
def test_what_a_benchmark_imports_exists(script, line, module, name):
    mod = importlib.import_module(module)
    if name and name != "*":
        assert hasattr(mod, name) or importlib.util.find_spec(f"{module}.{name}") is not None, \
            f"benchmarks/{script}:{line}: {module} has no {name}"
