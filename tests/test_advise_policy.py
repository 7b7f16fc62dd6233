"""One decision: `ioadvise advise` and the sweep validation (`kb validate --sweeps`) choose through the same
function (advise.engine.assess -> advise.policy.decide), so the figures of the validation are those of the
advice users get."""
from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ioadvisor.advise.validate import sweep_validate
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB

ROOT = Path(__file__).resolve().parent.parent
# the corpus beside the checkout (benchmarks/sweeps_corpus.py), or beside the directory of checkouts
CORPUS = next((d for d in (ROOT.parent / "shared" / "sweeps", ROOT.parent.parent / "shared" / "sweeps") if d.is_dir()),
              ROOT.parent / "shared" / "sweeps")
EXE = Path(sys.executable).parent / "ioadvise"
SYSTEM_FILE = "viking_york_ior_stripe_count_size.csv"
SAMPLE = 4


def _corpus_module():
    spec = importlib.util.spec_from_file_location("sweeps_corpus", ROOT / "benchmarks" / "sweeps_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _hidden(row: dict, sweep: dict) -> bool:
    """Whether a canonical CSV row is one of the hidden sweep's runs (every setting but the stripe count)."""
    return (row["filesystem"] == sweep["fs"] and row["op"] == sweep["op"] and row["api"] == sweep["api"]
            and row["layout"] == sweep["layout"] and int(row["nodes"]) == sweep["nodes"]
            and int(row["ranks"]) == sweep["ranks"] and int(row["transfer_size_bytes"]) == sweep["transfer"]
            and int(row["block_size_bytes_per_rank"]) == sweep["block"])


@pytest.mark.skipif(not (CORPUS / SYSTEM_FILE).is_file(), reason="the public sweep corpus is not beside the repo")
def test_validate_chooses_what_advise_json_chooses_case_by_case(tmp_path):
    """Each sampled hidden sweep: the stripe count `sweep_validate` scores equals the one `ioadvise advise --json`
    recommends for the sweep's job on a KB that holds every run of the system but the sweep's."""
    mod = _corpus_module()
    src = tmp_path / "corpus"
    src.mkdir()
    (src / SYSTEM_FILE).write_bytes((CORPUS / SYSTEM_FILE).read_bytes())
    mod.convert(src, tmp_path / "csv")
    canon = tmp_path / "csv" / SYSTEM_FILE
    with KB.open(tmp_path / "all.sqlite", reference=False) as kb:
        import_file(kb, canon, "csv")
        res = sweep_validate(kb, factors=("stripe_count",), with_errors=False)
    cases = [c for c in res["cases"] if c["advise_args"]]
    assert len(cases) >= SAMPLE
    sample = [cases[int((i + 0.5) * len(cases) / SAMPLE)] for i in range(SAMPLE)]
    rows = list(csv.DictReader(canon.open(newline="")))
    for i, case in enumerate(sample):
        kept = [r for r in rows if not _hidden(r, case["sweep"])]
        assert 0 < len(rows) - len(kept) == sum(1 for r in rows if _hidden(r, case["sweep"]))
        part = tmp_path / f"without{i}.csv"
        with part.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(kept)
        kb_path = tmp_path / f"kb{i}.sqlite"
        with KB.open(kb_path, reference=False) as kb:
            import_file(kb, part, "csv")
        p = subprocess.run([str(EXE), "advise", "--kb", str(kb_path), "--system", case["system"],
                            *case["advise_args"], "--json"], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        got = json.loads(p.stdout)["recommendation"]["stripe_count"]
        assert got == case["advised"], (case["sweep"], got, case["advised"])


def _draws(v: float) -> list[float]:
    return [v * (1 + 0.01 * i) for i in range(20)]


def test_measured_neighbours_are_not_overruled_by_the_model():
    """120 stripes predicted 3x the others with certainty, but the runs near the job measured it 20x slower than
    4 stripes (standing 0.05 against 1.0, and 0.05 x 1.10 < 1.0): it must NOT be chosen."""
    from ioadvisor.advise import choose
    g = ("scratch", "write", "POSIX/-", "shared", "MiB/s")
    values = [1000.0, 1000.0, 3000.0]                    # 4, 8, 120 stripes
    pick, _ = choose(values, [_draws(v) for v in values], [0.08, 0.16, 2.4], stripes=[4, 8, 120], default=None,
                     standing=[(g, 1.0), (g, 0.9), (g, 0.05)])
    assert [4, 8, 120][pick] in (4, 8)
    # a count never measured near the job still fills the gap where the model says it is measurably faster
    pick, _ = choose(values, [_draws(v) for v in values], [0.08, 0.16, 2.4], stripes=[4, 8, 120], default=None,
                     standing=[(g, 1.0), (g, 0.9), (g, None)])
    assert [4, 8, 120][pick] == 120


def test_runs_at_the_jobs_volume_rank_its_stripe_count():
    """File per process at 16 MiB per rank on 16 nodes: at 8 and 32 nodes and 16 MiB per rank 1 stripe measured
    1.8x and 4.6x faster than 4; at 16 nodes only 1 GiB per rank was measured, where 4 stripes won. The runs at
    the job's volume rank the counts (standing of 1 stripe 1.0, of 4 stripes (1/1.8 x 1/4.6)^(1/2) = 0.35), and
    the model's preference for 4 stripes must NOT be advised."""
    from ioadvisor.advise import choose
    from ioadvisor.model.validate import make_run
    from ioadvisor.predict.evidence import Evidence
    runs = []
    for nodes, per_rank, one, four in ((8, 16 << 20, 1800.0, 1000.0), (32, 16 << 20, 4600.0, 1000.0),
                                       (16, 1 << 30, 1000.0, 3000.0)):
        for sc, v in ((1, one), (4, four)):
            runs.append(make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=64, op="write", api="POSIX",
                                 layout="fpp", nodes=nodes, ranks=nodes * 8, block_size=per_rank, stripe_count=sc,
                                 value=v, unit="MiB/s"))
    ev = Evidence(runs)
    key = ("fs", "write", "POSIX/-", "fpp", "MiB/s")
    st = [ev.standing(*key, nodes=16.0, rpn=8.0, volume=float(16 << 20), stripes=float(s)) for s in (1, 4)]
    assert st[0] == pytest.approx(1.0) and st[1] == pytest.approx((1 / 1.8 * 1 / 4.6) ** 0.5)
    values = [1000.0, 2000.0]                            # the model: 4 stripes 2x
    pick, _ = choose(values, [_draws(v) for v in values], [0.02, 0.08], stripes=[1, 4], default=0,
                     standing=[(key, st[0]), (key, st[1])])
    assert pick == 0


@pytest.fixture(scope="module")
def reference_kb():
    with KB.open(None, create=False) as kb:
        yield kb


def test_dell_two_terabytes_get_the_stripes_the_runs_measured(reference_kb):
    """16 nodes x 32 ranks writing 2 TB to one HDF5 file on Dell-EE-Lustre-2.1, whose runs measured 24 stripes at
    5.9 GiB/s against 1 stripe's 0.6: the advice must NOT be 1 stripe (8 or more), and no stripe count is named
    twice in its words."""
    import re
    from ioadvisor.advise import advise
    from ioadvisor.center import resolve_center
    from ioadvisor.model.types import Workload
    total = 2 * 10 ** 12
    w = Workload(nodes=16, ranks_per_node=32, bytes_per_rank=total // (16 * 32), api="hdf5", layout="shared")
    a = advise(w, reference_kb, resolve_center("Dell-EE-Lustre-2.1", None, reference_kb))
    assert a.recommendation.config.stripe_count >= 8
    for r in a.recommendation.reasons:
        m = re.search(r"fewer fall short \(([^)]*)\)", r)
        if m:
            counts = [x.split(":")[0].strip() for x in m.group(1).split(";")]
            assert len(counts) == len(set(counts)), r


def test_random_access_is_not_silent(reference_kb):
    """HA8000's runs hold no random-access write: `--random` gives the same number as sequential access, so the
    answer must say random access is not modelled."""
    from ioadvisor.advise import advise
    from ioadvisor.center import resolve_center
    from ioadvisor.model.types import Workload
    c = resolve_center("HA8000", None, reference_kb)
    base = dict(nodes=4, ranks_per_node=8, bytes_per_rank=1 << 30, api="posix", layout="fpp", access_size=4096)
    seq = advise(Workload(**base), reference_kb, c)
    rnd = advise(Workload(**base, access="random"), reference_kb, c)
    if rnd.recommendation.prediction.value == seq.recommendation.prediction.value:
        assert any("Random access is not modelled" in x for x in rnd.warnings), rnd.warnings
    assert not any("Random access" in x for x in seq.warnings)


def test_a_mode_measured_only_in_another_family_is_not_advised():
    """An MPI-IO collective kernel, 8 nodes x 24 ranks: independent I/O was measured only at one rank per node
    (10 GiB/s, 24x fewer ranks per node than the job: outside the factor of 2 of a family), collective I/O at 24
    ranks per node at 4-16 nodes (3.0-6.7 GiB/s). Independent must NOT be advised; it is named unmeasured."""
    from ioadvisor.advise.engine import assess
    from ioadvisor.center import center_from_runs
    from ioadvisor.model.types import Workload
    from ioadvisor.model.validate import make_run
    from ioadvisor.predict import fit_all
    from ioadvisor.predict.evidence import Evidence
    runs = []
    for nodes, v in ((1, 2500.0), (2, 5000.0), (4, 9000.0), (8, 10240.0), (16, 10500.0)):
        runs.append(make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=32, op="write", api="MPIIO",
                             collective=False, layout="shared", nodes=nodes, ranks=nodes, block_size=4 << 20,
                             transfer_size=4 << 20, stripe_count=8, value=v, unit="MiB/s"))
    for nodes, v in ((4, 3072.0), (8, 5000.0), (16, 6860.0)):
        for rep in (0.95, 1.05):
            runs.append(make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=32, op="write",
                                 api="MPIIO", collective=True, layout="shared", nodes=nodes, ranks=nodes * 24,
                                 block_size=16 << 20, stripe_count=8, value=v * rep, unit="MiB/s"))
    center = center_from_runs("S", runs)
    fits = fit_all(runs, {"fs": 32}, {})
    w = Workload(nodes=8, ranks_per_node=24, bytes_per_rank=16 << 20, api="mpiio", layout="shared")
    a = assess(w, center, "S", fits, Evidence(runs, {"fs": 32}, {}), [], {"stripe_count": 8})
    assert a.chosen.config.collective is True
    assert any(c.unmeasured for c in a.candidates if c.config.collective is False)


