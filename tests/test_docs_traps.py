"""What a center's staff meet building the guide from their own KB: the guide shows what it says and publishes
nothing about users unless asked."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.kb import KB

runner = CliRunner()


def test_the_archive_page_is_left_out_unless_asked_for(tmp_path, monkeypatch):
    """A staff KB holding a scanned Darshan log (job 4478544 of uid 69615, vpicio_uni): `docs build` alone
    writes no archive page and names neither the job nor the user anywhere; `--archive` adds the page."""
    pytest.importorskip("darshan")
    from ioadvisor.archive.scan import scan
    from ioadvisor.archive.worker import Settings
    from tests.darshan_copies import wheel_logs
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(next(p for p in wheel_logs() if p.name == "example.darshan"), logs / "x.darshan")
    kb_path = tmp_path / "kb.sqlite"
    with KB.open(kb_path) as kb:
        scan([logs], kb, Settings(system="HA8000"), workers=1)
        job = kb.conn.execute("SELECT jobid, uid, app FROM archive_jobs").fetchone()
    assert tuple(job) == (4478544, 69615, "vpicio_uni")
    base = ["docs", "build", "--kb", str(kb_path), "--center", "HA8000", "--format", "html,md"]
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "public")])
    assert r.exit_code == 0, r.output
    pages = [p for p in (tmp_path / "public").rglob("*") if p.suffix in (".html", ".md", ".yml")]
    assert pages and not [p for p in pages if p.stem == "archive"]
    for p in pages:
        text = p.read_text()
        assert "archive." not in text and "4478544" not in text and "vpicio_uni" not in text, p
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "staff"), "--archive"])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "staff" / "en" / "archive.html").read_text()
    assert "4478544" in page and "vpicio_uni" in page
    assert "archive.md" in (tmp_path / "staff" / "mkdocs-en.yml").read_text()
