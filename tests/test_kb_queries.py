"""SQL lives under kb/: the layers above call its store and its query modules (kb/queries.py, kb/fits.py,
kb/archive.py, ...), so what a KB or a published snapshot must hold is declared where the schema is. Must NOT
happen: an `execute`, `executemany` or `executescript` outside ioadvisor/kb/ on a connection or cursor (`conn`,
`cursor`, `cur`, `db`, `<...>.conn`, `<...>.cursor()`, in any chain: `self.conn.cursor().execute`) or with SQL
text written in the call (a string literal, an f-string, or one joined, formatted or %-filled) on any object."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ioadvisor"
# the names a connection or cursor goes by
SQL_HANDLES = {"conn", "connection", "cursor", "cur", "db"}
EXECUTES = ("execute", "executemany", "executescript")


def _names_in_chain(node: ast.expr) -> set[str]:
    """Every name and attribute along a receiver: `self.conn.cursor()` gives {"self", "conn", "cursor"}."""
    out: set[str] = set()
    while True:
        if isinstance(node, ast.Attribute):
            out.add(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Name):
            out.add(node.id)
            return out
        else:
            return out


def _is_text(node: ast.expr) -> bool:
    """SQL written in the call: a str literal, an f-string, or `+` / `%` / `.format` of one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _is_text(node.left) or _is_text(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _is_text(node.func.value)
    return False


def raw_sql_calls(source: str, filename: str = "<text>") -> list[int]:
    """Lines of the execute calls the module docstring forbids outside kb/."""
    lines = []
    for node in ast.walk(ast.parse(source, filename)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in EXECUTES):
            continue
        on_handle = bool(_names_in_chain(node.func.value) & SQL_HANDLES)
        if on_handle or (node.args and _is_text(node.args[0])):
            lines.append(node.lineno)
    return lines


def test_no_raw_sql_outside_kb():
    found = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE).as_posix()
        if rel.startswith("kb/"):
            continue
        lines = raw_sql_calls(p.read_text(encoding="utf-8"), str(p))
        if lines:
            found[rel] = lines
    assert found == {}


def test_the_check_sees_every_spelling_of_a_query():
    caught = ["conn.execute('SELECT 1')", "kb.conn.execute(q)", "self.conn.executemany(q, rows)",
              "kb.conn.cursor().execute(q)", "cursor.execute(q)", "cur.execute(q, args)", "db.executescript(s)",
              "connection.execute(q)", "self.kb.conn.execute(q)", "store.execute('DELETE FROM runs')",
              "anything.execute(f'SELECT {cols} FROM runs')", "x.executemany('INSERT ' + 'INTO t VALUES (?)', r)",
              "x.execute('SELECT {}'.format(c))", "x.execute('SELECT %s' % c)"]
    for text in caught:
        assert raw_sql_calls(text) == [1], text
    # not SQL: a pool's pipe (`w.conn.send`), a task run by name, a query function of kb/
    for text in ("w.conn.send(item)", "pool.execute(task)", "queries.archived_sources(kb, name)"):
        assert raw_sql_calls(text) == [], text


def test_stored_fits_on_a_kb_that_cannot_be_written_are_left_unstored_not_raised(tmp_path):
    """Advice from a read-only KB (a compute node's home, a KB of a schema read as it is) goes on with the fits it
    made in the process: storing them must not raise, and reading them where the table is missing gives none."""
    import sqlite3
    from types import SimpleNamespace

    from ioadvisor.kb import KB
    from ioadvisor.kb import fits as kb_fits
    path = tmp_path / "kb.sqlite"
    with KB.open(path) as kb:
        kb_fits.store_derived(kb, "fits", "S", '["sig"]', "[]")
        kb_fits.store_derived(kb, "evidence", "S", '["sig"]', "{}")
    ro = SimpleNamespace(conn=sqlite3.connect(f"file:{path}?mode=ro", uri=True))
    try:
        kb_fits.store_derived(ro, "fits", "S", '["other"]', "[1]")
        assert kb_fits.load_derived(ro, "fits", "S") == ('["sig"]', "[]")
        assert kb_fits.load_derived(ro, "evidence", "S") == ('["sig"]', "{}")
    finally:
        ro.conn.close()
    bare = SimpleNamespace(conn=sqlite3.connect(":memory:"))
    assert kb_fits.load_derived(bare, "fits", "S") is None
    kb_fits.store_derived(bare, "evidence", "S", '["sig"]', "{}")
    bare.conn.close()
