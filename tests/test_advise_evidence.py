"""Advice that never does harm: measured runs near the job outrank the model's shape, a mode no run measured is
not recommended over a measured one, and every number stays below what the center says its hardware can do."""
from __future__ import annotations

import pytest

from ioadvisor.advise import advise
from ioadvisor.center import load_center
from ioadvisor.kb import KB
from ioadvisor.model.validate import make_run
from ioadvisor.model.types import Workload

CLIFF_SITE = ('name = "Cliff"\nmpi = "mpich"\n[[filesystems]]\nname = "scratch"\ntype = "lustre"\n'
              'ost_count = 120\ndefault_stripe_count = 1\ndefault_stripe_size = "1M"\n')
CLIFF_STRIPES = (1, 2, 4, 8, 10, 20, 40, 80, 120)


def cliff_value(nodes: int, stripes: int) -> float:
    """A collective MPI-IO shared-file write that collapses above 10 stripes (lock traffic at every scale):
    at 4 nodes about 1,914 MiB/s at 4 stripes and 98 at 20, the shape measured on a 120-OST Lustre."""
    base = 1914.0 * (nodes / 4) ** 0.6
    if stripes > 10:
        return base * 0.05 * (1 - 0.0005 * stripes)
    return base * min(stripes, 4) / 4 * (1 + 0.01 * stripes)


def cliff_runs(nodes=(2, 8)):
    return [make_run(system="Cliff", filesystem="scratch", fs_type="lustre", ost_count=120, op="write",
                     api="MPIIO", collective=True, layout="shared", nodes=n, ranks=16 * n, ranks_per_node=16,
                     transfer_size=16 << 20, block_size=1 << 30, stripe_count=s, value=cliff_value(n, s) * f,
                     unit="MiB/s", notes=f"rep {i}")
            for n in nodes for s in CLIFF_STRIPES for i, f in enumerate((0.97, 1.03))]


@pytest.fixture
def cliff(tmp_path):
    p = tmp_path / "cliff.toml"
    p.write_text(CLIFF_SITE)
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        kb.add_runs(cliff_runs(), source="s", source_hash="s", fmt="csv", importer="test/1")
        yield kb, load_center(p)


def _options(a):
    return [a.recommendation, a.baseline, *a.alternatives]


def test_a_cliff_measured_at_the_neighbouring_scales_is_never_recommended(cliff):
    kb, center = cliff
    w = Workload(nodes=4, ranks_per_node=16, bytes_per_rank=1 << 30, api="mpiio", layout="shared",
                 access_size=16 << 20)
    rec = advise(w, kb, center).recommendation
    # the runs at 2 and 8 nodes are 20x slower above 10 stripes than at 4-10: the job at 4 nodes lies between
    assert rec.config.stripe_count <= 10, (rec.config.stripe_count, rec.prediction.value)
    assert cliff_value(4, 10) / cliff_value(4, rec.config.stripe_count) < 1.5
    # what it predicts stays inside what the neighbours measured at that stripe count (x 1.25, one run's noise)
    s = rec.config.stripe_count
    assert cliff_value(2, s) * 0.97 / 1.25 <= rec.prediction.value <= cliff_value(8, s) * 1.03 * 1.25


def test_the_same_cliff_pinned_to_collective_io(cliff):
    kb, center = cliff
    for nodes in (2, 4, 8):
        w = Workload(nodes=nodes, ranks_per_node=16, bytes_per_rank=1 << 30, api="mpiio", layout="shared",
                     access_size=16 << 20)
        a = advise(w, kb, center, pins={"collective": True})
        assert a.recommendation.config.stripe_count <= 10
        for o in _options(a):       # no option above the cliff predicted faster than its neighbours measured
            if o.config.stripe_count and o.config.stripe_count >= 20 and o.prediction.value is not None:
                assert o.prediction.value <= cliff_value(8, 20) * 1.03 * 1.25


def test_a_mode_no_run_measured_is_not_recommended(cliff):
    kb, center = cliff
    w = Workload(nodes=4, ranks_per_node=16, bytes_per_rank=1 << 30, api="mpiio", layout="shared",
                 access_size=16 << 20)
    a = advise(w, kb, center)
    # every run is collective: independent MPI-IO has no run, so no gain is quoted for it and it is not advised
    assert a.recommendation.config.collective is True
    for o in _options(a):
        if o.config.collective is False:
            assert o.prediction.value is None and o.prediction.note.startswith("unmeasured")
    assert any("bench plan" in x and "independent MPIIO" in x for x in a.warnings), a.warnings