def test_every_recommendation_says_how_long_the_io_takes(reference_kb):
    """A small-file job (2 nodes x 8 ranks x 2,000 files = 32,000 creates) gets its time at the predicted create
    rate (32,000 / rate seconds); a job nothing predicts says that no time can be given and what would give one."""
    import re
    from ioadvisor.advise import advise
    from ioadvisor.center import resolve_center
    from ioadvisor.model.types import Workload
    w = Workload(nodes=2, ranks_per_node=8, bytes_per_rank=1 << 20, files_per_rank=2000)
    a = advise(w, reference_kb, resolve_center("HA8000", None, reference_kb))
    p = a.recommendation.prediction
    assert p.unit == "ops/s" and p.value
    m = re.search(r"the job's 32,000 file creates take about ([\d.]+) (s|min|h)\b", " ".join(a.recommendation.reasons))
    assert m, a.recommendation.reasons
    got = float(m.group(1)) * {"s": 1, "min": 60, "h": 3600}[m.group(2)]
    assert abs(got - 32000 / p.value) <= max(0.051 * 32000 / p.value, 0.06)
    b = advise(Workload(nodes=2, ranks_per_node=8, bytes_per_rank=1 << 30), reference_kb,
               resolve_center("TSUBAME3.0", None, reference_kb))
    assert b.recommendation.prediction.value is None
    assert any(r.startswith("No time estimate") for r in b.recommendation.reasons)


