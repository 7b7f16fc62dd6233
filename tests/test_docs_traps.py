"""What a center's staff meet building the guide from their own KB: the guide shows what it says and publishes
nothing about users unless asked."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

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


def _big_kb(path: Path, n: int = 60) -> Path:
    from ioadvisor.model.validate import make_run
    runs = [make_run(value=100 + i, unit="MiB/s", system="Big", filesystem="lus", fs_type="lustre", op="write",
                     api="POSIX", layout="shared", ranks=2 ** (i % 4), stripe_count=1 + i % 3, notes="synthetic")
            for i in range(n)]
    with KB.open(path) as kb:
        kb.add_runs(runs, source="big.csv", source_hash="hash-big", fmt="csv", importer="test/1")
    return path


class Stopped(KeyboardInterrupt):
    """What a signal handler like the CLI's raises for SIGTERM."""


def _signal_in_step(signum: int) -> Any:
    """A profile hook sending `signum` to this process from inside the grouping aggregate's first step call:
    the handler runs there, whatever the timing."""
    import os

    from ioadvisor.docs import collect
    sent: list[int] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_name == "step" and frame.f_code.co_filename == collect.__file__ \
                and not sent:
            sent.append(signum)
            os.kill(os.getpid(), signum)
    profile.sent = sent
    return profile


def test_sigint_inside_the_grouping_aggregate_exits_130(tmp_path, monkeypatch):
    """sqlite turned the KeyboardInterrupt raised in the aggregate's step into "user-defined aggregate's 'step'
    method raised error" and exit 1: the build must end as interrupted, exit 130."""
    import signal
    import sys

    from ioadvisor.docs import collect
    monkeypatch.setattr(collect, "ROW_LIMIT", 20)            # 60 runs: the grouped road, through the aggregate
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kb_path = _big_kb(tmp_path / "kb.sqlite")
    profile = _signal_in_step(signal.SIGINT)
    sys.setprofile(profile)
    try:
        r = runner.invoke(app, ["docs", "build", "--kb", str(kb_path), "--out", str(tmp_path / "site")])
    finally:
        sys.setprofile(None)
    assert profile.sent == [signal.SIGINT]
    assert "aggregate" not in r.output and r.exit_code == 130, r.output


def test_sigterm_inside_the_grouping_aggregate_reaches_its_handler(tmp_path, monkeypatch):
    """SIGTERM's handler (the CLI's raises an exception that carries the signal) is the one that ends the build,
    not an sqlite error."""
    import signal
    import sys

    from ioadvisor.docs import build_site, collect
    monkeypatch.setattr(collect, "ROW_LIMIT", 20)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kb_path = _big_kb(tmp_path / "kb.sqlite")

    def stop(n: int, _frame: Any) -> None:
        raise Stopped(n)
    old = signal.signal(signal.SIGTERM, stop)
    profile = _signal_in_step(signal.SIGTERM)
    sys.setprofile(profile)
    try:
        with KB.open(kb_path, create=False) as kb, pytest.raises(Stopped):
            build_site(tmp_path / "site", kb=kb)
    finally:
        sys.setprofile(None)
        signal.signal(signal.SIGTERM, old)
    assert profile.sent == [signal.SIGTERM]
