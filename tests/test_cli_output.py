"""Plain output that tells the truth when piped: no sentence broken at 80 columns, one unit per range, names
never cut or split, relabelled runs' new ids printed. What must not happen: a line of `center check` or a
reason of `advise` broken in two in a pipe; "2,375 MiB/s-14.7 GiB/s"; "Dell-EE-Lustre-…"; a relabel that
changes ids without saying which; a file-system name read as two; ".;" between reasons."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.model.units import format_estimate, format_range, format_rate

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
CENTERS = ROOT / "data" / "centers"


def piped(*args: str, **env: str) -> subprocess.CompletedProcess:
    """The CLI in a subprocess whose stdout is a pipe (not a terminal), as a script or `| less` sees it."""
    e = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | env
    return subprocess.run([sys.executable, "-c", "from ioadvisor.cli import main; main()", *args],
                          capture_output=True, text=True, env=e, timeout=300)


def test_center_check_and_advise_keep_each_sentence_on_one_line_in_a_pipe(tmp_path):
    # every warning center check finds is one printed line, whole, however long (rich would cut at 80)
    warnings = [w for f in sorted(CENTERS.glob("*.toml"))
                for w in json.loads(piped("center", "check", str(f), "--json").stdout)[0]["warnings"]]
    assert any(len(w) > 80 for w in warnings), "no long warning to test with"
    out = "".join(piped("center", "check", str(f)).stdout for f in sorted(CENTERS.glob("*.toml")))
    lines = out.splitlines()
    for w in warnings:
        assert f"  warning: {w}" in lines, w
    res = piped("advise", "--system", "HA8000", "--op", "write", "--bytes-per-rank", "4GiB", "-N", "8", "-n", "128",
                "--kb", str(tmp_path / "kb.sqlite"), "--json")
    reasons = json.loads(res.stdout)["recommendation"]["reasons"]
    text = piped("advise", "--system", "HA8000", "--op", "write", "--bytes-per-rank", "4GiB", "-N", "8", "-n", "128",
                 "--kb", str(tmp_path / "kb.sqlite")).stdout
    assert any(len(r) > 80 for r in reasons)
    for r in reasons:
        assert f"  - {r}" in text.splitlines(), r
    # the table too: its rows are not wrapped, one line per option
    assert len([ln for ln in text.splitlines() if ln.startswith(("recommended", "default", "alt "))]) >= 2


def test_a_range_is_printed_in_one_unit():
    # 2,375 MiB/s and 15,023 MiB/s: the upper end is above 10 GiB/s (10,240 MiB/s), so both ends in GiB/s:
    # 2375 / 1024 = 2.3, 15023 / 1024 = 14.7
    assert format_range(2375, 15023, "MiB/s") == "2.3-14.7 GiB/s"
    assert format_estimate(8000, 2375, 15023, "MiB/s") == "7.8 (2.3-14.7) GiB/s"
    assert format_range(2375, 8281, "MiB/s") == "2,375-8,281 MiB/s"
    assert format_rate(15023, "MiB/s") == "14.7 GiB/s" and format_rate(None, "MiB/s") == "unknown"
    assert format_range(1200, 45000, "ops/s") == "1,200-45,000 ops/s"
    for text in (format_range(2375, 15023, "MiB/s"), format_estimate(8000, 2375, 15023, "MiB/s")):
        assert len(re.findall(r"[MG]iB/s", text)) == 1


def test_advise_prints_no_range_with_two_units(tmp_path):
    # a workload large enough that predictions pass 10 GiB/s on some system: every range printed, in the
    # table and in the reasons, names one unit
    mixed = re.compile(r"\d\s*[MG]iB/s\s*-\s*[\d.,]+\s*[MG]iB/s")
    seen_gib = False
    for system in ("Dell-EE-Lustre-2.1", "PixStor-NVMe", "HA8000"):
        for op in ("read", "write"):
            out = piped("advise", "--system", system, "--op", op, "--bytes-per-rank", "16GiB", "-N", "64", "-n",
                        "2048", "--kb", str(tmp_path / "kb.sqlite")).stdout
            assert not mixed.search(out), (system, op, mixed.search(out).group(0))
            seen_gib |= "GiB/s" in out
    assert seen_gib, "no prediction above 10 GiB/s: the test shows nothing"


def test_kb_validate_and_systems_print_whole_names_on_a_narrow_terminal(tmp_path):
    kb = str(tmp_path / "kb.sqlite")
    for columns in ("60", None):             # a narrow terminal's width, and a pipe
        env = {"COLUMNS": columns} if columns else {}
        out = piped("kb", "validate", "--system", "Dell-EE-Lustre-2.1", "--kb", kb, **env).stdout
        assert "Dell-EE-Lustre-2.1 " in out and "Lustre-…" not in out and "Lustre-..." not in out
    out = piped("systems", "--kb", kb).stdout
    assert "Dell-EE-Lustre-2.1 " in out and "Dell-EE-Lustre-2.3 " in out and "…" not in out


def _csv_kb(tmp_path: Path, fs: str = "lus") -> Path:
    from tests.test_kb_repair import HEADER, ROWS
    a = tmp_path / "a.csv"
    a.write_text(HEADER + "".join(r.replace(",lus,", f",{fs},") for r in ROWS))
    kb = tmp_path / "kb.sqlite"
    assert runner.invoke(app, ["kb", "import", str(a), "--kb", str(kb)]).exit_code == 0
    return kb


def test_relabel_prints_each_old_id_and_its_new_one(tmp_path):
    kb = _csv_kb(tmp_path)
    old = sorted(r["id"] for r in json.loads(runner.invoke(app, ["kb", "list", "--kb", str(kb), "--origin", "user",
                                                                 "--json"]).stdout))
    res = runner.invoke(app, ["kb", "relabel", "--kb", str(kb), "--system", "sysA", "--to-system", "sysB", "--yes"])
    assert res.exit_code == 0, res.output
    new = sorted(r["id"] for r in json.loads(runner.invoke(app, ["kb", "list", "--kb", str(kb), "--origin", "user",
                                                                 "--json"]).stdout))
    assert set(old).isdisjoint(new) and len(new) == 3        # the ids follow the content: all three changed
    pairs = re.findall(r"^\s+(\w+) -> (\w+)\s", res.stdout, re.M)
    assert sorted(o for o, _ in pairs) == old and sorted(n for _, n in pairs) == new
    # and in --json: each selected run with its new id; `kb show` finds the new one
    res = runner.invoke(app, ["kb", "relabel", "--kb", str(kb), "--system", "sysB", "--to-system", "sysC", "--yes",
                              "--json"])
    doc = json.loads(res.stdout)
    assert sorted(r["id"] for r in doc["selected"]) == new
    for r in doc["selected"]:
        assert r["new_id"] != r["id"]
        shown = runner.invoke(app, ["kb", "show", r["new_id"], "--kb", str(kb), "--json"])
        assert shown.exit_code == 0 and "sysC" in shown.stdout


def test_systems_keeps_a_file_system_name_with_commas_whole(tmp_path):
    kb = _csv_kb(tmp_path, fs='"scratch, fast"')
    out = piped("systems", "--kb", str(kb)).stdout
    row = next(ln for ln in out.splitlines() if ln.startswith("sysA"))
    assert '"scratch, fast"' in row


def test_archive_page_renders_code_spans_and_reasons_end_once():
    from markupsafe import Markup
    from ioadvisor.docs.build import _code_spans
    html = _code_spans("run `mkdir -p /a/b`, `lfs setstripe -c 4 /a/b`, then <x>")
    assert "`" not in html and html.count("<code>") == 2 and "&lt;x&gt;" in html
    # a command breaks only at its spaces: `--constraint=X` is one unbreakable word
    assert '<span class="nw">--constraint=BEEOND</span>' in _code_spans("`sbatch --constraint=BEEOND`")
    assert isinstance(html, Markup)
    tpl = (ROOT / "ioadvisor" / "docs" / "templates" / "system.html.j2").read_text()
    assert 'join("; ")' not in tpl                  # reasons are sentences: "x.; y" never