def test_the_stripe_sentence_names_each_count_once():
    """Two options at 32 stripes (one with a collective-buffering hint) tie with 120 stripes within 5% (1,000 and
    990 against 1,000 MiB/s): the sentence must name 32 once ("32 stripe(s) are predicted ..."), NOT "32, 32"."""
    from ioadvisor.advise.explain import stripe_sentence
    from ioadvisor.model.types import Config, Option, Prediction

    def opt(sc: int, v: float, hints: dict | None = None) -> Option:
        cfg = Config(tier=None, filesystem="scratch", layout="shared", api="MPIIO", collective=True, stripe_count=sc,
                     stripe_size=1 << 20, hints=hints or {})
        return Option(config=cfg, prediction=Prediction(value=v, unit="MiB/s", low=v / 2, high=v * 2))
    rec = opt(120, 1000.0)
    said = stripe_sentence(rec, [rec, opt(32, 1000.0), opt(32, 990.0, {"romio_cb_write": "enable"})], None)
    assert said is not None and said.startswith("32 stripe(s) are predicted within 5%"), said
    assert "32, 32" not in said


def _weighed(layout: str, sc: int, value: float, near: tuple, key: tuple):
    from ioadvisor.advise.policy import Weighed
    from ioadvisor.model.types import Config, FileSystem
    from ioadvisor.predict.evidence import standing_in
    fs = FileSystem(name="lustre", type="lustre", ost_count=48, default_stripe_count=1)
    cfg = Config(filesystem="lustre", layout=layout, api="POSIX", stripe_count=sc, stripe_size=1 << 20)
    return Weighed(config=cfg, place=fs, value=value, stripes_measured=(1.0, 4.0, 16.0, 48.0),
                   standing=(key, standing_in(near, float(sc))), near=near, stripes=float(sc))


