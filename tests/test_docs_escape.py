"""Hostile text in every user-derived field of the guide (an IOR output's command line, a canonical CSV's notes,
citation, source and command, a center file's texts, a Darshan log's executable name, a system name) stays text
in both formats: no script runs, no javascript: link is made, no code span is closed by its content. The
Markdown pages are built by MkDocs where it is installed and checked as text everywhere."""
from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ioadvisor.docs import build_site
from ioadvisor.docs.escape import href, md_code, md_text
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB

SAMPLES = Path(__file__).resolve().parent / "data" / "samples"
SYSTEM = "Evil<script>alert(9)</script>[s](javascript:alert(9))"
# each closes what it stands in: a code span (backquote runs of 1 to 4), a link, an image, an autolink, a tag,
# an attribute list, an emphasis, a table cell, a line (a new block)
LINK = "[x](javascript:alert(1))"
PAYLOADS = (
    f"a`<script>alert(1)</script>`` ``` ```` {LINK}",
    f"{LINK} ![i](javascript:alert(2)) <javascript:alert(3)> <img src=x onerror=alert(4)>",
    "*em* _u_ | cell | {: onclick=alert(5)} &lt;script&gt;alert(6)&lt;/script&gt;\n<script>alert(7)</script>",
)


class Scan(HTMLParser):
    """What an HTML page would run or follow: script elements (with their text), event-handler attributes, and
    link and source targets."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.scripts: list[str] = []
        self.handlers: list[str] = []
        self.targets: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k.startswith("on"):
                self.handlers.append(f"{k}={v}")
            if k in ("href", "src", "action", "formaction", "xlink:href") and v is not None:
                self.targets.append(v)
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def assert_harmless(page: Path) -> None:
    s = Scan(page.read_text(encoding="utf-8"))
    assert not [x for x in s.scripts if "alert" in x], page
    assert not s.handlers, (page, s.handlers)
    bad = [t for t in s.targets if re.match(r"\s*(javascript|data|vbscript):", t, re.I)]
    assert not bad, (page, bad)


def _ior_output(tmp: Path, command: str) -> Path:
    text = (SAMPLES / "ior" / "posix_shared_2ranks.txt").read_text()
    p = tmp / "ior.txt"
    p.write_text(re.sub(r"(?m)^Command line\s*: .*$", lambda m: f"Command line        : {command}", text, 1))
    return p


def _csv(tmp: Path) -> Path:
    rows = []
    for i, payload in enumerate(PAYLOADS):
        rows.append({"source": f"src {payload}", "system": SYSTEM, "filesystem": "lus", "ost_count": 8, "op": "write",
                     "api": "POSIX", "layout": "fpp", "collective": "", "nodes": 1, "ranks": 2 ** i,
                     "transfer_size_bytes": 1048576, "block_size_bytes_per_rank": "", "stripe_count": 1,
                     "stripe_size_bytes": 1048576, "value": 100 + i, "unit": "MiB/s", "notes": payload,
                     "citation": payload, "command": payload})
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    p = tmp / "runs.csv"
    p.write_text(buf.getvalue())
    return p


def _center(tmp: Path) -> Path:
    esc = PAYLOADS[1].replace("\\", "\\\\").replace('"', '\\"')
    p = tmp / "evil.toml"
    p.write_text(f'name = "{SYSTEM}"\ntitle = "{esc}"\n[[filesystems]]\nname = "lus"\ntype = "lustre"\n'
                 f'mount = "/lus/`x`"\npurpose = "{esc}"\nost_count = 8\n'
                 f'[[tiers]]\nname = "t1"\nkind = "per-job"\nfilesystem = "lus"\nrequest = "--x=`a`b{LINK}"\n'
                 f'notes = "{esc}"\n')
    return p


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    center = _center(tmp)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
        with KB.open(tmp / "kb.sqlite") as kb:
            import_file(kb, _ior_output(tmp, "ior -a POSIX -o /x" + PAYLOADS[0]), system=SYSTEM, filesystem="lus",
                        center=str(center))
            import_file(kb, _csv(tmp), center=str(center))
            _archive_job(tmp, kb)
            build_site(tmp / "site", kb=kb, center=str(center), langs=("en", "ja"), formats=("html", "md"),
                       archive=True)
    return tmp / "site"


def _archive_job(tmp: Path, kb: KB) -> None:
    """A real Darshan log whose executable is the hostile name, scanned into the archive."""
    pytest.importorskip("darshan")
    from ioadvisor.archive.scan import scan
    from ioadvisor.archive.worker import Settings
    from tests.darshan_copies import wheel_logs, with_exe
    log = next(p for p in wheel_logs() if p.name == "example.darshan")
    d = tmp / "logs"
    d.mkdir()
    (d / "x.darshan").write_bytes(with_exe(log.read_bytes(), f"/opt/{LINK}<script>alert(8)"))
    scan([d], kb, Settings(system=SYSTEM), workers=1)


def test_the_escaping_rule():
    # a code span is fenced by one backquote more than the longest run inside, padded with spaces where it
    # starts or ends with a backquote
    assert md_code("a`b``c") == "```a`b``c```"
    assert md_code("``") == "``` `` ```"
    assert md_code("a|b", cell=True) == "<code>a\\|b</code>"
    assert md_text("[x](javascript:y) <b> *e* a&amp;") == "\\[x\\](javascript:y) &lt;b&gt; \\*e\\* a&amp;amp;"
    assert md_text("a\nb\r\nc") == "a b c"
    assert [href(x) for x in ("javascript:alert(1)", " JavaScript:x", "data:text/html,x", "vbscript:x")] == ["#"] * 4
    assert href("https://example.org/a b") == "https://example.org/a%20b"
    assert href("../x.md#run-1)") == "../x.md#run-1%29"


def test_no_payload_survives_in_the_html_pages(hostile_site):
    pages = sorted(hostile_site.rglob("*.html"))
    assert len(pages) >= 8
    for page in pages:
        assert_harmless(page)
    prov = next((hostile_site / "en" / "provenance").glob("*.html")).read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in prov         # shown, as text


def _md_pages(site: Path) -> list[Path]:
    return sorted(p for lang in ("en", "ja") for p in (site / lang).rglob("*.md"))


def test_markdown_sources_hold_every_payload_as_text(hostile_site):
    """Where MkDocs is not installed: the Markdown sources hold no tag but the guide's own anchors and <code>
    elements, no link whose target is not relative or http(s), and the IOR command in one code span whose fence
    is longer than the command's longest backquote run (4)."""
    own = re.compile(r"<(a id=\"run-[0-9a-f]+\"|/a|code|/code)>")
    for page in _md_pages(hostile_site):
        text = page.read_text()
        # code (blocks fenced by 3 or more backquotes, spans by runs of the same length) is shown as written
        prose = re.sub(r"(?ms)^(`{3,})$.*?^\1$", "", text)
        prose = re.sub(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", "", prose)
        assert not re.search(r"<[A-Za-z/!?]", own.sub("", prose)), page
        for target in re.findall(r"(?<!\\)\]\(([^)\s]*)", prose):
            assert not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", target) or re.match(r"https?:", target), (page, target)
    prov = next((hostile_site / "en" / "provenance").glob("*.md")).read_text()
    assert "`````ior -a POSIX -o /x" + PAYLOADS[0] + "`````" in prov
    archive = (hostile_site / "en" / "archive.md").read_text()
    assert md_text(f"{LINK}<script>alert(8)") in archive


def test_markdown_pages_built_by_mkdocs_run_nothing(hostile_site, tmp_path):
    pytest.importorskip("mkdocs")
    root = tmp_path / "site"
    shutil.copytree(hostile_site, root)
    for lang in ("en", "ja"):
        cfg = root / f"mkdocs-{lang}.yml"
        p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(cfg)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        built = sorted((root / f"site-{lang}").rglob("*.html"))
        assert len(built) >= 4
        for page in built:
            assert_harmless(page)
        prov = next((root / f"site-{lang}" / "provenance").glob("*.html")).read_text()
        # the whole command is one <code> element, shown as written
        assert "<code>ior -a POSIX -o /xa`&lt;script&gt;alert(1)&lt;/script&gt;`` ``` ````" in prov
