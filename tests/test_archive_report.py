"""`ioadvise archive report`: the wheel's logs (and copies of them under other user ids) ranked by the I/O time
at stake, each figure held to the findings `diagnose` gives for the same log and to the arithmetic written out."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from typer.testing import CliRunner  # noqa: E402

from ioadvisor.archive.report import center_report, saving_range, saving_s  # noqa: E402
from ioadvisor.archive.scan import scan  # noqa: E402
from ioadvisor.archive.worker import Settings  # noqa: E402
from ioadvisor.cli import app  # noqa: E402
from ioadvisor.diagnose import analyze  # noqa: E402
from ioadvisor.kb import KB  # noqa: E402
from tests.darshan_copies import wheel_logs, with_job  # noqa: E402

runner = CliRunner()
LOGS = {p.name: p for p in wheel_logs()}
BADOST, EXAMPLE = LOGS["sample-badost.darshan"], LOGS["example.darshan"]


@pytest.fixture(scope="module")
def wheel_kb(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("wheel")
    for p in LOGS.values():
        shutil.copy(p, d / p.name)
    data = bytearray(EXAMPLE.read_bytes())
    data[len(data) // 2] ^= 0xFF
    (d / "crashes.darshan").write_bytes(bytes(data))
    kb = d / "kb.sqlite"
    with KB.open(kb) as store:
        scan([d], store, Settings(system="wheel"), workers=2)
    return kb


def _expected() -> list[tuple[str, float]]:
    """(log name, process-hours at stake) per wheel log, from `diagnose`'s findings: the largest finding's seconds
    per rank times the job's processes / 3600, largest first."""
    out = []
    for name, p in LOGS.items():
        d = analyze(p, use_kb=False)
        at = max((f.time_at_stake_s or 0.0 for f in d.findings), default=0.0)
        out.append((name, at * d.summary.nprocs / 3600))
    return sorted(out, key=lambda x: -x[1])


def test_jobs_are_ranked_by_process_hours_at_stake_and_no_node_count_is_assumed(wheel_kb):
    with KB.open(wheel_kb) as kb:
        rep = center_report(kb, top=20)
    jobs = rep["jobs"]
    want = _expected()
    # sample-badost: LUS002, 535.389 s per rank x 2048 processes / 3600 = 304.5768 process-hours
    # example:       STRAG001, 65.038 s per rank x 2048 processes / 3600 = 37.0 process-hours
    assert want[0] == ("sample-badost.darshan", pytest.approx(304.5768, abs=1e-4))
    assert want[1] == ("example.darshan", pytest.approx(37.0, abs=1e-3))
    assert [Path(j["log"]).name for j in jobs[:2]] == ["sample-badost.darshan", "example.darshan"]
    assert [j["at_stake_process_hours"] for j in jobs[:2]] == [pytest.approx(v, abs=1e-4) for _, v in want[:2]]
    # neither log states its node count and no ranks per node is known: no nodes, no node-hours (one rank per
    # node would have made 2048 "nodes" and 304.58 "node-hours")
    assert all(j["nodes"] is None and j["at_stake_node_hours"] is None for j in jobs[:2])
    # every other job has nothing at stake, so none of them may rank above these two
    assert all(j["at_stake_process_hours"] == 0 for j in jobs[2:]) and len(jobs) == len(LOGS)
    assert rep["logs"] == {"scanned": len(LOGS) + 1, "readable": len(LOGS), "failed": 1, "empty_files": 0,
                           "impossible_jobs_left_out": 0}
    assert rep["totals"]["at_stake_process_hours"] == pytest.approx(304.5768 + 37.0, abs=1e-3)
    # the node counts the logs state: dxt.darshan and ior_hdf5_example.darshan trace every rank (1 and 4) in DXT,
    # each from one host name: 1 node each; no other wheel log states one
    stated = {Path(j["log"]).name: (j["nodes"], j["nodes_from"]) for j in jobs if j["nodes"] is not None}
    assert stated == {"dxt.darshan": (1, "log"), "ior_hdf5_example.darshan": (1, "log")}
    assert rep["totals"]["jobs_with_nodes"] == 2
    # LUS002 states its saving as 0 to 535.4 s (nothing while new files still land on the slow OST, at best the
    # OST's excess over the median; capped at the 535.389 s at stake): its range is reported, but no saving is
    # backed (the low end is 0), so no total counts 535.389 s as saved; STRAG001 states none at all
    rules = {g["rule"]: g for g in rep["rules"]}
    assert rules["LUS002"]["jobs_with_saving"] == 0 and rules["LUS002"]["saving_process_hours"] is None
    assert rules["LUS002"]["saving_up_to_process_hours"] == pytest.approx(535.389 * 2048 / 3600, abs=1e-3)
    badost = next(j for j in jobs if Path(j["log"]).name == "sample-badost.darshan")
    lus = next(f for f in badost["findings"] if f["rule"] == "LUS002")
    assert lus["saving_range_s"] == [0.0, 535.389] and lus["saving_s"] is None and badost["saving_s"] is None
    assert rules["STRAG001"]["jobs_with_saving"] == 0 and rules["STRAG001"]["saving_process_hours"] is None
    assert rules["STRAG001"]["saving_up_to_process_hours"] == 0
    ex = next(j for j in jobs if Path(j["log"]).name == "example.darshan")
    assert ex["saving_s"] is None and ex["saving_process_hours"] is None and ex["at_stake_s"] > 65
    assert rep["totals"]["saving_process_hours"] == 0 and rep["totals"]["jobs_with_saving"] == 0
    # fixes are ranked by the saving they back, then by the most they may save, then by time at stake: LUS002
    # first, and every rule that states a possible saving above STRAG001, which states none
    order = [g["rule"] for g in rep["rules"]]
    assert order[0] == "LUS002"
    assert all(order.index(r) < order.index("STRAG001") for r, g in rules.items() if g["saving_up_to_process_hours"])
    # the fix shown for a rule is the message of its costliest job's finding, as diagnose words it
    lus002 = next(f for f in analyze(BADOST, use_kb=False).findings if f.id == "LUS002")
    assert rules["LUS002"]["example"]["message"] == lus002.message


