"""The one rule by which the guide prints a string that comes from a user (a run's command line, notes,
citations, a center file's texts, a Darshan log's executable name), in HTML and in Markdown alike:

- text is text: in HTML it is escaped by the templates' autoescaping; in Markdown every character that Markdown
  or HTML would read as markup is escaped (`md_text`), so no link, image, emphasis, code span or tag can start
  or end inside it, and a line break cannot start a new block;
- code is code: a Markdown code span fenced by a longer run of backquotes than any inside it, padded with
  spaces where it starts or ends with one (CommonMark 6.1, which Python-Markdown reads the same way), so no
  content closes it (`md_code`); a fenced block likewise (`md_block`); in HTML a <code> element of the escaped
  text;
- a link target is either relative or http(s) (`href`); anything else (javascript:, data:, vbscript:, ...)
  becomes "#", and characters that could end the target early are percent-encoded.

Both formats' Jinja filters (`code`, `command`, `block`, `href`) are built from these functions."""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

# characters a backslash escapes in CommonMark (any ASCII punctuation) and in Python-Markdown (MkDocs), with the
# `tables` extension's `|`: everything that opens or closes inline markup, a table cell or an attribute list
_MD_BACKSLASH = frozenset("\\`*_[]{}#|")
# the rest is escaped as an HTML character reference, which both read: `<` and `>` (tags, autolinks); `&` only
# where it would start a character reference, so plain text keeps its ampersands
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
# line breaks and other control characters would end a list item or a table row: shown as one space
_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]+")
_SCHEME = re.compile(r"^[\x00-\x20]*([A-Za-z][A-Za-z0-9+.\-]*):")
SAFE_SCHEMES = ("http", "https")


def one_line(v: Any) -> str:
    return _CONTROL.sub(" ", str(v))


def md_text(v: Any) -> str:
    """`v` as Markdown text that renders as exactly its characters (control characters as spaces)."""
    s = _ENTITY.sub("&amp;", one_line(v))
    out = []
    for c in s:
        if c in _MD_BACKSLASH:
            out.append("\\" + c)
        elif c == "<":
            out.append("&lt;")
        elif c == ">":
            out.append("&gt;")
        else:
            out.append(c)
    return "".join(out)


def _longest_run(s: str, ch: str = "`") -> int:
    return max((len(m) for m in re.findall(re.escape(ch) + "+", s)), default=0)


def md_code(v: Any, cell: bool = False) -> str:
    """`v` as one Markdown code span that nothing in it can close: fenced by one backquote more than its longest
    run of backquotes, and where it starts or ends with a backquote or a space, padded with a space either side
    (which CommonMark and Python-Markdown strip again). In a
    table cell (`cell`), a text holding `|` (which a GFM table splits cells at even inside a code span) is a
    <code> element of escaped text instead."""
    s = one_line(v)
    if not s.strip():
        return "-"
    if cell and "|" in s:
        return f"<code>{md_text(s)}</code>"
    fence = "`" * (_longest_run(s) + 1)
    pad = " " if s[0] in "` " or s[-1] in "` " else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def md_block(v: Any) -> str:
    """`v` (lines of commands) as a fenced Markdown code block no line of it can close: the fence is longer than
    any run of backquotes in the text, and at least three."""
    s = str(v)
    fence = "`" * max(3, _longest_run(s) + 1)
    return f"{fence}\n{s}\n{fence}"


def href(v: Any) -> str:
    """A link target the guide may print: relative, or with the scheme http or https; any other scheme gives
    "#". Spaces, quotes, brackets, parentheses, backquotes and backslashes are percent-encoded, so the target
    ends where the template ends it, in an HTML attribute and in a Markdown link alike."""
    s = one_line(v).strip()
    m = _SCHEME.match(s)
    if m and m.group(1).lower() not in SAFE_SCHEMES:
        return "#"
    return quote(s, safe="/#?=&%:;,.+-_~@!$*")


def md_code_spans(v: Any) -> str:
    """A text whose `backquoted` parts are code (diagnosis messages and fixes write commands so), as Markdown:
    the text escaped, each complete pair of backquotes made a code span (`md_code`); an unpaired backquote is
    shown as written. The HTML twin is build._code_spans."""
    parts = code_parts(v)
    return "".join(md_code(p, cell=True) if i % 2 else md_text(p) for i, p in enumerate(parts))


def code_parts(v: Any) -> list[str]:
    """`v` split at its backquotes: odd items are code; a text with an unpaired backquote is one plain part."""
    parts = str(v).split("`")
    return [str(v)] if len(parts) % 2 == 0 else parts
