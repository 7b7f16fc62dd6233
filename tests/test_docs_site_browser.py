"""The built guide in headless Chromium: every page loads without console errors, every local link and image
exists, every plot decodes. Uses the system Chromium; playwright never downloads a browser here."""
from __future__ import annotations

import os
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


@pytest.fixture
def site(tmp_path) -> Path:
    with KB.open(tmp_path / "kb.sqlite", create=False) as kb:
        build_site(tmp_path / "site", kb=kb, langs=("en", "ja"), formats=("html",))
    return tmp_path / "site"


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