def test_nodes_from_the_log_else_the_option_else_the_center_file(wheel_kb):
    with KB.open(wheel_kb) as kb:
        by_center = center_report(kb, top=20, center_rpn={"WHEEL": 32})
        by_option = center_report(kb, top=20, ranks_per_node=64, center_rpn={"wheel": 32})

    def job(rep, name):
        return next(j for j in rep["jobs"] if Path(j["log"]).name == name)
    # the center file's 32 ranks per node: 2048 / 32 = 64 nodes; 535.389 s x 64 / 3600 = 9.518 node-hours
    top = job(by_center, "sample-badost.darshan")
    assert (top["nodes"], top["nodes_from"]) == (64, "center")
    assert top["at_stake_node_hours"] == pytest.approx(9.518, abs=1e-3)
    assert top["at_stake_process_hours"] == pytest.approx(535.389 * 2048 / 3600, abs=1e-3)   # processes: unchanged
    # the option overrides the center file: 2048 / 64 = 32 nodes
    assert (job(by_option, "sample-badost.darshan")["nodes"], by_option["ranks_per_node"]) == (32, 64)
    # a node count the log states wins: ior_hdf5_example's 4 ranks all traced on one host are 1 node, not the
    # ceil(4 / 2) = 2 that 2 ranks per node would give; noposix (512 processes, no DXT) gets ceil(512 / 64) = 8
    with KB.open(wheel_kb) as kb:
        by_two = center_report(kb, top=20, ranks_per_node=2)
    assert (job(by_two, "ior_hdf5_example.darshan")["nodes"], job(by_two, "ior_hdf5_example.darshan")["nodes_from"]) \
        == (1, "log")
    assert job(by_two, "sample-badost.darshan")["nodes"] == 1024
    assert job(by_option, "noposix.darshan")["nodes"] == 8
    assert by_center["totals"]["jobs_with_nodes"] == len(LOGS)


def test_users_and_applications_add_up_their_jobs_and_a_job_counts_its_largest_finding(tmp_path):
    d = tmp_path / "arch"
    d.mkdir()
    # user 1: three sample-badost jobs; user 3: five example jobs; user 2: one example job
    for i in range(3):
        (d / f"b{i}.darshan").write_bytes(with_job(BADOST.read_bytes(), uid=1, jobid=100 + i))
    for i in range(5):
        (d / f"e{i}.darshan").write_bytes(with_job(EXAMPLE.read_bytes(), uid=3, jobid=300 + i))
    (d / "e-user2.darshan").write_bytes(with_job(EXAMPLE.read_bytes(), uid=2, jobid=200))
    kb = tmp_path / "kb.sqlite"
    with KB.open(kb) as store:
        out = scan([d], store, Settings(), workers=2)
        assert out.added["jobs"] == 9, out.as_dict()
        rep = center_report(store)
    users = [(g["uid"], g["jobs"], g["at_stake_process_hours"]) for g in rep["users"]]
    # 3 x 304.5768 = 913.73 > 5 x 37.0 = 185.0 > 1 x 37.0
    assert [u[0] for u in users] == [1, 3, 2]
    assert [u[1] for u in users] == [3, 5, 1]
    assert users[0][2] == pytest.approx(3 * 304.5768, abs=1e-3)
    assert users[1][2] == pytest.approx(5 * 37.0, abs=1e-2)
    apps = {g["app"]: g for g in rep["applications"]}
    assert apps["ior"]["jobs"] == 3 and apps["ior"]["top_rule"] == "LUS002"
    assert apps["vpicio_uni"]["jobs"] == 6 and apps["vpicio_uni"]["top_rule"] == "STRAG001"


