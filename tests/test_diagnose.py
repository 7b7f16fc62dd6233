"""`ioadvise diagnose`: derived values checked against independent reads of the real logs, rules, CLI, bad input."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

darshan = pytest.importorskip("darshan")
from darshan.backend import cffi_backend as raw  # noqa: E402

from ioadvisor.cli import app  # noqa: E402
from ioadvisor.darshanlog.child import summarize  # noqa: E402
from ioadvisor.darshanlog.summary import LogSummary, to_workload  # noqa: E402
from ioadvisor.diagnose.facts import KBFile  # noqa: E402
from ioadvisor.diagnose.rules import Context, load_thresholds, run_rules  # noqa: E402
from ioadvisor.errors import ConfigError, ImportFormatError  # noqa: E402
from ioadvisor.frozen import replace  # noqa: E402

LOGDIR = Path(darshan.__file__).parent / "examples" / "example_logs"
ROOT = Path(__file__).resolve().parent.parent
LOGS = sorted(LOGDIR.glob("*.darshan"))
runner = CliRunner()


@pytest.fixture(scope="module")
def summaries() -> dict[str, LogSummary]:
    return {p.name: summarize(p) for p in LOGS}


def _independent(path: Path) -> dict:
    """nprocs and POSIX/STDIO byte totals read straight from the C backend (no ioadvisor code)."""
    log = raw.log_open(str(path))
    try:
        job = raw.log_get_job(log)
        mods = raw.log_get_modules(log)
        out = {"nprocs": job["nprocs"], "posix_w": 0, "posix_r": 0, "stdio_w": 0, "mpiio": "MPI-IO" in mods}
        for mod, wkey, rkey, prefix in (("POSIX", "POSIX_BYTES_WRITTEN", "POSIX_BYTES_READ", "posix"),
                                        ("STDIO", "STDIO_BYTES_WRITTEN", "STDIO_BYTES_READ", "stdio")):
            if mod not in mods:
                continue
            while (rec := raw.log_get_record(log, mod, dtype="numpy")) is not None:
                names = raw.counter_names(mod)
                out[f"{prefix}_w"] += int(rec["counters"][names.index(wkey)])
                if prefix == "posix":
                    out["posix_r"] += int(rec["counters"][names.index(rkey)])
        return out
    finally:
        raw.log_close(log)


def test_wheel_has_logs():
    assert len(LOGS) >= 5


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name[:24])
def test_derived_matches_independent_read(log, summaries):
    s = summaries[log.name]
    ind = _independent(log)
    assert s.nprocs == ind["nprocs"]
    assert s.apis.get("POSIX", dataclasses.make_dataclass("Z", [("bytes_written", int, 0), ("bytes_read", int, 0)])()
                      ).bytes_written == ind["posix_w"]
    if "POSIX" in s.apis:
        assert s.apis["POSIX"].bytes_read == ind["posix_r"]
    if "STDIO" in s.apis:
        assert s.apis["STDIO"].bytes_written == ind["stdio_w"]
    assert s.has_mpiio == ind["mpiio"]
    run_rules(s)   # every log diagnoses without error


def test_no_mpiio_findings_without_mpiio(summaries):
    for name, s in summaries.items():
        if s.has_mpiio:
            continue
        for f in run_rules(s):
            assert not f.id.startswith("MPI"), name
            assert "MPI-IO" not in f.message and "collective" not in f.message, (name, f.id)


def test_dxt_log_without_executable_name(summaries):
    s = summaries["dxt.darshan"]
    assert s.exe == "(not recorded)" and s.notes


def _one_stripe_example(summaries):
    """example.darshan's 2 TiB shared file as if it had been created with one stripe (its real layout is 24):
    the only change is the layout; bytes, ranks and times are the log's."""
    s = summaries["example.darshan"]
    (f,) = s.shared_files
    lay = replace(f.lustre, stripe_count=1, osts=(f.lustre.osts[0],))
    return replace(s, files=(replace(f, lustre=lay),))


