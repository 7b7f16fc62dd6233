"""No function in the package is longer than 60 lines unless it says why it must be long, and at most 8 do.

A function's length is `end_lineno - lineno + 1` as `ast` reports it: the `def` line through the last line of the
body, docstring included (decorators not). A long function is allowed when the first line of its body, a comment
or the docstring's first line, carries the marker `long because:` followed by the reason.

Functions that are long today without a reason sit in `NOT_YET_SPLIT`; the list may only shrink: a listed function
that is no longer long (or no longer exists) fails the test until its entry is removed.
"""
from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ioadvisor"
MAX_LINES = 60
MAX_EXCUSED = 8
MARKER = "long because:"

#: long functions not split yet, as "module path:qualified name" (remove an entry when its function is split)
NOT_YET_SPLIT: frozenset[str] = frozenset()


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(source).readline))


def _first_body_line(fn: ast.FunctionDef | ast.AsyncFunctionDef, tokens: list[tokenize.TokenInfo]) -> str:
    """The first comment or docstring line inside the function's body ('' when it starts with code)."""
    first = fn.body[0]
    # the signature ends at the first ':' outside brackets after `def`; comments from there to the first
    # statement open the body
    depth, sig_end = 0, None
    for tok in tokens:
        if tok.start < (fn.lineno, fn.col_offset):
            continue
        if sig_end is None:
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
            elif tok.type == tokenize.OP and tok.string == ":" and depth == 0:
                sig_end = tok.end
            continue
        if tok.start >= (first.lineno, first.col_offset):
            break
        if tok.type == tokenize.COMMENT and tok.start[0] > sig_end[0]:
            return tok.string
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        text = first.value.value.strip()
        return text.splitlines()[0] if text else ""
    return ""


def _long_in(source: str, rel: str) -> dict[str, tuple[int, str]]:
    """The functions over MAX_LINES lines in one module: key -> (length, first comment or docstring line)."""
    tokens = _tokens(source)
    found = {}

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + child.name
                length = child.end_lineno - child.lineno + 1
                if length > MAX_LINES:
                    found[f"{rel}:{name}"] = (length, _first_body_line(child, tokens))
                walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return found


def _long_functions() -> dict[str, tuple[int, str]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found.update(_long_in(path.read_text(encoding="utf-8"), path.relative_to(PACKAGE).as_posix()))
    return found


LONG = _long_functions()


def _excused(first_line: str) -> bool:
    head, sep, reason = first_line.lower().partition(MARKER)
    return bool(sep) and bool(reason.strip())


def test_the_measure_counts_lines_of_methods_and_inner_functions() -> None:
    """61 lines (def + 60 statements) is long, 60 is not; methods and inner functions are found by their path."""
    body = "        x = 1\n"
    src = ("class C:\n    def long(self):\n" + body * 60 + "    def short(self):\n" + body * 59
           + "def outer():\n    async def inner():\n" + body * 60 + "    return inner\n")
    assert {k: n for k, (n, _) in _long_in(src, "m.py").items()} == {"m.py:C.long": 61, "m.py:outer": 63,
                                                                      "m.py:outer.inner": 61}


def test_marker_read_from_comment_or_docstring() -> None:
    for src, want in [
        ('def f():\n    """Long because: one table, read top to bottom."""\n    pass\n', True),
        ("def f(a,\n      b):\n    # long because: one state machine\n    pass\n", True),
        ('def f():\n    """Does things.\n\n    long because: no"""\n    pass\n', False),  # not the first line
        ("def f():\n    pass  # long because: x\n", False),  # a trailing comment is not the body's first line
        ('def f():\n    """long because:"""\n', False),  # a marker with no reason
        ("def f(a,  # long because: in the signature\n      b):\n    pass\n", False),
        ("def f() -> dict[str,\n                 int]:\n\n    # Long because: a table\n    return {}\n", True),
    ]:
        fn = ast.parse(src).body[0]
        line = _first_body_line(fn, _tokens(src))
        assert _excused(line) is want, (src, line)


def test_no_long_function_without_a_reason() -> None:
    unexplained = sorted(f"{key} ({n} lines)" for key, (n, first) in LONG.items()
                         if not _excused(first) and key not in NOT_YET_SPLIT)
    assert not unexplained, (f"functions over {MAX_LINES} lines: split them, or start the body with a comment "
                             f"'# {MARKER} <reason>': " + ", ".join(unexplained))


def test_at_most_eight_long_functions_with_a_reason() -> None:
    excused = sorted(key for key, (_, first) in LONG.items() if _excused(first))
    assert len(excused) <= MAX_EXCUSED, f"{len(excused)} long functions say why, at most {MAX_EXCUSED}: {excused}"


def test_the_list_of_long_functions_only_shrinks() -> None:
    stale = sorted(key for key in NOT_YET_SPLIT if key not in LONG or _excused(LONG[key][1]))
    assert not stale, f"no longer long (or now explained): remove from NOT_YET_SPLIT: {stale}"