def test_saving_rule():
    """The backed saving is the low end of diagnose's range, capped at the time at stake; a range from 0 backs
    none (the high end is what the fix may save at most, never counted as saved)."""
    assert saving_s({"time_at_stake_s": 10.0, "evidence": {"expected_saving": {"low_s": 4.0, "high_s": 8.0}}}) == (
        4.0, "expected_saving")
    assert saving_range({"time_at_stake_s": 6.0, "evidence": {"expected_saving": {"low_s": 4.0, "high_s": 8.0}}}) == (
        4.0, 6.0, "expected_saving")
    assert saving_s({"time_at_stake_s": 10.0, "evidence": {"expected_saving": {"low_s": 0.0, "high_s": 8.0}}}) == (
        None, None)
    # a finding stored before the range states only its upper end: a range from 0, no backed saving
    assert saving_range({"time_at_stake_s": 535.389, "evidence": {"expected_saving_s": 535.4}}) == (
        0.0, 535.389, "expected_saving_s")
    assert saving_s({"time_at_stake_s": 10.0, "evidence": {"expected_saving_s": 4.0}}) == (None, None)
    # the range wins over the old figure when a finding has both (LUS002 and IMB001 carry both)
    both = {"time_at_stake_s": 10.0, "evidence": {"expected_saving_s": 9.0,
                                                   "expected_saving": {"low_s": 2.0, "high_s": 9.0}}}
    assert saving_s(both) == (2.0, "expected_saving") and saving_range(both) == (2.0, 9.0, "expected_saving")
    # a range upside down, negative or not finite is not a range: nothing backed, nothing reported
    for low, high in ((5.0, 1.0), (-1.0, 3.0), (math.nan, 3.0), (1.0, math.inf), (True, 3.0), ("1", 3.0)):
        f = {"time_at_stake_s": 10.0, "evidence": {"expected_saving": {"low_s": low, "high_s": high}}}
        assert saving_range(f) is None and saving_s(f) == (None, None), (low, high)
    # a measured 4x speed-up of 10 s saves 10 x (1 - 1/4) = 7.5 s
    assert saving_s({"time_at_stake_s": 10.0, "evidence": {"expected_gain": 4.0}}) == (7.5, "expected_gain")
    # nothing backs a gain: unknown, never the 10 s at stake
    assert saving_s({"time_at_stake_s": 10.0, "evidence": {}}) == (None, None)
    assert saving_s({"time_at_stake_s": 10.0, "evidence": {"expected_gain": None}}) == (None, None)