def test_lus001_stripe_count_not_capped_by_the_logs_lower_bound(summaries):
    s = _one_stripe_example(summaries)
    assert s.fs_ost_count_at_least == 24        # the highest OST index in the log is 23: at least 24 OSTs
    (lus,) = [x for x in run_rules(s) if x.id == "LUS001"]
    # 2 TiB >= 100 GiB -> 72 by the size table; 2048 ranks; the log's 24 is a lower bound, never a cap
    assert lus.evidence["recommended_stripe_count"] == 72
    assert "at least 24" in lus.evidence["stripe_count_reasoning"] and "capped" not in lus.evidence[
        "stripe_count_reasoning"]
    assert "-c 72 -S 1M " in lus.evidence["command"] and "MiB" not in lus.evidence["command"]
    # at stake: the slowest rank's time on the file, 85.5 s of a 117 s run -> high
    assert lus.time_at_stake_s > 80 and lus.severity == "high"
    assert lus.evidence["expected_gain"] is None or lus.evidence["expected_gain"] > 1


def test_lus001_small_shared_file_is_not_striping_material(summaries):
    base = summaries["ior_hdf5_example.darshan"]     # one shared file on a single OST, but only 8 MB
    f = base.shared_files[0]
    assert f.lustre.stripe_count == 1 and f.bytes < 1 << 30
    assert not any(x.id == "LUS001" for x in run_rules(base))


LFS_SIZE = re.compile(r"^[0-9]+[bkmgtpeBKMGTPE]?$")   # llapi_parse_size: digits, one optional unit letter


def _lfs_commands(text: str) -> list[list[str]]:
    return [shlex.split(m) for m in re.findall(r"`(lfs [^`]*)`", text)]


def _check_lfs(argv: list[str]) -> None:
    """What `lfs setstripe` accepts: -c N, -S SIZE (a multiple of 64 KiB), -i N, then one directory."""
    assert argv[:2] == ["lfs", "setstripe"], argv
    args = argv[2:]
    while len(args) > 1:
        opt, val = args[0], args[1]
        assert opt in ("-c", "-S", "-i"), argv
        if opt == "-S":
            assert LFS_SIZE.match(val), f"{val!r} is not a size lfs parses: {argv}"
            unit = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[val[-1].lower() if val[-1].isalpha()
                                                                                else ""]
            assert int(val.rstrip("bkmgtpeBKMGTPE")) * unit % 65536 == 0, argv
        else:
            assert re.fullmatch(r"-?[0-9]+", val), argv
        args = args[2:]
    assert len(args) == 1 and not args[0].startswith("-"), argv


def test_every_printed_lfs_command_parses(summaries, tmp_path):
    s = _one_stripe_example(summaries)
    texts = []
    for name, summ in list(summaries.items()) + [("one-stripe", s)]:
        for f in run_rules(summ, ctx=Context(center_ost_count=30, center_name="HA8000")) + run_rules(summ):
            texts.append(f.message)
            texts.append(f"`{f.evidence['command']}`" if "command" in f.evidence else "")
    cmds = [c for t in texts for c in _lfs_commands(t)]
    assert cmds, "the one-stripe case must print a command"
    for c in cmds:
        _check_lfs(c)
    # the shared spelling itself: 1 MiB is 1M, never 1MiB; 192 KiB is 192K
    from ioadvisor.lustre import Setstripe
    for size, spelled in ((1 << 20, "1M"), (4 << 20, "4M"), (192 << 10, "192K"), (1 << 30, "1G")):
        argv = shlex.split(Setstripe("/lus/dir", 8, size).render())
        assert argv[argv.index("-S") + 1] == spelled
        _check_lfs(argv)


