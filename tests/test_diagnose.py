"""`ioadvise diagnose`: derived values checked against independent reads of the real logs, rules, CLI, bad input."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

darshan = pytest.importorskip("darshan")
from darshan.backend import cffi_backend as raw  # noqa: E402

from ioadvisor.cli import app  # noqa: E402
from ioadvisor.diagnose.derive import LogSummary, summarize, to_workload  # noqa: E402
from ioadvisor.diagnose.rules import load_thresholds, run_rules  # noqa: E402
from ioadvisor.errors import ConfigError, ImportFormatError  # noqa: E402

LOGDIR = Path(darshan.__file__).parent / "examples" / "example_logs"
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


def test_example_log_is_one_shared_file_striped_over_24(summaries):
    s = summaries["example.darshan"]
    (f,) = s.shared_files
    assert f.lustre is not None and f.lustre.stripe_count == 24 and len(f.lustre.osts) == 24
    assert s.mpiio_coll_writes > s.mpiio_indep_writes
    assert not any(x.id == "MPI001" for x in run_rules(s))   # most ops are already collective


def test_badost_names_ost_14_from_the_data(summaries):
    s = summaries["sample-badost.darshan"]
    findings = {f.id: f for f in run_rules(s)}
    lus2 = findings["LUS002"]
    assert lus2.evidence["ost"] == 14 and "OST 14" in lus2.message
    # recompute the per-OST figures independently: files with one stripe each, write time per OST
    per_ost: dict[int, list[float]] = {}
    log = raw.log_open(str(LOGDIR / "sample-badost.darshan"))
    try:
        ost_of = {}
        while (rec := raw.log_get_record(log, "LUSTRE", dtype="dict")) is not None:
            ost_of[rec["id"]] = list(rec["components"][0]["ost_ids"])
        while (rec := raw.log_get_record(log, "POSIX", dtype="dict")) is not None:
            for o in ost_of.get(rec["id"], []):
                per_ost.setdefault(int(o), []).append(rec["fcounters"]["POSIX_F_WRITE_TIME"])
    finally:
        raw.log_close(log)
    means = {o: sum(v) / len(v) for o, v in per_ost.items()}
    assert max(means, key=means.get) == 14
    assert len(per_ost[14]) == lus2.evidence["files_on_ost"]
    assert abs(means[14] - lus2.evidence["mean_write_time_s"]) < 0.01


def test_exactly_1mib_requests_are_not_small(summaries):
    s = summaries["sample-badost.darshan"]     # IOR with 1 MiB transfers
    assert s.write_sizes["1M_4M"] > 0 and s.small_writes == 0
    for name, s in summaries.items():
        for f in run_rules(s):
            if f.id == "SIZE001":
                assert all(b in ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")
                           for k, bins in f.evidence.items() if k.endswith("_size_bins") for b in bins)
    assert not any(f.id == "SIZE001" for f in run_rules(summaries["sample-badost.darshan"]))


def test_no_mpiio_findings_without_mpiio(summaries):
    for name, s in summaries.items():
        if s.has_mpiio:
            continue
        for f in run_rules(s):
            assert not f.id.startswith("MPI"), name
            assert "MPI-IO" not in f.message and "collective" not in f.message, (name, f.id)


def test_small_independent_mpiio_on_shared_file_suggests_collective(summaries):
    s = summaries[next(n for n in summaries if n.startswith("shane_macsio"))]
    ids = {f.id: f for f in run_rules(s)}
    assert "MPI001" in ids and ids["MPI001"].evidence["independent_ops"] > ids["MPI001"].evidence["collective_ops"]


def test_dxt_log_without_executable_name(summaries):
    s = summaries["dxt.darshan"]
    assert s.exe == "(not recorded)" and s.notes


def test_lus001_single_stripe_large_shared_file(summaries):
    base = summaries["ior_hdf5_example.darshan"]     # one shared file on a single OST, but only 4 MB
    assert not any(f.id == "LUS001" for f in run_rules(base))
    f = base.shared_files[0]
    assert f.lustre.stripe_count == 1
    big = dataclasses.replace(f, bytes_written=200 << 30, ranks=64)
    s = dataclasses.replace(base, files=(big,), nprocs=64)
    (lus,) = [x for x in run_rules(s) if x.id == "LUS001"]
    # 200 GiB -> 72 by the size table, capped by the OSTs the log proves to exist (>= 107) and 64 ranks
    assert lus.evidence["recommended_stripe_count"] == 64
    assert "64 ranks" in lus.evidence["stripe_count_reasoning"]
    assert lus.evidence["expected_gain"] is None or lus.evidence["expected_gain"] > 1


def test_user_thresholds_override_and_validate(tmp_path, summaries):
    p = tmp_path / "t.toml"
    p.write_text("[LUS002]\nfactor = 100.0\n")
    t = load_thresholds(p)
    assert t["LUS002"]["factor"] == 100.0
    assert not any(f.id == "LUS002" for f in run_rules(summaries["sample-badost.darshan"], t))
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
    assert doc["schema"] == "ioadvisor.diagnose/1" and doc["job"]["nprocs"] == 2048
    assert [f["id"] for f in doc["findings"]][0] == "LUS002"
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "OST 14" in html
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_cli_terminal_report():
    r = runner.invoke(app, ["diagnose", str(LOGDIR / "example.darshan")])
    assert r.exit_code == 0 and "IMB001" in r.output and "2048" in r.output


def test_record_adds_a_production_run(kb_path):
    log = LOGDIR / "example.darshan"
    r = runner.invoke(app, ["diagnose", str(log), "--record", "--center", "ha8000", "--kb", str(kb_path), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["recorded"]["runs"] == 1
    from ioadvisor.kb.store import KB, RunFilter
    with KB.open(kb_path, create=False) as kb:
        (run,) = kb.runs(RunFilter(system="HA8000", kind="production"))
    ind = _independent(log)
    assert run.op == "write" and run.ranks == ind["nprocs"] and run.layout == "shared" and run.stripe_count == 24
    assert run.total_bytes == ind["posix_w"] + ind["stdio_w"]
    # the same log again adds nothing
    r2 = runner.invoke(app, ["diagnose", str(log), "--record", "--center", "ha8000", "--kb", str(kb_path), "--json"])
    assert json.loads(r2.stdout)["recorded"]["already_known"] is True


def test_kb_import_detects_darshan_and_rejects_truncated(kb_path, tmp_path):
    cut = tmp_path / "cut.darshan"
    cut.write_bytes((LOGDIR / "sample-badost.darshan").read_bytes()[:200000])
    r = runner.invoke(app, ["kb", "import", "--kb", str(kb_path), str(cut), "--system", "edison"])
    assert r.exit_code == 2 and "cut.darshan" in r.output


def test_center_gives_ost_count_and_advice_for_striping(summaries):
    from ioadvisor.diagnose import _with_advice
    from ioadvisor.diagnose.rules import Context
    base = summaries["ior_hdf5_example.darshan"]
    big = dataclasses.replace(base.shared_files[0], bytes_written=200 << 30, ranks=64)
    s = dataclasses.replace(base, files=(big,), nprocs=64)
    (lus,) = [x for x in run_rules(s, ctx=Context(center_ost_count=30, center_name="HA8000")) if x.id == "LUS001"]
    assert lus.evidence["recommended_stripe_count"] == 30 and "30 OSTs" in lus.message
    from ioadvisor.center import load_center
    f = _with_advice(lus, to_workload(s, 16), None, load_center("ha8000"))
    assert f.advice is not None and f.advice.recommendation.config.stripe_count > 1


def test_pfl_layout_uses_the_last_instantiated_component():
    from ioadvisor.diagnose.derive import _derive

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
    import ioadvisor.diagnose.derive as derive
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("needs fork to carry the patched reader into the child")

    def crash(path, backend):
        import faulthandler
        faulthandler.disable()      # keep pytest's crash dump of the child out of the output
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setattr(derive, "_read", crash)
    with pytest.raises(ImportFormatError, match="crashed.*SIGSEGV"):
        derive.summarize(LOGDIR / "example.darshan")


def test_cli_bad_thresholds_file_exit_2(tmp_path):
    p = tmp_path / "t.toml"
    p.write_text("[SIZE001]\nshare = 'lots'\n")
    r = runner.invoke(app, ["diagnose", str(LOGDIR / "example.darshan"), "--thresholds", str(p)])
    assert r.exit_code == 2 and "t.toml" in r.output and "share" in r.output


def test_mpi001_warns_where_the_center_measured_two_phase_losing(summaries):
    from ioadvisor.diagnose.rules import Context
    from ioadvisor.kb.store import KB
    s = summaries[next(n for n in summaries if n.startswith("shane_macsio"))]
    with KB.open(None, create=False) as kb:
        measured = [c for c in kb.comparisons("TSUBAME3.0") if c["factor"] == "cb_write"]
    (f,) = [x for x in run_rules(s, ctx=Context(center_name="TSUBAME3.0")) if x.id == "MPI001"]
    assert measured and measured[0]["better"] == "disable"
    assert f.evidence["contrary_comparisons"] and "TSUBAME3.0" in f.message
    (plain,) = [x for x in run_rules(s) if x.id == "MPI001"]
    assert "contrary_comparisons" not in plain.evidence
