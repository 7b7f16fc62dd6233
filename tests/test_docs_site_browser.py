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