def test_cli_report_json_terminal_and_empty_kb(wheel_kb, tmp_path):
    r = runner.invoke(app, ["archive", "report", "--kb", str(wheel_kb), "--json", "--top", "3"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    with KB.open(wheel_kb) as kb:
        assert doc == json.loads(json.dumps(center_report(kb, top=3)))
    assert len(doc["jobs"]) == 3 and doc["schema"] == "ioadvisor.archive-report/2"
    r = runner.invoke(app, ["archive", "report", "--kb", str(wheel_kb)])
    assert r.exit_code == 0
    assert "6265799" in r.stdout and "LUS002" in r.stdout and "Top fixes" in r.stdout
    assert r.stdout.index("6265799") < r.stdout.index("4478544")        # badost's job before example's
    r = runner.invoke(app, ["archive", "report", "--kb", str(tmp_path / "none.sqlite")])
    assert r.exit_code == 0 and "run `ioadvise archive scan` first" in r.stdout
    r = runner.invoke(app, ["archive", "report", "--kb", str(wheel_kb), "--ranks-per-node", "0"])
    assert r.exit_code == 2


def test_the_report_is_a_page_of_the_generated_site(wheel_kb, tmp_path):
    from ioadvisor.docs.build import build_site
    with KB.open(wheel_kb, create=False) as kb:
        build_site(tmp_path / "site", kb=kb, langs=("en", "ja"), formats=("html", "md"), plot_cache=False,
                   archive=True)
        rep = center_report(kb, top=20)
    en = (tmp_path / "site" / "en" / "archive.html").read_text()
    # the ranking as the report has it: badost's job (304.58 node-h, shown "305") above example's (37.00)
    assert en.index("<td>6265799</td>") < en.index("<td>4478544</td>")
    assert ">305<" in en and ">37.00<" in en and "LUS002" in en
    lus002 = next(g for g in rep["rules"] if g["rule"] == "LUS002")
    assert lus002["example"]["message"].split(":")[0] in en
    assert 'href="archive.html"' in (tmp_path / "site" / "en" / "index.html").read_text()
    ja = (tmp_path / "site" / "ja" / "archive.html").read_text()
    assert "ジョブアーカイブで失われている I/O 時間" in ja and "I/O time at stake in the job archive" not in ja
    md = (tmp_path / "site" / "en" / "archive.md").read_text()
    assert "| 6265799 |" in md and "(archive.md)" in (tmp_path / "site" / "en" / "index.md").read_text()
    assert "archive.md" in (tmp_path / "site" / "mkdocs-en.yml").read_text()


def test_no_archive_page_without_scanned_jobs(tmp_path):
    from ioadvisor.docs.build import build_site
    with KB.open(tmp_path / "empty.sqlite", create=False) as kb:
        build_site(tmp_path / "site", kb=kb, langs=("en",), formats=("html",), plot_cache=False)
    assert not (tmp_path / "site" / "en" / "archive.html").exists()
    assert "archive.html" not in (tmp_path / "site" / "en" / "index.html").read_text()


def test_docs_name_every_field_the_json_documents_print(wheel_kb, tmp_path):
    doc_text = (Path(__file__).resolve().parent.parent / "docs" / "archive.md").read_text()
    with KB.open(wheel_kb) as kb:
        rep = center_report(kb)
    keys = set(rep) | set(rep["logs"]) | set(rep["totals"]) | set(rep["jobs"][0]) | set(rep["users"][0])
    keys |= set(rep["applications"][0]) | set(rep["rules"][0]) | set(rep["rules"][0]["example"])
    keys |= set(rep["jobs"][0]["findings"][0])
    r = runner.invoke(app, ["archive", "scan", str(tmp_path / "none"), "--kb", str(tmp_path / "k.sqlite")])
    assert r.exit_code == 2
    d = tmp_path / "one"
    d.mkdir()
    shutil.copy(EXAMPLE, d / "x.darshan")
    r = runner.invoke(app, ["archive", "scan", str(d), "--kb", str(tmp_path / "k.sqlite"), "--json"])
    scan_doc = json.loads(r.stdout)
    keys |= set(scan_doc) | set(scan_doc["added"])
    missing = sorted(k for k in keys if f"`{k}`" not in doc_text)
    assert missing == []


def test_lus001_names_a_directory_of_the_users_never_a_file_system_root():
    """example.darshan's shared file (2 TiB, /scratch2/scratchdirs/glock/tokioabc-s.4478544/vpicio/vpicio.hdf5 on
    mount /scratch2, 24 stripes) made a one-stripe file: where it lies below the mount, LUS001 stripes a
    directory beside it; moved into the mount's root, the fix must not be `mkdir -p /scratch2/striped` but a
    directory the job wrote to below the mount, else `$USER`'s directory there."""
    from ioadvisor.frozen import replace

    from ioadvisor.diagnose import judge
    from ioadvisor.diagnose.rules import load_thresholds
    s = analyze(EXAMPLE, use_kb=False).summary
    big = max(s.shared_files, key=lambda f: f.bytes)
    assert big.mount == "/scratch2" and big.lustre.stripe_count == 24

    def lus001(files):
        d = judge(replace(s, files=tuple(files)), load_thresholds(None), None, use_kb=False)
        f = next(f for f in d.findings if f.id == "LUS001")
        # the message's `mkdir -p` names the same directory as the command
        assert f"`mkdir -p {f.evidence['command'].split(' ', 6)[-1]}`" in f.message
        return f.evidence["command"]
    one = replace(big, lustre=replace(big.lustre, stripe_count=1))
    others = [f for f in s.files if f is not big]
    home = "/scratch2/scratchdirs/glock/tokioabc-s.4478544/vpicio"
    assert lus001([one] + others).endswith(f" {home}/striped")
    # in the root of /scratch2: the job wrote nothing else below the mount, so $USER's directory there
    at_root = replace(one, path="/scratch2/vpicio.hdf5")
    assert not any(f.bytes_written and f.mount == "/scratch2" for f in others)
    cmd = lus001([at_root] + others)
    assert cmd.endswith(' "/scratch2/$USER/striped"') and "/scratch2/striped" not in cmd
    # ... and with an output directory of the job below the mount (a copy of the file written there), that one
    out = replace(big, id=big.id + 1, path=f"{home}/out.h5", shared=False, lustre=None)
    assert lus001([at_root, out] + others).endswith(f" {home}/striped")