def test_extrapolation_message_states_the_measured_range(cliff):
    kb, center = cliff
    w = Workload(nodes=4, ranks_per_node=16, bytes_per_rank=1 << 30, api="mpiio", layout="shared")
    a = advise(w, kb, center, pins={"collective": False})
    # 4 nodes lies inside the measured 2-8: nothing may say the job extrapolates in client nodes
    said = " ".join(list(a.warnings) + [o.prediction.note or "" for o in _options(a)])
    assert "client node(s), runs measured at 2-8" not in said and "from runs measured at 2-8" not in said


def test_no_prediction_above_the_rated_peak(tmp_path):
    p = tmp_path / "rated.toml"
    p.write_text(CLIFF_SITE.replace("Cliff", "Rated") + 'rated_write_bandwidth = "2GB/s"\n')
    runs = [make_run(system="Rated", filesystem="scratch", fs_type="lustre", ost_count=120, op="write",
                     api="POSIX", layout="fpp", nodes=n, ranks=n, ranks_per_node=1, block_size=1 << 30,
                     stripe_count=s, value=850.0 * n * min(s, 4) ** 0.3, unit="MiB/s")
            for n in (1, 2) for s in (1, 2, 4, 8)]
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        kb.add_runs(runs, source="s", source_hash="s", fmt="csv", importer="test/1")
        a = advise(Workload(nodes=16, ranks_per_node=1, bytes_per_rank=1 << 30, layout="fpp"), kb, load_center(p))
    rated = 2e9 / (1 << 20)            # 1,907 MiB/s
    for o in _options(a):
        for v in (o.prediction.value, o.prediction.low, o.prediction.high):
            assert v is None or v <= rated * 1.0001, (o.config.stripe_count, o.prediction)
    assert any("rated peak" in x for x in a.warnings), a.warnings


def test_the_recommendation_is_never_predicted_slower_than_the_default(tmp_path):
    p = tmp_path / "dflt.toml"
    p.write_text(CLIFF_SITE.replace("Cliff", "Dflt"))
    # one stripe measured fastest; a published comparison (at another scale) says four beat one
    runs = [make_run(system="Dflt", filesystem="scratch", fs_type="lustre", ost_count=120, op="write",
                     api="POSIX", layout="shared", nodes=n, ranks=n, ranks_per_node=1, block_size=1 << 30,
                     stripe_count=s, value=2838.0 * n ** 0.5 * s ** -0.03, unit="MiB/s")
            for n in (1, 2, 4, 8) for s in (1, 2, 4, 8)]
    cmp = {"system": "Dflt", "filesystem": "scratch", "op": "write", "factor": "stripe_count", "better": "4",
           "worse": "1", "condition": "at 512 nodes", "citation": "Table 9", "source": "paper"}
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        kb.add_runs(runs, source="s", source_hash="s", fmt="csv", importer="test/1", comparisons=[cmp])
        for nodes in (1, 2, 4, 8, 16):
            a = advise(Workload(nodes=nodes, ranks_per_node=1, bytes_per_rank=1 << 30, layout="shared"), kb,
                       load_center(p))
            r, b = a.recommendation.prediction.value, a.baseline.prediction.value
            assert r >= b, (nodes, a.recommendation.config.stripe_count, r, b)


def test_system_and_center_file_give_the_same_advice(cliff, tmp_path):
    kb, center = cliff
    p = tmp_path / "derived.toml"      # what the runs say of the system, its name in lower case (names are
                                       # matched without case everywhere else: the center's must be too)
    p.write_text('name = "cliff"\n[[filesystems]]\nname = "scratch"\ntype = "lustre"\nost_count = 120\n')
    from ioadvisor.center import load_center as lc
    for w in (Workload(nodes=4, ranks_per_node=16, bytes_per_rank=1 << 30, api="mpiio", layout="shared"),
              Workload(nodes=16, ranks_per_node=16, bytes_per_rank=1 << 30, api="posix", layout="fpp")):
        by_system = advise(w, kb, system="Cliff")
        by_center = advise(w, kb, lc(p))
        assert by_center.recommendation.prediction.value is not None
        assert by_system.recommendation.config == by_center.recommendation.config
        assert by_system.recommendation.prediction.value == by_center.recommendation.prediction.value


def test_every_caveat_of_the_advice_reaches_the_wrapped_job(cliff, tmp_path):
    from ioadvisor.slurm.submit import Explicit, wrap_script
    kb, center = cliff
    script = ("#!/bin/bash\n#SBATCH -N 16 --ntasks-per-node=16\n"
              "#IOADVISE bytes_per_rank=1GiB api=MPIIO layout=shared\nsrun ./app\n")
    wrapped = wrap_script(script, Explicit(), center=center, kb_path=kb.path)
    assert wrapped.advice is not None and wrapped.advice.warnings
    # the advice extrapolates to 16 nodes from 2-8 and names the unmeasured mode: the job's warnings say both
    for caveat in wrapped.advice.warnings:
        assert caveat in wrapped.warnings, (caveat, wrapped.warnings)


