"""The plain-text table and line wrapping `kb list` prints with (ioadvisor.cli.text)."""
from __future__ import annotations

from ioadvisor.cli.text import cell_width, fit, table, terminal_width, wrap

COLS = ("id", "nodes", "value", "citation")
ROWS = [("aaaa", "1", "170.4 ops/s", "Table 2"), ("bbbb", "16", "1,500.0 ops/s", "Section 2.2 text (Figure 3)")]


def test_columns_keep_their_width_and_numbers_go_right():
    lines = table(COLS, ROWS, right=("nodes", "value"), shrink="citation", width=200)
    assert lines[0] == "id    nodes          value  citation"
    # the rule spans every column and the gaps: 4 + 5 + 13 + 27 + 3 gaps of 2 = 55
    assert lines[1] == "─" * 55
    assert lines[2] == "aaaa      1    170.4 ops/s  Table 2"          # no trailing spaces
    assert lines[3] == "bbbb     16  1,500.0 ops/s  Section 2.2 text (Figure 3)"


def test_only_the_shrinking_column_gives_way_and_says_it_was_cut():
    lines = table(COLS, ROWS, right=("nodes", "value"), shrink="citation", width=40)
    assert all(cell_width(ln) <= 40 for ln in lines)
    # 40 - (4 + 5 + 13 + 3 gaps of 2) = 12 cells for the citation: 11 of the text and the ellipsis
    assert lines[3] == "bbbb     16  1,500.0 ops/s  Section 2.2…"
    assert lines[2].endswith("Table 2")                                 # what fits is not cut
    assert lines[1] == "─" * 40
    # never narrower than its name: at 20 columns the table is 4 + 5 + 13 + 8 + 6 = 36 wide, not cut to nothing
    narrow = table(COLS, ROWS, right=("nodes", "value"), shrink="citation", width=20)
    assert narrow[0].endswith("citation") and narrow[3].endswith("Section…")
    assert narrow[1] == "─" * 36 and cell_width(narrow[3]) == 36


def test_wide_characters_take_two_cells():
    assert cell_width("日本語") == 6 and cell_width("e\u0301") == 1
    assert fit("日本語", 5) == "日本…" and cell_width(fit("日本語", 5)) == 5
    assert fit("日本語", 6) == "日本語"
    # 12 - (2 + a gap of 2) = 8 cells: 日本語の is 8, so 日本語 and the ellipsis (7)
    lines = table(("id", "citation"), [("a", "日本語の表")], shrink="citation", width=12)
    assert lines[2] == "a   日本語…" and cell_width(lines[2]) == 11


def test_wrap_breaks_at_spaces_and_cuts_only_a_word_longer_than_a_line():
    text = "21 run(s), first 6 shown; in every row shown: system HA8000, api POSIX"
    lines = wrap(text, 30)
    assert " ".join(lines) == text and all(len(ln) <= 30 for ln in lines)
    assert lines == ["21 run(s), first 6 shown; in", "every row shown: system", "HA8000, api POSIX"]
    assert wrap("x " + "y" * 25, 10) == ["x", "y" * 10, "y" * 10, "y" * 5]
    assert wrap(text, 200) == [text]


def test_width_is_columns_else_80_without_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "123")
    assert terminal_width() == 123
    monkeypatch.setenv("COLUMNS", "wide")
    import os

    def no_terminal(fd: int):
        raise OSError("not a terminal")
    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    assert terminal_width() == 80
