"""The package's modules form layers: a module imports only from its own layer or the layers below it, and no
two modules import each other, directly or round a longer circle.

Every `import` and `from ... import` statement counts, wherever it stands (inside a function too: an import
delayed for start-up time is still a dependency). `importlib.import_module` calls only name a package's own
submodules (importers, cli commands, model's lazy names), which the layers allow.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ioadvisor"

#: from the bottom up: (layer, module name prefixes). A module belongs to the layer of its longest prefix.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # errors, the package's data files, reading input files, small helpers
    ("base", ("ioadvisor", "ioadvisor.errors", "ioadvisor.resources", "ioadvisor.inputs", "ioadvisor.util")),
    # runs, workloads, units and their checks: the domain, no I/O
    ("model", ("ioadvisor.model",)),
    # what a job asks for and what goes into its script: MPI-IO hints, the job description, job-script text
    # read and rewritten (pure functions of text; submitting to Slurm sits with the tools)
    ("job", ("ioadvisor.mpiio", "ioadvisor.job", "ioadvisor.slurm.jobscript", "ioadvisor.slurm.rewrite")),
    # a center's file systems, tiers and limits, and the evidence flags it allows
    ("center", ("ioadvisor.center",)),
    # a Darshan log read into a summary, a package of its own: the darshan importer, the diagnosis and the
    # archive scan all read logs through it, and it imports none of them
    ("logs", ("ioadvisor.darshanlog",)),
    # file formats read into runs
    ("importers", ("ioadvisor.importers",)),
    # the knowledge base: store, migrations, the reference layer (built from the shipped canonical CSV files);
    # it stores runs prepared above it and knows neither centers nor the ingestion
    ("kb", ("ioadvisor.kb",)),
    # files into the KB: read by an importer, flagged by the center's evidence rules, stored in batches
    ("ingest", ("ioadvisor.ingest",)),
    ("predict", ("ioadvisor.predict",)),
    ("advise", ("ioadvisor.advise",)),
    ("diagnose", ("ioadvisor.diagnose",)),
    # built on the above: archive scans, benchmarks, the site, Slurm submission; `advise.validate` checks the
    # advice against the diagnosis's size table, so it stands above both
    ("tools", ("ioadvisor.archive", "ioadvisor.bench", "ioadvisor.docs", "ioadvisor.slurm",
               "ioadvisor.advise.validate")),
    ("cli", ("ioadvisor.cli", "ioadvisor.__main__", "ioadvisor.console")),
)

# imports allowed to break a rule, each with the reason (none: the last, kb.reference -> importers, went when the
# KB moved above the importers and the center below both)
KNOWN: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        parts = list(p.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


MODULES = _modules()


def _target(name: str) -> str | None:
    """The package module `name` is (or is a name in), or None outside the package."""
    if name != "ioadvisor" and not name.startswith("ioadvisor."):
        return None
    while name not in MODULES:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(module: str) -> set[str]:
    """The package modules `module` imports anywhere in its text."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            # `from pkg import sub` imports the submodule pkg.sub; `from mod import name` imports mod
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found.update(t for t in map(_target, names) if t is not None and t != module)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def layer_of(module: str) -> int:
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    assert found is not None, f"{module} is in no layer: add it to LAYERS"
    return found


def test_reader_sees_function_level_and_relative_imports():
    """The reader must see what the rules are about, or the tests below pass on nothing."""
    assert "ioadvisor.darshanlog.summary" in GRAPH["ioadvisor.diagnose"]        # from ..darshanlog.summary import
    assert "ioadvisor.center" in GRAPH["ioadvisor.diagnose"]                    # inside a function
    assert "ioadvisor.kb.store" in GRAPH["ioadvisor.kb"]                        # from .store in __init__
    assert "ioadvisor.errors" in GRAPH["ioadvisor.model.units"]
    assert len(MODULES) > 80 and all(layer_of(m) >= 0 for m in MODULES)


def test_no_upward_import():
    upward = [f"{a} ({LAYERS[layer_of(a)][0]}) imports {b} ({LAYERS[layer_of(b)][0]})"
              for a in sorted(GRAPH) for b in sorted(GRAPH[a])
              if layer_of(b) > layer_of(a) and (a, b) not in KNOWN]
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root), on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w), on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_circle_finder_finds_a_circle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(g) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    graph = {a: {b for b in bs if (a, b) not in KNOWN} for a, bs in GRAPH.items()}
    circles = _circles(graph)
    assert not circles, "modules importing each other:\n" + "\n".join(
        " <-> ".join(c) + ": " + ", ".join(f"{a} -> {b}" for a in c for b in sorted(graph[a]) if b in c)
        for c in circles)


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m == goal:
            return True
        if m not in seen:
            seen.add(m)
            todo.extend(graph[m])
    return False


def test_known_exceptions_still_break_a_rule():
    """An exception left after its import is gone (or no longer upward nor in a circle) would let such an import
    come back unnoticed."""
    for a, b in sorted(KNOWN):
        assert b in GRAPH[a], f"{a} no longer imports {b}: remove it from KNOWN"
        assert layer_of(b) > layer_of(a) or _reaches(GRAPH, b, a), f"{a} -> {b} breaks no rule: remove it from KNOWN"


def test_the_kb_knows_neither_centers_nor_the_ingestion():
    """The KB stores runs prepared above it (ingest reads files with the importers and flags runs by the
    center's evidence rules): no module of the KB imports the center or the ingestion, and of the importers only
    the reference build reads one (the shipped canonical CSV files, data/reference, through the CSV importer)."""
    kb = [m for m in MODULES if m == "ioadvisor.kb" or m.startswith("ioadvisor.kb.")]

    def under(b: str, *prefixes: str) -> bool:
        return any(b == p or b.startswith(p + ".") for p in prefixes)
    found = [f"{a} imports {b}" for a in sorted(kb) for b in sorted(GRAPH[a])
             if under(b, "ioadvisor.center", "ioadvisor.ingest")
             or (under(b, "ioadvisor.importers") and a != "ioadvisor.kb.reference")]
    assert "ioadvisor.kb.store" in kb and not found, "\n".join(found)
    assert layer_of("ioadvisor.kb.store") < layer_of("ioadvisor.ingest")
    assert "ioadvisor.kb.store" in GRAPH["ioadvisor.ingest"]          # the reader sees the ingestion's imports


def test_diagnosis_rules_do_not_open_the_kb():
    """The rules get what they know from the KB in their Context (diagnose.facts reads it for them): neither
    rules.py nor anything it imports, directly or further down, is a module of the KB."""
    rules = "ioadvisor.diagnose.rules"
    kb = sorted(m for m in MODULES if m == "ioadvisor.kb" or m.startswith("ioadvisor.kb."))
    assert "ioadvisor.kb.store" in kb
    assert not [m for m in kb if _reaches(GRAPH, rules, m)], f"{rules} reaches the KB's modules"
    assert _reaches(GRAPH, "ioadvisor.diagnose", "ioadvisor.kb.store")     # the caller reads the KB instead