def test_hero_runs_do_not_lift_an_application_kernel_above_its_own_runs(tmp_path):
    p = tmp_path / "fam.toml"
    p.write_text(CLIFF_SITE.replace("Cliff", "Fam"))
    common = dict(system="Fam", filesystem="scratch", fs_type="lustre", ost_count=120, op="write", api="MPIIO",
                  collective=True, layout="shared", unit="MiB/s")
    # IOR hero runs: one rank per node, 4 MiB transfers, 64 GiB per rank, many stripes: the hardware's best
    hero = [make_run(**common, nodes=n, ranks=n, ranks_per_node=1, transfer_size=4 << 20, block_size=64 << 30,
                     stripe_count=s, direct=True, value=min(2400.0 * n * min(s, 32) / 32, 60000.0) * f)
            for n in (4, 8, 16, 32, 64) for s in (8, 32, 120) for f in (0.95, 1.05)]
    # the application kernel: 24 ranks per node, 64 MiB per rank, far below the hero runs (exchange, small I/O)
    kernel_measured = {4: (890.0, 1210.0), 16: (1650.0, 2655.0)}
    kernel = [make_run(**common, nodes=n, ranks=24 * n, ranks_per_node=24, transfer_size=16 << 20,
                       block_size=64 << 20, stripe_count=s, value=v)
              for n, (lo, hi) in kernel_measured.items() for s in (8, 32) for v in (lo, hi)]
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        kb.add_runs(hero + kernel, source="s", source_hash="s", fmt="csv", importer="test/1")
        center = load_center(p)
        for n, (lo, hi) in kernel_measured.items():
            for s in (8, 32):
                w = Workload(nodes=n, ranks_per_node=24, bytes_per_rank=64 << 20, api="mpiio", layout="shared",
                             access_size=16 << 20)
                v = advise(w, kb, center, pins={"stripe_count": s, "collective": True}).recommendation.prediction.value
                # the kernel's own runs at these settings measured lo-hi: one run's noise (25%) beyond, no more
                assert lo / 1.25 <= v <= hi * 1.25, (n, s, v, lo, hi)


def test_every_caveat_of_the_advice_reaches_the_guide(cliff):
    from ioadvisor.docs.decisions import WORKLOADS, decision_guide
    kb, center = cliff
    rows = {r["key"]: r for r in decision_guide(kb, center)}
    assert rows
    said = 0
    for key, w in WORKLOADS:
        if key in rows:
            caveats = list(advise(w, kb, center).warnings)
            assert rows[key]["warnings"] == caveats
            said += len(caveats)
    assert said        # the 16-node jobs extrapolate from runs at 2-8 nodes: at least that is said


def test_cold_advice_reads_the_stored_evidence_not_the_runs(cliff, monkeypatch):
    """The evidence index is stored beside the fits: a new process advising from a large KB does not read the
    system's runs again (the cost of a cold advice must not grow with the runs), and advises the same."""
    from ioadvisor.advise import fits as F
    kb, center = cliff
    w = Workload(nodes=4, ranks_per_node=16, bytes_per_rank=1 << 30, api="mpiio", layout="shared")
    first = advise(w, kb, center)
    monkeypatch.setattr(F, "_CACHE", {})
    monkeypatch.setattr(F, "_EVIDENCE", {})

    def no_reading(*a, **k):
        raise AssertionError("the system's runs were read again")
    monkeypatch.setattr(F, "load_system_runs", no_reading)
    again = advise(w, kb, center)
    assert again.recommendation.config == first.recommendation.config
    assert again.recommendation.prediction == first.recommendation.prediction and again.warnings == first.warnings


FLAT_SITE = ('name = "Flat"\nmpi = "mpich"\n[[filesystems]]\nname = "scratch"\ntype = "lustre"\n'
             'ost_count = 48\ndefault_stripe_count = 1\ndefault_stripe_size = "1M"\n')


def flat_value(nodes: int, stripes: int) -> float:
    """File-per-process writes whose best stripe count changes with scale (as ARCHER's fs3 sweeps did): 48
    stripes 1.4x faster than 4 at 16 and 64 nodes, 1.4x slower at 4 and 256, so a model of the whole system
    finds stripe counts alike."""
    ratio = 1.4 if nodes in (16, 64) else 1 / 1.4
    return 500.0 * nodes ** 0.8 * (ratio if stripes == 48 else 1.0)


