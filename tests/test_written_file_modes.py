"""Files the commands write get the permissions the user's umask gives any new file, never owner-only.

A guide built for a web server, an export handed to a colleague or a wrapped job script must be readable by
whoever the umask lets read the user's files: with umask 022 a file is 0644 (a script 0755), with 027 0640.
A file only its owner can read (0600, what a temporary file starts with) is what must NOT come out.
"""
from __future__ import annotations

import os
import stat

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app

runner = CliRunner()


@pytest.fixture(params=[0o022, 0o027])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(p) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_kb_export_file_follows_the_umask(umask, tmp_path, kb_path):
    out = tmp_path / "runs.csv"
    res = runner.invoke(app, ["kb", "export", "--kb", str(kb_path), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert _mode(out) == 0o666 & ~umask      # 0644 under 022: not 0600


def test_export_over_an_existing_file_follows_the_umask_too(umask, tmp_path, kb_path):
    out = tmp_path / "runs.csv"
    out.write_text("old\n")
    out.chmod(0o600)
    assert runner.invoke(app, ["kb", "export", "--kb", str(kb_path), "-o", str(out)]).exit_code == 0
    assert _mode(out) == 0o666 & ~umask


def test_the_guide_is_readable_as_the_umask_allows(umask, tmp_path, kb_path):
    site = tmp_path / "site"
    res = runner.invoke(app, ["docs", "build", "--kb", str(kb_path), "--center", "HA8000", "--out", str(site)])
    assert res.exit_code == 0, res.output
    files = [p for p in site.rglob("*") if p.is_file()]
    assert files
    wrong = {str(p.relative_to(site)): oct(_mode(p)) for p in files if _mode(p) != 0o666 & ~umask}
    assert not wrong                          # e.g. {'index.html': '0o600'}: a web server could not read them


def test_a_wrapped_script_is_executable_and_readable_as_the_umask_allows(umask, tmp_path):
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n#SBATCH -N 1\nsrun ./app\n")
    out = tmp_path / "job.io.sh"
    res = runner.invoke(app, ["wrap", str(job), "-o", str(out), "--stripe-count", "4"])
    assert res.exit_code == 0, res.output
    assert _mode(out) == 0o777 & ~umask       # 0755 under 022, 0750 under 027
