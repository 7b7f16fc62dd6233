"""A home directory is not needed: with HOME unset (and no password entry), missing, read-only, a file or empty,
`kb stats`, `advise` and `docs build` work (exit 0, no traceback) with the KB named. The caches (the reference
KB's build, the guide's plots) go to $XDG_CACHE_HOME when it is set; else to ~/.cache where the home can hold
them, and nowhere otherwise: the reference KB is then built for the command alone and removed after it, and a
missing home is never made."""
from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app

runner = CliRunner()
SITE = ('name = "Sitebox"\ntitle = "Sitebox cluster"\nnode_memory = "256GiB"\n[[filesystems]]\nname = "lus"\n'
        'type = "lustre"\nmount = "/lus/$USER"\nost_count = 8\nrated_write_bandwidth = "20GB/s"\n'
        'rated_read_bandwidth = "20GB/s"\n')
RUNS = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
        "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes\n"
        "s1,Sitebox,lus,8,write,POSIX,fpp,,1,4,1048576,1073741824,1,1048576,900,MiB/s,\n"
        "s1,Sitebox,lus,8,write,POSIX,fpp,,2,8,1048576,1073741824,1,1048576,1700,MiB/s,\n")
COMMANDS = {
    "kb stats": ["kb", "stats"],
    "advise": ["advise", "--center", "sitebox", "--nodes", "4", "--ranks-per-node", "8", "--bytes-per-rank",
               "1GiB", "--api", "posix", "--layout", "shared"],
    # one plot, drawn as PNG too: the plot cache and matplotlib's configuration are used
    "docs build": ["docs", "build", "--center", "sitebox", "--png", "-o", "{out}"],
}
HOMES = ("unset", "missing", "read-only", "a file", "empty")


@pytest.fixture
def site(tmp_path: Path, monkeypatch) -> Path:
    """A KB with two runs of a site's center (imported while the test's cache is usable), named by IOADVISE_KB;
    no XDG_CACHE_HOME or MPLCONFIGDIR."""
    (tmp_path / "centers").mkdir()
    (tmp_path / "centers" / "sitebox.toml").write_text(SITE)
    monkeypatch.setenv("IOADVISE_CENTERS", str(tmp_path / "centers"))
    (tmp_path / "runs.csv").write_text(RUNS)
    kb = tmp_path / "kb.sqlite"
    assert runner.invoke(app, ["kb", "import", str(tmp_path / "runs.csv"), "--kb", str(kb)]).exit_code == 0
    monkeypatch.setenv("IOADVISE_KB", str(kb))
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    return tmp_path


def _no_password_entry(monkeypatch, home: Path | None = None) -> None:
    """This user id's password entry: none, or one naming `home`."""
    def getpwuid(uid: int):
        if home is None:
            raise KeyError(f"getpwuid(): uid not found: {uid}")
        return pwd.struct_passwd(("someone", "x", uid, uid, "", str(home), "/bin/sh"))
    monkeypatch.setattr(pwd, "getpwuid", getpwuid)


def _read_only_runner(home: Path) -> list[str] | None:
    """The command prefix that runs ioadvise with `home` read-only: as a user, the directory's mode; as root
    (whom modes do not stop), a read-only bind mount in a mount namespace of its own. None where neither works."""
    home.chmod(0o555)
    if os.geteuid() != 0:
        return []
    prefix = ["unshare", "-m", "sh", "-c",
              'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"', str(home)]
    probe = subprocess.run(prefix + ["sh", "-c", f'! touch "{home}/x" 2>/dev/null'], capture_output=True)
    return prefix if probe.returncode == 0 else None


def _run(home: str, args: list[str], tmp_path: Path, monkeypatch) -> tuple[int, str]:
    """`args` run with the home `home`: exit status and output (stdout and stderr)."""
    h = tmp_path / "home"
    if home == "unset":
        monkeypatch.delenv("HOME", raising=False)
        _no_password_entry(monkeypatch)
    elif home == "missing":
        monkeypatch.setenv("HOME", str(h))
    elif home == "a file":
        h.write_text("not a directory\n")
        monkeypatch.setenv("HOME", str(h))
    elif home == "empty":
        # an empty HOME is no home: the password entry's is used (it was "/", whose /.cache a user cannot make)
        (tmp_path / "pw").mkdir()
        monkeypatch.setenv("HOME", "")
        _no_password_entry(monkeypatch, tmp_path / "pw")
    else:
        h.mkdir()
        monkeypatch.setenv("HOME", str(h))
        prefix = _read_only_runner(h)
        if prefix is None:
            pytest.skip("no way to make a read-only directory here (root without a mount namespace)")
        if prefix:
            p = subprocess.run(prefix + [sys.executable, "-m", "ioadvisor", *args], capture_output=True,
                               text=True, timeout=600)
            return p.returncode, p.stdout + p.stderr
    res = runner.invoke(app, args)
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res.exit_code, res.output


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("home", HOMES)
def test_every_command_works_without_a_usable_home(home, command, site, monkeypatch):
    args = [a.format(out=site / "out") for a in COMMANDS[command]]
    code, output = _run(home, args, site, monkeypatch)
    assert code == 0, output
    assert "Traceback" not in output and "Error:" not in output, output
    # matplotlib is not left to complain of the home (it warned, and made a directory of its own)
    assert "MPLCONFIGDIR" not in output, output
    assert output.strip(), "nothing printed"
    if command == "docs build":
        assert (site / "out" / "en" / "index.html").is_file()
    if home == "missing":
        assert not (site / "home").exists(), "a missing home was made"
    if home == "empty":
        assert list((site / "pw" / ".cache" / "ioadvisor").glob("reference-*.sqlite")), \
            "the password entry's home did not hold the cache"


def test_the_cache_goes_to_xdg_cache_home_whatever_the_home(site, monkeypatch):
    monkeypatch.setenv("HOME", str(site / "nohome"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(site / "xdg"))
    res = runner.invoke(app, ["docs", "build", "--center", "sitebox", "--png", "-o", str(site / "out")])
    assert res.exit_code == 0, res.output
    cache = site / "xdg" / "ioadvisor"
    assert len(list(cache.glob("reference-*.sqlite"))) == 1 and len(list(cache.glob("plots/*.png"))) == 1
    assert not (site / "nohome").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unusable_xdg_cache_home_is_passed_over(command, site, monkeypatch):
    (site / "xdg").write_text("a file, not a directory\n")
    monkeypatch.setenv("XDG_CACHE_HOME", str(site / "xdg"))
    res = runner.invoke(app, [a.format(out=site / "out") for a in COMMANDS[command]])
    assert res.exit_code == 0 and res.exception is None, (res.output, res.exception)
    assert (site / "xdg").read_text() == "a file, not a directory\n"


def test_without_any_home_the_default_kb_is_refused_in_one_line(site, monkeypatch):
    """No HOME, no password entry and no KB named: where the KB would be kept is unknown (exit 2, one line)."""
    monkeypatch.delenv("IOADVISE_KB")
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.delenv("HOME", raising=False)
    _no_password_entry(monkeypatch)
    res = runner.invoke(app, ["kb", "import", str(site / "runs.csv")])
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "no home directory" in lines[0] and "IOADVISE_KB" in lines[0], res.output
