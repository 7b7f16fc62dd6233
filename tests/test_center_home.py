"""A site's own center files live in the directories of $IOADVISE_CENTERS (a colon-separated list, searched
before the shipped data/centers): `--center NAME` finds NAME.toml there, `systems` lists it with its file (not
"-"), `center check NAME` checks it and `docs build` describes the system (not "No center description")."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ioadvisor.center import centers_dir, find_center, load_center
from ioadvisor.cli import app

runner = CliRunner()
SITE = ('name = "Sitebox"\ntitle = "Sitebox cluster"\nnode_memory = "256GiB"\n[[filesystems]]\nname = "lus"\n'
        'type = "lustre"\nmount = "/lus/$USER"\nost_count = 8\nrated_write_bandwidth = "20GB/s"\n'
        'rated_read_bandwidth = "20GB/s"\n')
HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes\n")


def _site(tmp_path: Path, monkeypatch) -> Path:
    d = tmp_path / "centers"
    d.mkdir()
    (d / "sitebox.toml").write_text(SITE)
    # a missing directory and an empty entry in the list are passed over, as PATH's are
    monkeypatch.setenv("IOADVISE_CENTERS", f"{tmp_path / 'none'}::{d}")
    return d


def test_a_site_center_is_found_by_name_by_every_command(tmp_path, monkeypatch):
    d = _site(tmp_path, monkeypatch)
    assert find_center("sitebox").title == "Sitebox cluster" and load_center("SITEBOX").name == "Sitebox"

    res = runner.invoke(app, ["advise", "--center", "sitebox", "--nodes", "4", "--ranks-per-node", "8",
                              "--bytes-per-rank", "1GiB", "--api", "posix", "--layout", "shared", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["system"] == "Sitebox"
    res = runner.invoke(app, ["advise", "--system", "sitebox", "--nodes", "4", "--ranks-per-node", "8",
                              "--bytes-per-rank", "1GiB", "--api", "posix", "--layout", "shared", "--json"])
    assert res.exit_code == 0, res.output

    kb = tmp_path / "kb.sqlite"
    res = runner.invoke(app, ["systems", "--kb", str(kb), "--json"])
    assert res.exit_code == 0, res.output
    row = next(r for r in json.loads(res.stdout) if r["system"] == "Sitebox")
    assert row["center_file"] == str(d / "sitebox.toml") and row["center_origin"] == "site"
    assert all(r["center_origin"] == "shipped" for r in json.loads(res.stdout) if r["system"] != "Sitebox"
               and r["center_file"])
    res = runner.invoke(app, ["systems", "--kb", str(kb)], terminal_width=300)
    line = next(ln for ln in res.output.splitlines() if ln.startswith("Sitebox"))
    assert line.rstrip().endswith(str(d / "sitebox.toml")), line

    res = runner.invoke(app, ["center", "check", "sitebox", "--json"])
    assert res.exit_code == 0, res.output
    (rep,) = json.loads(res.stdout)
    assert rep["ok"] and rep["file"] == str(d / "sitebox.toml")
    res = runner.invoke(app, ["center", "check", "--json"])         # every center found by name
    files = [r["file"] for r in json.loads(res.stdout)]
    assert str(d / "sitebox.toml") in files and len(files) == len(list(centers_dir().glob("*.toml"))) + 1
    res = runner.invoke(app, ["center", "check", "nosuch"])
    assert res.exit_code == 2 and "unknown center 'nosuch'" in res.output and "Traceback" not in res.output


def test_docs_build_describes_a_site_center(tmp_path, monkeypatch):
    _site(tmp_path, monkeypatch)
    csv = tmp_path / "runs.csv"
    csv.write_text(HEADER + "s1,Sitebox,lus,8,write,POSIX,fpp,,1,4,1048576,1073741824,1,1048576,900,MiB/s,\n")
    kb = tmp_path / "kb.sqlite"
    assert runner.invoke(app, ["kb", "import", str(csv), "--kb", str(kb)]).exit_code == 0
    out = tmp_path / "site"
    res = runner.invoke(app, ["docs", "build", "--center", "sitebox", "--kb", str(kb), "-o", str(out)])
    assert res.exit_code == 0, res.output
    pages = "".join(p.read_text(encoding="utf-8") for p in (out / "en").rglob("*.html"))
    assert "No center description" not in pages and "Sitebox cluster" in pages


def test_a_site_file_comes_before_a_shipped_file_of_the_same_name(tmp_path, monkeypatch):
    d = tmp_path / "centers"
    d.mkdir()
    shipped = (centers_dir() / "ha8000.toml").read_text()
    assert 'title = "' in shipped
    (d / "ha8000.toml").write_text(shipped.replace('title = "', 'title = "Our own ', 1))
    monkeypatch.setenv("IOADVISE_CENTERS", str(d))
    assert find_center("ha8000").title.startswith("Our own ")
    monkeypatch.delenv("IOADVISE_CENTERS")
    assert not find_center("ha8000").title.startswith("Our own ")


def test_a_name_no_center_file_holds_parses_none_and_an_escaped_name_is_still_found(tmp_path, monkeypatch):
    # a system known only from its runs is looked up among the center files first: a file whose text cannot
    # spell the name is not parsed (a parse and a check of each shipped file was most of a cold advice's lookup)
    import ioadvisor.center as center
    d = tmp_path / "centers"
    d.mkdir()
    fs = '[[filesystems]]\nname = "scratch"\ntype = "lustre"\n'
    (d / "site.toml").write_text('name = "Sitebox"\n' + fs)
    (d / "esc.toml").write_text('name = "Esc\\u0042ox"\n' + fs)       # a name spelled with an escape
    monkeypatch.setenv("IOADVISE_CENTERS", str(d))
    parsed = []
    import ioadvisor.center.file as center_file
    real = center_file.read_center_file
    monkeypatch.setattr(center_file, "read_center_file", lambda p: parsed.append(p.name) or real(p))
    monkeypatch.setattr(center, "_LOADED", {})
    assert center.find_center("synthetic-big") is None and parsed == ["esc.toml"]
    assert center.find_center("escBOX").name == "EscBox"
    assert center.find_center("SITEBOX").name == "Sitebox" and parsed == ["esc.toml", "site.toml"]
    assert center.find_center("tsubame3.0").name == "TSUBAME3.0" and "tsubame3.toml" in parsed