def test_a_count_between_two_measured_counts_is_not_filled_by_the_model():
    """A 48-node shared read: the runs at 48 nodes measured 4 stripes at 6,414 MiB/s and 16 at 2,344. The model
    predicts 6 stripes 5,972 against 5,131 for 4 (1.16x, with certainty), but 6 lies between the two measured
    counts, where the model can only interpolate: 6 must NOT be advised; the runs' best, 4, is."""
    from ioadvisor.advise.policy import decide
    from ioadvisor.model.types import Config, Workload
    from ioadvisor.predict.evidence import Near
    key = ("lustre", "read", "POSIX/-", "shared", "MiB/s")
    near = (Near(nodes=48.0, volume=float(1 << 28), measured=((4.0, 6414.0, 6414.0, 6414.0, 1),
                                                              (16.0, 2344.0, 2344.0, 2344.0, 1))),)
    values = {1: 1167.0, 4: 5131.0, 6: 5972.0, 8: 4847.0, 16: 2930.0}
    opts = [_weighed("shared", sc, v, near, key) for sc, v in values.items()]
    w = Workload(nodes=48, ranks_per_node=1, bytes_per_rank=1 << 27, api="POSIX", layout="shared", op="read")
    base = Config(filesystem="lustre", layout="shared", api="POSIX", stripe_count=1, stripe_size=1 << 20)
    dec = decide(w, opts, base, (), lambda i: _draws(opts[i].value), defaults={"lustre": 1})
    assert opts[dec.choice].config.stripe_count == 4, [opts[i].config.stripe_count for i in dec.order]


def test_the_runs_rank_layouts_they_measured_at_the_same_node_counts():
    """A 2-node job that may write either layout at 48 stripes; the model predicts both alike (1,149 MiB/s). At
    1 and 4 nodes the runs measured a shared file at 620 and 2,176 MiB/s and file per process at 605 and 2,713:
    file per process (605/620 x 2,713/2,176)^(1/2) = 1.10x faster, more than 5%. The cheaper shared file must NOT
    be advised over what the runs measured faster."""
    from ioadvisor.advise.policy import decide
    from ioadvisor.model.types import Config, Workload
    from ioadvisor.predict.evidence import Near
    k = ("lustre", "write", "POSIX/-")

    def near(one: float, four: float) -> tuple:
        return (Near(nodes=1.0, volume=float(1 << 33), measured=((48.0, one, one, one, 2),)),
                Near(nodes=4.0, volume=float(1 << 33), measured=((48.0, four, four, four, 3),)))
    opts = [_weighed("shared", 48, 1149.0, near(620.0, 2176.0), k + ("shared", "MiB/s")),
            _weighed("fpp", 48, 1149.0, near(605.0, 2713.0), k + ("fpp", "MiB/s"))]
    w = Workload(nodes=2, ranks_per_node=1, bytes_per_rank=1 << 33, api="POSIX", layout="any", op="write")
    base = Config(filesystem="lustre", layout="shared", api="POSIX", stripe_count=1, stripe_size=1 << 20)
    dec = decide(w, opts, base, (), lambda i: _draws(opts[i].value), pinned_stripes=True, defaults={"lustre": 1})
    assert opts[dec.choice].config.layout == "fpp"


