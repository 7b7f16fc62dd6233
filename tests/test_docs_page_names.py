"""docs build gives every system a page of its own: names that share an ASCII slug (two Japanese names,
"Foo Bar" and "foo-bar") must not share a page, and the index must link each name to its own page. A second
build gives the same page names."""
from __future__ import annotations

import re

from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.docs.collect import slug, unique_slugs

HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes\n")
ROW = "s1,{sys},{fs},4,write,POSIX,fpp,,1,4,1048576,1073741824,1,1048576,{v},MiB/s,\n"
NAMES = ["富岳", "京", "Foo Bar", "foo-bar"]


def test_unique_slugs_by_construction():
    pages = unique_slugs(NAMES + ["HA8000"])
    assert len(set(pages.values())) == 5
    assert pages["HA8000"] == slug("HA8000") == "ha8000"          # a plain ASCII name keeps its plain page
    assert pages["富岳"] != pages["京"] and pages["Foo Bar"] != pages["foo-bar"]
    assert unique_slugs(list(reversed(NAMES)))["富岳"] == pages["富岳"]   # not dependent on the order


def test_each_system_gets_its_own_page_and_link(tmp_path):
    csv = tmp_path / "runs.csv"
    csv.write_text(HEADER + "".join(ROW.format(sys=n, fs=fs, v=100 + i) for i, (n, fs) in enumerate(
        [(n, "lus") for n in NAMES] + [("foo-bar", "Lus A"), ("foo-bar", "lus-a")])))
    kb = tmp_path / "kb.sqlite"
    runner = CliRunner()
    assert runner.invoke(app, ["kb", "import", str(csv), "--kb", str(kb)]).exit_code == 0
    builds = []
    for out in (tmp_path / "site1", tmp_path / "site2"):
        res = runner.invoke(app, ["docs", "build", "--kb", str(kb), "-o", str(out)])
        assert res.exit_code == 0, res.output
        pages = {}
        for page in (out / "en" / "systems").glob("*.html"):
            title = re.search(r"<title>(.*?) · ", page.read_text(encoding="utf-8")).group(1)
            assert title not in pages, f"{title} has two pages"
            pages[title] = page.name
        builds.append(pages)
        for n in NAMES:
            assert n in pages, f"no page for {n}"
        assert len({pages[n] for n in NAMES}) == 4          # four names, four pages
        index = (out / "en" / "index.html").read_text(encoding="utf-8")
        for n in NAMES:
            assert f'href="systems/{pages[n]}"' in index
        # the two file systems of foo-bar whose slugs collide ("Lus A", "lus-a") both appear on its page
        foo = (out / "en" / "systems" / pages["foo-bar"]).read_text(encoding="utf-8")
        assert "Lus A" in foo and "lus-a" in foo
    assert builds[0] == builds[1]