def test_where_the_model_cannot_tell_stripe_counts_apart_the_neighbouring_runs_rank_them(tmp_path):
    p = tmp_path / "flat.toml"
    p.write_text(FLAT_SITE)
    runs = [make_run(system="Flat", filesystem="scratch", fs_type="lustre", ost_count=48, op="write", api="POSIX",
                     layout="fpp", nodes=n, ranks=n, ranks_per_node=1, block_size=8 << 30, transfer_size=4 << 20,
                     stripe_count=s, value=flat_value(n, s) * f, unit="MiB/s", notes=f"rep {i}")
            for n in (4, 16, 64, 256) for s in (4, 48) for i, f in enumerate((0.95, 1.05))]
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        kb.add_runs(runs, source="s", source_hash="s", fmt="csv", importer="test/1")
        a = advise(Workload(nodes=32, ranks_per_node=1, bytes_per_rank=8 << 30, layout="fpp"), kb, load_center(p))
    rec = a.recommendation
    # 32 nodes lies between 16 and 64, where 48 stripes measured 1.4x faster than 4 (and 1 stripe was never
    # measured): neither the default's 1 nor 4 may be advised from a curve that cannot tell them from 48
    assert rec.config.stripe_count == 48, [(o.config.stripe_count, o.prediction.value) for o in _options(a)]
    said = " ".join(rec.reasons)
    assert "4 stripe(s) measured 1.40x slower" in said and "1 stripe(s) not measured there" in said, said
    assert "cannot tell them apart from 48" not in said     # no sentence claiming fewer stripes are as good


def test_choose_lets_the_runs_rank_what_the_model_cannot_tell_apart():
    from ioadvisor.advise import choose
    same = [[100.0 + i for i in range(20)]] * 3
    g = ("scratch", "write", "posix", "fpp", "MiB/s")
    # options: the default (1 stripe, never measured near the job), 4 stripes (runs: 0.6 of the best), 48 (best)
    pick, _ = choose([100.0, 100.0, 100.0], same, [0.0, 0.08, 0.96], stripes=[1, 4, 48], default=0,
                     standing=[(g, None), (g, 0.6), (g, 1.0)])
    assert pick == 2
    # the runs rank the default within 5% of the best (0.97 x 1.05 >= 1.0): it is kept (a change must buy a
    # measured gain)
    pick, _ = choose([100.0, 100.0, 100.0], same, [0.0, 0.08, 0.96], stripes=[1, 4, 48], default=0,
                     standing=[(g, 0.97), (g, 0.6), (g, 1.0)])
    assert pick == 0
    # an option of another group (another layout) is not judged by this group's runs: the default stays
    pick, _ = choose([100.0, 100.0], same[:2], [0.0, 0.96], stripes=[1, 48], default=0,
                     standing=[(g[:3] + ("shared", "MiB/s"), None), (g, 1.0)])
    assert pick == 0
    # a gain the model measures is never overruled by the runs' ranking of slower options
    fast = [[3 * (100.0 + i) for i in range(20)]]
    pick, _ = choose([100.0, 300.0], same[:1] + fast, [0.0, 0.96], stripes=[1, 48], default=0,
                     standing=[(g, 1.0), (g, None)])
    assert pick == 1


def test_three_runs_at_the_jobs_own_settings_give_its_prediction():
    from ioadvisor.predict.evidence import Evidence, bounds

    def run(nodes, value, block=1 << 30):
        return make_run(system="S", filesystem="scratch", fs_type="lustre", ost_count=8, op="write", api="POSIX",
                        layout="shared", nodes=nodes, ranks=nodes * 8, ranks_per_node=8, block_size=block,
                        stripe_count=4, value=value, unit="MiB/s")
    # three repetitions at 4 nodes measured 800, 1,000 and 1,500 MiB/s; 2 and 8 nodes around them
    runs = [run(4, v) for v in (800.0, 1000.0, 1500.0)] + [run(2, 600.0), run(8, 2400.0)]
    ev = Evidence(runs)
    args = {"nodes": 4.0, "rpn": 8.0, "volume": float(1 << 30), "stripes": 4.0}
    for model in (100.0, 1400.0, 9000.0):
        b = bounds(ev, "scratch", "write", "POSIX/-", "shared", "MiB/s", True, **args)
        # whatever the model's curve says, the job's own measurements decide: their median, not 1,400 or 9,000
        assert b.clamp(model) == 1000.0
    # runs at 4x the volume per rank are not the job's settings: they bound the value, they do not pin it
    ev = Evidence([run(4, v, block=4 << 30) for v in (800.0, 1000.0, 1500.0)] + runs[3:])
    b = bounds(ev, "scratch", "write", "POSIX/-", "shared", "MiB/s", True, **args)
    assert b.clamp(1400.0) == 1400.0 and b.clamp(100.0) == 800.0 / 1.25