def test_the_guides_decision_table_shows_what_advise_json_advises(reference_kb):
    """The guide's decision table (`ioadvise docs build`) for Dell-EE-Lustre-2.1: each row's place, layout, API,
    collective mode and stripe count must equal `ioadvise advise --json`'s recommendation for that row's workload
    (the guide calls the same function; a table of its own choosing would differ where the runs decide)."""
    from typer.testing import CliRunner
    from ioadvisor.center import load_center
    from ioadvisor.cli import app
    from ioadvisor.docs.decisions import decision_guide
    rows = decision_guide(reference_kb, load_center("Dell-EE-Lustre-2.1"))
    assert len(rows) >= 4
    for row in rows:
        w = row["workload"]
        args = ["advise", "--json", "--system", "Dell-EE-Lustre-2.1", "--nodes", str(w.nodes), "--ranks-per-node",
                str(w.ranks_per_node), "--bytes-per-rank", str(w.bytes_per_rank), "--api", w.api.lower(),
                "--layout", w.layout, "--op", w.op, "--files", str(w.files_per_rank), "--lifetime", w.lifetime]
        if w.access_size:
            args += ["--access-size", str(w.access_size)]
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
        rec = json.loads(r.stdout)["recommendation"]
        coll = {True: "yes", False: "no"}.get(rec["collective"], "-")
        assert (row["tier"], row["filesystem"], row["layout"], row["api"], row["collective"], row["stripe_count"]) \
            == (rec["tier"] or "-", rec["filesystem"], rec["layout"], rec["api"], coll, rec["stripe_count"] or "-"), \
            (row["key"], rec)