def test_tsubame_center_prints_without_error():
    """TSUBAME3.0 has published comparisons but no measured numbers: the advisor's prediction has no value."""
    r = runner.invoke(app, ["diagnose", str(LOGDIR / "example.darshan"), "--center", "tsubame3"])
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and "TypeError" not in r.output and "TSUBAME3.0" in r.output
    r = runner.invoke(app, ["diagnose", str(LOGDIR / "example.darshan"), "--center", "tsubame3", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["schema"] == "ioadvisor.diagnose/2"


def test_user_thresholds_override_and_validate(tmp_path, summaries):
    p = tmp_path / "t.toml"
    p.write_text("[LUS002]\nfactor = 100.0\n")
    t = load_thresholds(p)
    assert t["LUS002"]["factor"] == 100.0
    assert not any(f.id == "LUS002" for f in run_rules(summaries["sample-badost.darshan"], t))
    # a list threshold takes a list, a number threshold a number of either kind; the wrong type is refused
    steps = tmp_path / "steps.toml"
    steps.write_text("[LUS001]\nsize_steps = [1, 2, 3]\n[LUS002]\nfactor = 3\n")
    assert load_thresholds(steps)["LUS001"]["size_steps"] == [1, 2, 3]
    wrong = tmp_path / "wrong.toml"
    wrong.write_text("[LUS001]\nsize_steps = 5\n")
    with pytest.raises(ConfigError, match=r"\[LUS001\] size_steps must be a list"):
        load_thresholds(wrong)
    bad = tmp_path / "bad.toml"
    bad.write_text("[LUS999]\nx = 1\n")
    with pytest.raises(ConfigError, match="LUS999"):
        load_thresholds(bad)


def test_workload_from_log(summaries):
    w = to_workload(summaries["example.darshan"], ranks_per_node=24)
    assert w.layout == "shared" and w.op == "write" and w.api == "MPIIO"
    ind = _independent(LOGDIR / "example.darshan")
    assert w.nodes == 86 and w.bytes_per_rank == (ind["posix_w"] + ind["stdio_w"]) // 2048


def test_truncated_real_log_is_a_clear_error(tmp_path):
    data = (LOGDIR / "example.darshan").read_bytes()
    for n in (64, 2000, len(data) - 500):
        p = tmp_path / f"cut{n}.darshan"
        p.write_bytes(data[:n])
        with pytest.raises(ImportFormatError, match="truncated"):
            summarize(p)
        r = runner.invoke(app, ["diagnose", str(p)])
        assert r.exit_code == 2 and p.name in r.output and "Traceback" not in r.output


def test_text_file_exit_2(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello\n" * 20)
    r = runner.invoke(app, ["diagnose", str(p)])
    assert r.exit_code == 2 and "not a Darshan log" in r.output


def test_cli_json_and_html(tmp_path):
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["diagnose", str(LOGDIR / "sample-badost.darshan"), "--json", "--html", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == "ioadvisor.diagnose/2" and doc["job"]["nprocs"] == 2048
    assert [f["id"] for f in doc["findings"]][0] == "LUS002"
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "OST 14" in html
    # self-contained: plots inline as SVG, nothing fetched, no scripts
    assert html.count("<svg") == 2          # request sizes and write time per OST (no shared file in this log)
    assert "<script" not in html and 'src="' not in html and "href=" not in html
    # the OST plot marks exactly the OST the finding names (OST 14 of 24) in red
    assert html.count('fill="#c0392b"') == 1 and "mean write time, slowest rank 14:" in html
    # the finding's arithmetic is in the page: 46446.9 s / 85 files on OST 14
    assert "/ 85 files = 546.4 s per file on OST 14" in html
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_cli_terminal_report():
    r = runner.invoke(app, ["diagnose", str(LOGDIR / "example.darshan")])
    assert r.exit_code == 0 and "STRAG001" in r.output and "2048" in r.output
    assert "IMB001" not in r.output and "85.49 - 20.45 = 65.04 s" in r.output     # the arithmetic is shown
    assert "Counters: slowest_rank=1312, fastest_rank=597" in r.output                 # and the counters


def test_record_adds_a_production_run(kb_path, tmp_path):
    """example.darshan's files lie under /scratch2: a center mounting its scratch2 file system there gets the job
    as a production run filed under scratch2."""
    log = LOGDIR / "example.darshan"
    c = tmp_path / "nersc.toml"
    c.write_text('name = "nersc"\n[[filesystems]]\nname = "scratch2"\ntype = "lustre"\nmount = "/scratch2"\n')
    r = runner.invoke(app, ["diagnose", str(log), "--record", "--center", str(c), "--kb", str(kb_path), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["recorded"] == {"system": "nersc", "runs": 1, "already_known": False, "note": None}
    from ioadvisor.kb.store import KB, RunFilter
    with KB.open(kb_path, create=False) as kb:
        (run,) = kb.runs(RunFilter(system="nersc", kind="production"))
    ind = _independent(log)
    assert run.op == "write" and run.ranks == ind["nprocs"] and run.layout == "shared" and run.stripe_count == 24
    assert run.total_bytes == ind["posix_w"] + ind["stdio_w"] and run.filesystem == "scratch2"
    # the same log again adds nothing
    r2 = runner.invoke(app, ["diagnose", str(log), "--record", "--center", str(c), "--kb", str(kb_path), "--json"])
    assert json.loads(r2.stdout)["recorded"]["already_known"] is True


def test_kb_import_detects_darshan_and_rejects_truncated(kb_path, tmp_path):
    cut = tmp_path / "cut.darshan"
    cut.write_bytes((LOGDIR / "sample-badost.darshan").read_bytes()[:200000])
    r = runner.invoke(app, ["kb", "import", "--kb", str(kb_path), str(cut), "--system", "edison"])
    assert r.exit_code == 2 and "cut.darshan" in r.output


def test_center_gives_ost_count_and_advice_for_striping(summaries):
    from ioadvisor.diagnose import _with_advice
    s = _one_stripe_example(summaries)
    (lus,) = [x for x in run_rules(s, ctx=Context(center_ost_count=30, center_name="HA8000")) if x.id == "LUS001"]
    assert lus.evidence["recommended_stripe_count"] == 30 and "30 OSTs" in lus.message   # a real count caps
    from ioadvisor.center import load_center
    f = _with_advice(lus, to_workload(s, 16), None, load_center("ha8000"))
    assert f.advice is not None and f.advice.recommendation.config.stripe_count > 1


def test_pfl_layout_uses_the_last_instantiated_component():
    from ioadvisor.darshanlog.derive import _derive

    def comp(size, count, start, end, osts, flags):
        return {"counters": {"LUSTRE_COMP_STRIPE_SIZE": size, "LUSTRE_COMP_STRIPE_COUNT": count,
                             "LUSTRE_COMP_FLAGS": flags, "LUSTRE_COMP_EXT_START": start,
                             "LUSTRE_COMP_EXT_END": end}, "pool_name": "capacity", "ost_ids": osts}
    lus = {"id": 7, "rank": -1, "components": [
        comp(1 << 20, 1, 0, 4 << 20, [3], 0x10),
        comp(1 << 20, 4, 4 << 20, 64 << 20, [5, 6, 7, 8], 0x10),
        comp(4 << 20, 16, 64 << 20, -1, [], 0)]}           # not reached by the file: no objects
    names = raw.counter_names("POSIX")
    fnames = raw.fcounter_names("POSIX")
    posix = {"id": 7, "rank": -1, "counters": dict.fromkeys(names, 0), "fcounters": dict.fromkeys(fnames, 0.0)}
    posix["counters"]["POSIX_BYTES_WRITTEN"] = 50 << 20
    job = {"nprocs": 8, "run_time": 10.0, "metadata": {}}
    s = _derive("x.darshan", job, "", [("/lus", "lustre")], {7: "/lus/f"}, ("POSIX", "LUSTRE"),
                {"POSIX": [posix], "LUSTRE": [lus]}, False)
    (f,) = s.files
    assert f.shared and f.fs_type == "lustre"
    assert f.lustre.components == 3 and f.lustre.stripe_count == 4 and f.lustre.osts == (3, 5, 6, 7, 8)
    assert s.exe == "(not recorded)"


def test_a_crash_in_the_reader_becomes_a_clear_error(monkeypatch):
    import signal
    import ioadvisor.darshanlog.derive as derive
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("needs fork to carry the patched reader into the child")

    def crash(path, backend, complaints):
        import faulthandler
        faulthandler.disable()      # keep pytest's crash dump of the child out of the output
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(derive, "_read", crash)
    with pytest.raises(ImportFormatError, match="crashed.*SIGSEGV"):
        summarize(LOGDIR / "example.darshan")


def test_cli_bad_thresholds_file_exit_2(tmp_path):
    p = tmp_path / "t.toml"
    p.write_text("[SIZE001]\nshare = 'lots'\n")
    r = runner.invoke(app, ["diagnose", str(LOGDIR / "example.darshan"), "--thresholds", str(p)])
    assert r.exit_code == 2 and "t.toml" in r.output and "share" in r.output


def _independent_macsio(summaries):
    """shane_macsio's HDF5 file as if its 64 collective writes had carried at most half of the bytes, and the job
    had spent 10 s per rank in them: the log itself cannot show either (see test_diagnose_logs.py)."""
    s = summaries[next(n for n in summaries if n.startswith("shane_macsio"))]
    files = []
    for f in s.files:
        if f.path.endswith(".h5"):
            w = replace(f.mpiio_write, collective_bytes_max=f.mpiio_write.bytes // 2, time=160.0)
            f = replace(f, mpiio_write=w)
        files.append(f)
    return replace(s, files=tuple(files), run_time=40.0)


def test_mpi001_fires_only_where_the_bytes_are_provably_independent(summaries):
    s = _independent_macsio(summaries)
    (f,) = [x for x in run_rules(s) if x.id == "MPI001"]
    assert f.evidence["independent_ops"] == 7695 and f.evidence["collective_share_max"] == 0.5
    # 160 rank-s x (1 - 0) independent share / 16 ranks = 10 s per rank, 25% of a 40 s run -> high
    assert abs(f.time_at_stake_s - 10.0) < 1e-6 and f.severity == "high"
    assert not any(x.id == "MPI001" for x in run_rules(summaries[next(n for n in summaries
                                                                       if n.startswith("shane_macsio"))]))


def test_mpi001_warns_where_the_center_measured_two_phase_losing(summaries):
    from ioadvisor.kb.store import KB
    s = _independent_macsio(summaries)
    with KB.open(None, create=False) as kb:
        measured = [c for c in kb.comparisons("TSUBAME3.0") if c["factor"] == "cb_write"]
    (f,) = [x for x in run_rules(s, ctx=Context(center_name="TSUBAME3.0", kb=KBFile())) if x.id == "MPI001"]
    assert measured and measured[0]["better"] == "disable"
    assert f.evidence["contrary_comparisons"] and "TSUBAME3.0" in f.message
    (plain,) = [x for x in run_rules(s) if x.id == "MPI001"]
    assert "contrary_comparisons" not in plain.evidence


def test_library_entry_point_for_many_logs():
    """`analyze` is what a scanner of many logs calls: findings with severity, evidence and seconds at stake."""
    from ioadvisor.diagnose import analyze
    d = analyze(LOGDIR / "sample-badost.darshan", use_kb=False)
    rec = json.loads(json.dumps(d.as_dict()))            # JSON-ready, no NaN or objects
    assert rec["nprocs"] == 2048 and rec["run_time_s"] == 780.0
    ind = _independent(LOGDIR / "sample-badost.darshan")
    assert ind["posix_w"] == 2048 * 268435456                # 2048 files of 256 MiB
    # I/O time per rank: POSIX + STDIO read/write rank-seconds / 2048, well under the 780 s run
    assert 0 < rec["io_time_per_rank_s"] < 780
    (f,) = [x for x in rec["findings"] if x["id"] == "LUS002"]
    assert f["severity"] == "high" and f["time_at_stake_s"] > 500 and f["evidence"]["arithmetic"]
    assert [x["id"] for x in rec["findings"]] == [x.id for x in d.findings]   # most severe first, kept


def test_a_center_with_fewer_osts_than_the_log_proves_is_not_used_as_a_cap():
    """ior_hdf5_example's file sits on OST index 106: the file system has at least 107 OSTs, so HA8000's 30 cannot
    be the count of the file system this log was written on."""
    from ioadvisor.diagnose import analyze
    log = raw.log_open(str(LOGDIR / "ior_hdf5_example.darshan"))
    try:
        rec = raw.log_get_record(log, "LUSTRE", dtype="dict")
    finally:
        raw.log_close(log)
    assert list(rec["components"][0]["ost_ids"]) == [106]
    d = analyze(LOGDIR / "ior_hdf5_example.darshan", center="ha8000", use_kb=False)
    assert any("30 Lustre OSTs" in n and "106" in n for n in d.summary.notes)
    assert d.summary.fs_ost_count_at_least == 107                 # 106 + 1, the log's own lower bound stands
    plain = analyze(LOGDIR / "ior_hdf5_example.darshan", use_kb=False)
    assert not any("Lustre OSTs" in n for n in plain.summary.notes)   # no center, nothing to contradict


def test_html_plots_per_rank_bytes_beside_time_for_a_shared_file(tmp_path):
    out = tmp_path / "e.html"
    r = runner.invoke(app, ["diagnose", str(LOGDIR / "example.darshan"), "--html", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    # request sizes, time per rank, bytes per rank, write time per OST
    assert page.count("<svg") == 4 and "Bytes per rank on shared files" in page
    # the bars carry the log's values: ranks 1312 and 597 each moved 1 GiB (1024 MiB) at the MPI-IO layer
    assert "slowest rank vpicio.hdf5: 1024 MiB" in page and "fastest rank vpicio.hdf5: 1024 MiB" in page
    assert "<script" not in page and "IMB001" not in page and "STRAG001" in page


@pytest.mark.parametrize("text, line, word", [
    ("# site thresholds\n[LUS002]\nfactor = 3\n\n[LUS999]\nx = 1\n", 5, "LUS999"),       # unknown rule
    ("[LUS002]\nfactor = 3\n[SIZE001]\n\nshare_x = 0.5\n", 5, "share_x"),              # unknown key
    ("[LUS002]\nfactor = 3\n[LUS001]\n# steps\nsize_steps = 5\n", 5, "size_steps"),     # wrong type
])
def test_a_bad_thresholds_file_names_the_line_to_fix(text, line, word, tmp_path):
    """The error named the file only (`t.toml: unknown rule 'LUS999'`): in a site's long thresholds file the
    user had to search for it. Like a center file's errors it must name the line, `t.toml:5:`."""
    p = tmp_path / "t.toml"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_thresholds(p)
    assert str(e.value).startswith(f"{p}:{line}: ") and word in str(e.value)


def test_lus001_advises_the_stripe_count_advise_json_decides(summaries):
    """example.darshan's 2 TiB shared file put on one stripe, judged for Dell-EE-Lustre-2.3 (24 OSTs) with the
    reference KB at 16 ranks per node (2,048 ranks: 128 nodes). The size table says 72 stripes, capped at the 24
    OSTs; the advice, from the system's measured shared-file runs, decides 8. LUS001 must advise what
    `ioadvise advise --json` recommends for the command it quotes (8), not a count of its own (24), and its
    command must set that count."""
    from ioadvisor.center import load_center
    from ioadvisor.diagnose import judge
    s = _one_stripe_example(summaries)
    d = judge(s, load_thresholds(), load_center("Dell-EE-Lustre-2.3"), ranks_per_node=16)
    (lus,) = [x for x in d.findings if x.id == "LUS001"]
    ev = lus.evidence
    m = re.search(r"`(ioadvise advise [^`]*)`", ev["stripe_count_reasoning"])
    assert m and ev["stripe_count_from"] == "advise"
    r = runner.invoke(app, shlex.split(m.group(1))[1:] + ["--json"])
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)["recommendation"]
    assert rec["layout"] == "shared" and rec["filesystem"] == "lustre"
    assert ev["recommended_stripe_count"] == rec["stripe_count"] == 8
    assert " -c 8 " in ev["command"] and "over 8 OSTs" in lus.message
    assert lus.advice is not None and lus.advice.recommendation.config.stripe_count == 8


def test_lus001_without_a_center_says_what_the_advices_count_needs(summaries, monkeypatch):
    """Without a center (or with one but no KB read, as an archive scan judges) the size table gives the count,
    and the reasoning says what the advice's count would need; the KB and the model are never touched (asking
    the advice would raise here)."""
    from ioadvisor.center import load_center
    from ioadvisor.diagnose import judge
    import ioadvisor.advise
    monkeypatch.setattr(ioadvisor.advise, "advise", lambda *a, **k: pytest.fail("advise asked without a KB"))
    s = _one_stripe_example(summaries)
    (lus,) = [x for x in judge(s, load_thresholds()).findings if x.id == "LUS001"]
    assert lus.evidence["stripe_count_from"] == "size table" and lus.evidence["recommended_stripe_count"] == 72
    assert "needs --center" in lus.evidence["stripe_count_reasoning"]
    (lus,) = [x for x in judge(s, load_thresholds(), load_center("Dell-EE-Lustre-2.3"), use_kb=False).findings
              if x.id == "LUS001"]
    assert lus.evidence["recommended_stripe_count"] == 24          # 72 capped at the 24 OSTs
    assert "KB's runs of Dell-EE-Lustre-2.3" in lus.evidence["stripe_count_reasoning"]


def test_lus001_quotes_an_advise_command_that_runs_for_a_center_given_as_a_file(summaries, tmp_path):
    """A site's center file, named like the shipped Dell-EE-Lustre-2.3 but with two Lustre file systems, `home`
    and `scratch` mounted at /scratch2/scratchdirs/$USER. The log says its 2 TiB file sits on mount /scratch2, which
    is no file system's mount, so matching the log's mount found none of the two (no advice asked), and the
    command quoted `--center Dell-EE-Lustre-2.3`: the shipped center, which has no `scratch` (it fails). What
    must not happen: a quoted command that fails, or one that answers another count than the finding's. The
    file's path is under the scratch mount, so the advice is asked for `scratch`, and the command names the file."""
    from ioadvisor.center import load_center
    from ioadvisor.diagnose import judge
    text = (ROOT / "data" / "centers" / "dell-ee-lustre-2.3.toml").read_text()
    head = text[:text.index("[[filesystems]]")]
    site = tmp_path / "site center.toml"          # a space: the command quotes it for the shell
    site.write_text(head + "".join(
        f'[[filesystems]]\nname = "{n}"\ntype = "lustre"\nost_count = {c}\nmount = "{m}"\nstriping = "user"\n\n'
        for n, c, m in (("home", 4, "/home"), ("scratch", 24, "/scratch2/scratchdirs/$USER"))))
    s = _one_stripe_example(summaries)
    assert s.shared_files[0].mount == "/scratch2"
    d = judge(s, load_thresholds(), load_center(site), ranks_per_node=16, center_spec=str(site))
    (lus,) = [x for x in d.findings if x.id == "LUS001"]
    ev = lus.evidence
    assert ev["stripe_count_from"] == "advise", ev["stripe_count_reasoning"]
    m = re.search(r"`(ioadvise advise [^`]*)`", ev["stripe_count_reasoning"])
    argv = shlex.split(m.group(1))[1:]
    assert argv[argv.index("--center") + 1] == str(site) and argv[argv.index("--tier") + 1] == "scratch"
    r = runner.invoke(app, argv + ["--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["recommendation"]["stripe_count"] == ev["recommended_stripe_count"]


def test_the_quoted_advise_command_names_the_kb_the_finding_read(tmp_path):
    """A diagnosis run with `--kb K` quotes a command without it: run as quoted, it reads the default KB, which
    may decide another count. The command must carry the KB's absolute path, quoted for the shell."""
    from ioadvisor.diagnose.advised import advise_command
    from ioadvisor.model.types import Workload
    w = Workload(nodes=2, ranks_per_node=4, bytes_per_rank=1 << 30, api="MPIIO", layout="shared")
    argv = shlex.split(advise_command("my center.toml", "k b.sqlite", w, "scratch"))
    assert argv[argv.index("--kb") + 1] == os.path.abspath("k b.sqlite")
    assert argv[argv.index("--center") + 1] == "my center.toml"
    assert "--kb" not in shlex.split(advise_command("X", None, w, "lustre"))


def test_the_html_page_and_the_terminal_show_the_same_summary_rows(tmp_path):
    """The page a user mails to the center is not poorer than the terminal: the node count, the run's start and the
    Lustre OSTs used (24 on this log) were on the terminal panel only."""
    out = tmp_path / "r.html"
    log = str(LOGDIR / "sample-badost.darshan")
    r = runner.invoke(app, ["diagnose", log, "--json", "--html", str(out)])
    assert r.exit_code == 0, r.output
    from ioadvisor.diagnose.report import job_rows
    rows = job_rows(json.loads(r.stdout))
    labels = [k for k, _ in rows]
    assert {"Nodes", "Lustre", "Run time"} <= set(labels)
    html = out.read_text()
    import html as _html
    for k, v in rows:
        assert f"<tr><td>{_html.escape(k)}</td><td>{_html.escape(v)}</td></tr>" in html, (k, v)
    term = runner.invoke(app, ["diagnose", log], env={"COLUMNS": "400"})
    assert term.exit_code == 0, term.output
    for k in labels:
        assert k in term.output, k
