"""The built guide in headless Chromium: every page loads without console errors, every local link and image
exists, every plot decodes. Uses the system Chromium; playwright never downloads a browser here."""
from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import pytest

from ioadvisor.docs import build_site
from ioadvisor.kb import KB

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("browser")
    with KB.open(d / "kb.sqlite", create=False) as kb:
        build_site(d / "site", kb=kb, langs=("en", "ja"), formats=("html",))
    return d / "site"


@pytest.fixture(scope="module")
def browser():
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    sync_api = pytest.importorskip("playwright.sync_api")
    assert os.access(CHROMIUM, os.X_OK), "chromium is part of the set-up (apt install chromium)"
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def test_every_page_loads_cleanly_in_chromium(site, tmp_path, monkeypatch):
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    sync_api = pytest.importorskip("playwright.sync_api")
    assert os.access(CHROMIUM, os.X_OK), "chromium is part of the set-up (apt install chromium)"
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 21
    shots = tmp_path / "screenshots"
    shots.mkdir()
    checked_images = 0
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(f"{m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
            for path in pages:
                errors.clear()
                page.goto(path.as_uri(), wait_until="load")
                assert page.title(), f"{path}: no title"
                refs = page.eval_on_selector_all(
                    "a[href], img[src], link[href]",
                    "els => els.map(e => e.tagName === 'IMG' ? e.src : e.href)")
                for ref in refs:
                    parts = urlsplit(ref)
                    assert parts.scheme == "file", f"{path}: non-local link {ref}"
                    target = Path(url2pathname(parts.path))
                    assert target.is_file(), f"{path}: broken link {ref}"
                    if parts.fragment and target.suffix == ".html":
                        assert f'id="{parts.fragment}"' in target.read_text(), f"{path}: no anchor {ref}"
                widths = page.eval_on_selector_all(
                    "img", "imgs => imgs.map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
                for src, complete, width in widths:
                    assert complete and width > 0, f"{path}: image {src} did not load"
                checked_images += len(widths)
                assert errors == [], f"{path}: {errors}"
                rel = path.relative_to(site)
                # whole system pages; the first screen of the long provenance listings
                page.screenshot(path=str(shots / ("_".join(rel.with_suffix("").parts) + ".png")),
                                full_page=rel.parts[-2:-1] == ("systems",))
        finally:
            browser.close()
    assert checked_images >= 2 * 8                      # every plot of both languages
    assert (shots / "en_systems_ha8000.png").stat().st_size > 10_000
    print(f"screenshots in {shots}")


# One glyph per box: each character drawn alone in a box of fixed size, so two renderings can be compared as
# PNG bytes. A font without the character draws the same .notdef box (tofu) for all of them.
_GLYPH_JS = """([chars, id]) => {
  const host = document.createElement('div');
  host.id = id;
  const h = document.querySelector('h2#comparisons');
  const style = getComputedStyle(h);
  for (const c of chars) {
    const s = document.createElement('span');
    s.textContent = c;
    s.style.cssText = 'display:inline-block;width:40px;height:40px;line-height:40px;text-align:center;' +
      'font-size:32px;background:#fff;color:#000;font-family:' + style.fontFamily;
    host.appendChild(s);
  }
  document.body.appendChild(host);
}"""


def test_english_and_japanese_system_pages_render_glyphs_and_one_unit_per_plot(site, browser, tmp_path):
    """Screenshots of the HA8000 page in both languages. On the Japanese page the heading's characters must
    render as glyphs: each differs from the others and from the rendering of a private-use character (which
    no font has, so it is drawn as the .notdef box, i.e. tofu). Every plot on both pages shows one quantity,
    and its SVG's y axis names that quantity's unit and no other."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    shots = {}
    for lang in ("en", "ja"):
        path = site / lang / "systems" / "ha8000.html"
        page.goto(path.as_uri(), wait_until="load")
        page.evaluate("document.fonts.ready")
        shots[lang] = tmp_path / f"{lang}-ha8000.png"
        page.screenshot(path=str(shots[lang]), full_page=True)
        figures = page.eval_on_selector_all(
            "figure.plot", "fs => fs.map(f => [f.dataset.quantity, f.dataset.unit, f.querySelector('img').src])")
        assert len(figures) >= 3
        for quantity, unit, src in figures:
            svg = Path(url2pathname(urlsplit(src).path)).read_text()
            ops = "operations/s" if lang == "en" else "操作/秒"
            axis = {"bandwidth": "MiB/s", "metadata": ops, "iops": ops}[quantity]
            assert unit == {"bandwidth": "MiB/s", "metadata": "ops/s", "iops": "ops/s"}[quantity]
            # every axis title that names a rate: exactly one, and it is this quantity's unit
            labels = [t for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg) if t.endswith(("/s)", "/秒)"))]
            assert len(labels) == 1 and labels[0].endswith(f"({axis})"), (src, labels)
        if lang == "ja":
            heading = page.inner_text("h2#comparisons")
            assert heading == "公表された比較"
            assert page.evaluate("document.fonts.check('16px \"Noto Sans CJK JP\"')")
            chars = list(dict.fromkeys(heading))                 # 公 表 さ れ た 比 較: 7 distinct characters
            page.evaluate(_GLYPH_JS, [chars + ["\ue000", "\ue001"], "glyphs"])
            boxes = page.query_selector_all("#glyphs span")
            images = [b.screenshot() for b in boxes]
            glyphs, tofu = images[:-2], images[-2:]
            assert tofu[0] == tofu[1]                 # two unknown characters: the same .notdef box
            assert len(set(glyphs)) == len(chars) == 7   # every Japanese character a different picture
            assert not [g for g in glyphs if g == tofu[0]]   # and none of them the tofu box
    page.close()
    assert shots["en"].stat().st_size > 10_000 and shots["ja"].stat().st_size > 10_000


# Width of a word drawn in an element's own computed font: in a monospace face "iiii" and "MMMM" are equally wide
# (in DejaVu Sans, the proportional face, "MMMM" is about 3.5 times wider).
_WIDTHS_JS = """(el) => {
  const style = getComputedStyle(el);
  const widths = ['iiii', 'MMMM'].map(w => {
    const s = document.createElement('span');
    s.textContent = w;
    s.style.cssText = 'white-space:pre;font-size:20px;font-family:' + style.fontFamily;
    el.parentElement.appendChild(s);
    const x = s.getBoundingClientRect().width;
    s.remove();
    return x;
  });
  return [style.fontFamily, widths];
}"""

# The lines a header's text is laid out on: the distinct tops of its characters' boxes.
_LINES_JS = """(th) => {
  const text = th.firstChild, tops = new Set();
  for (let i = 0; i < text.length; i++) {
    const r = document.createRange();
    r.setStart(text, i); r.setEnd(text, i + 1);
    const box = r.getClientRects()[0];
    if (box) tops.add(Math.round(box.top));
  }
  return tops.size;
}"""


@pytest.fixture(scope="module")
def archive_site(tmp_path_factory) -> Path:
    """A Japanese site with an archive page: the wheel's Darshan logs scanned into a KB."""
    pytest.importorskip("darshan")
    import shutil
    from ioadvisor.archive.scan import scan
    from ioadvisor.archive.worker import Settings
    from tests.darshan_copies import wheel_logs
    d = tmp_path_factory.mktemp("archive-browser")
    for p in wheel_logs():
        shutil.copy(p, d / p.name)
    with KB.open(d / "kb.sqlite") as kb:
        scan([d], kb, Settings(system="wheel"), workers=2)
        build_site(d / "site", kb=kb, langs=("en", "ja"), formats=("html",), archive=True)
    return d / "site"


def test_japanese_archive_page_has_no_english_rule_names_and_code_is_monospace(archive_site, browser, tmp_path):
    """The Japanese archive page in Chromium: no rule's English title and no English fix is left on it (each
    rule listed shows its Japanese title), every command is a <code> element set in a monospace face, on the
    archive page and in a system page's code block. Monospace is measured, not read from the style sheet: in
    the element's computed font "iiii" and "MMMM" must be equally wide (to half a pixel at 20 px; a
    proportional face makes "MMMM" several times wider). Table headers break between words: no header of a
    system page splits "ファイルシステム" over two lines."""
    from ioadvisor.diagnose.rules import RULES
    from ioadvisor.docs.i18n import catalogue
    ja = catalogue("ja")
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    page.goto((archive_site / "ja" / "archive.html").as_uri(), wait_until="load")
    page.evaluate("document.fonts.ready")
    shot = tmp_path / "ja-archive.png"
    page.screenshot(path=str(shot), full_page=True)
    text = page.inner_text("body")
    shown = page.eval_on_selector_all("h2#fixes + table tbody tr td:first-child code",
                                      "cs => cs.map(c => c.textContent)")
    assert {"LUS002", "STRAG001"} <= set(shown)          # the two rules the wheel's logs trigger most
    for rule in RULES:
        assert rule.title not in text, rule.id
    for rid in shown:
        assert ja[f"rule_{rid}"] in text and ja[f"rule_fix_{rid}"].split("`")[0] in text
    assert "Report the OST" not in text and "rank 1312" not in text   # the English fixes of LUS002, STRAG001
    assert "`" not in text                                             # code spans rendered, not backquoted
    codes = page.query_selector_all("code")
    assert codes
    for el in (codes[0], codes[-1]):
        family, (narrow, wide) = el.evaluate(_WIDTHS_JS)
        assert abs(narrow - wide) < 0.5 and wide > 20, (family, narrow, wide)

    page.goto((archive_site / "ja" / "systems" / "ha8000.html").as_uri(), wait_until="load")
    page.evaluate("document.fonts.ready")
    page.screenshot(path=str(tmp_path / "ja-ha8000.png"), full_page=True)
    family, (narrow, wide) = page.query_selector("pre").evaluate(_WIDTHS_JS)
    assert abs(narrow - wide) < 0.5 and wide > 20, (family, narrow, wide)
    heads = [h for h in page.query_selector_all("th") if h.inner_text() == "ファイルシステム"]
    assert heads
    page.set_viewport_size({"width": 700, "height": 900})      # narrow: tables squeeze their columns
    assert [h.evaluate(_LINES_JS) for h in heads] == [1] * len(heads)
    page.close()
    print(f"screenshots in {tmp_path}")