def _dell_two_terabytes_json() -> dict:
    from typer.testing import CliRunner
    from ioadvisor.cli import app
    r = CliRunner().invoke(app, ["advise", "--json", "--system", "Dell-EE-Lustre-2.1", "-N", "16", "--ranks-per-node",
                                 "32", "--total-bytes", "2TB", "--api", "hdf5", "--layout", "shared"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _seen(o: dict) -> tuple:
    """What a user sees of a row: place, layout, API, mode, stripes and the collective-buffering switch."""
    return (o["tier"], o["filesystem"], o["layout"], o["api"], o["collective"], o["stripe_count"],
            o["stripe_size_bytes"], tuple(sorted((k, v) for k, v in o["hints"].items() if k.startswith("romio_cb_"))))


def test_no_alternative_repeats_the_default_row():
    """The Dell 2 TB HDF5 job: the default row is lustre, shared, HDF5 collective, 1 x 1MiB. An alternative with
    the same visible settings (there was one, differing only in the striping hints that create the same layout)
    must NOT be listed: no two rows of the table show the same settings."""
    d = _dell_two_terabytes_json()
    rows = [_seen(d["recommendation"]), _seen(d["baseline"])] + [_seen(a) for a in d["alternatives"]]
    assert len(d["alternatives"]) >= 1
    assert len(rows) == len(set(rows)), rows


def test_a_capped_prediction_says_it_is_capped(reference_kb):
    """HA8000, 4 nodes x 16 ranks writing 1 GiB each to one shared file: the model gives 24 stripes more than the
    runs ever measured scaled to 4 nodes, so the value is held at the top of its interval (2,980 = 2,980 MiB/s).
    The words must say so (the table's cell, the reason, --json), NOT give a value equal to its interval's top as
    if it were the middle of what may come; an option whose value lies inside its interval is not called capped."""
    from typer.testing import CliRunner
    from ioadvisor.cli import app
    args = ["advise", "--system", "HA8000", "-N", "4", "--ranks-per-node", "16", "--bytes-per-rank", "1GiB",
            "--api", "posix", "--layout", "shared"]
    d = json.loads(CliRunner().invoke(app, args + ["--json"]).stdout)
    p = d["recommendation"]["predicted"]
    assert p["value"] == p["high"] and p["low"] < p["value"] and p["capped"] is True
    assert "capped, the value is the top of its interval" in d["recommendation"]["reasons"][0]
    inside = [a["predicted"] for a in d["alternatives"] + [d["baseline"]]
              if a["predicted"]["value"] is not None and a["predicted"]["value"] < a["predicted"]["high"]]
    assert inside and not any(x["capped"] for x in inside)
    text = CliRunner().invoke(app, args).stdout
    row = next(line for line in text.splitlines() if line.startswith("recommended"))
    assert row.rstrip().endswith("capped"), row


def test_a_job_beyond_the_measured_node_counts_is_ranked_on_more_than_one():
    """A 1-node shared-file write at 8 GiB per rank; 2 nodes measured 1 stripe at 603 MiB/s and 56 at 326 (one
    node count's quirk), 4 nodes 691 and 2,424. Read from 2 nodes alone, 56 stripes stand at 326/603 = 0.54 and
    1 stripe is advised; from the two nearest node counts on the job's one side, 1 stripe stands at
    (1 x 691/2,424)^(1/2) = 0.53 and 56 at (326/603 x 1)^(1/2) = 0.74: 1 stripe must NOT be advised. A job
    between measured node counts still reads one on each side, and its bands are not changed."""
    from ioadvisor.advise import choose
    from ioadvisor.model.validate import make_run
    from ioadvisor.predict.evidence import Evidence
    runs = [make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=56, op="write", api="POSIX",
                     layout="shared", nodes=n, ranks=n, ranks_per_node=1, block_size=8 << 30, stripe_count=sc,
                     value=v, unit="MiB/s")
            for n, one, many in ((2, 603.0, 326.0), (4, 691.0, 2424.0), (16, 700.0, 9000.0))
            for sc, v in ((1, one), (56, many))]
    ev = Evidence(runs)
    key = ("fs", "write", "POSIX/-", "shared", "MiB/s")
    job = {"nodes": 1.0, "rpn": 1.0, "volume": float(8 << 30)}
    assert [side.nodes for side in ev.near(*key, **job)] == [2.0, 4.0]
    st = [ev.standing(*key, **job, stripes=float(s)) for s in (1, 56)]
    assert st[0] == pytest.approx((691 / 2424) ** 0.5) and st[1] == pytest.approx((326 / 603) ** 0.5)
    values = [400.0, 400.0]                               # the model cannot tell them apart
    pick, _ = choose(values, [_draws(v) for v in values], [0.02, 1.12], stripes=[1, 56], default=0,
                     standing=[(key, st[0]), (key, st[1])])
    assert pick == 1
    # 3 nodes lies between 2 and 4: one node count on each side, as before (not 2, 4 and 16)
    assert [side.nodes for side in ev.near(*key, **{**job, "nodes": 3.0})] == [2.0, 4.0]
    # 4 nodes was measured: its own runs alone
    assert [side.nodes for side in ev.near(*key, **{**job, "nodes": 4.0})] == [4.0]
    # the band a 1-node prediction may not leave still rests on 2 nodes alone: 56 stripes under 326 x 1.25 (one
    # run's noise), not under 4 nodes' 2,424
    assert ev.band(*key, **job, stripes=56.0).high == pytest.approx(326.0 * 1.25)


def test_runs_at_other_stripe_counts_break_a_tie_between_layouts():
    """A 128-node write at 48 stripes, layout free; the model predicts both layouts alike (10,837 and 10,828
    MiB/s). The runs at 128 nodes measured file per process at 1 and 4 stripes (9,561 and 17,697) against a
    shared file's 683 and 8,360: (9,561/683 x 17,697/8,360)^(1/2) = 5.4x, above ACROSS_GAIN, so the shared file,
    cheaper only because it is the default layout, must NOT be advised. Where the runs measured both layouts at
    48 stripes, or where the model tells them apart by more than TOLERANCE, the tie is not theirs to break."""
    from ioadvisor.advise.policy import choose
    shared = ("fs", "write", "MPIIO/indep", "shared", "MiB/s")
    fpp = shared[:3] + ("fpp", "MiB/s")

    def near(*points):
        return {(128.0, s): v for s, v in points}

    table = [near((1.0, 683.0), (4.0, 8360.0)), near((1.0, 9561.0), (4.0, 17697.0))]
    ratio = (9561 / 683 * 17697 / 8360) ** 0.5
    assert ratio == pytest.approx(5.44, abs=0.01)
    args = {"stripes": [48, 48], "default": None, "standing": [(shared, None), (fpp, None)], "at": [{}, {}]}
    values = [10837.0, 10828.0]
    pick, _ = choose(values, [_draws(v) for v in values], [0.96, 1.16], **args, table=table)
    assert pick == 1
    # before the rule (no table): the cheaper shared file
    assert choose(values, [_draws(v) for v in values], [0.96, 1.16], **args)[0] == 0
    # both layouts measured at 48 stripes at 128 nodes: `_runs_across` ranks them there, not the other counts
    at = [{128.0: 10384.0}, {128.0: 10500.0}]
    assert choose(values, [_draws(v) for v in values], [0.96, 1.16], **{**args, "at": at}, table=table)[0] == 0
    # the model predicts file per process 10% slower: no tie, the runs at other counts do not overrule it
    slower = [10837.0, 9750.0]
    assert choose(slower, [_draws(v) for v in slower], [0.96, 1.16], **args, table=table)[0] == 0
