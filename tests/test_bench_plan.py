"""`ioadvise bench plan`: the points it proposes narrow the advice's intervals more than random points do, on a
KB simulated from a known ground truth; its sweep file runs under `bench sweep`; bad input exits 2."""
from __future__ import annotations

import json
import re
import math
import random
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.bench import plan as bp
from ioadvisor.bench.sweep import plan_sweep
from ioadvisor.center import load_center
from ioadvisor.cli import app
from ioadvisor.kb import KB
from ioadvisor.model.run import Provenance
from ioadvisor.model.validate import make_run
from ioadvisor.predict import fit_all
from ioadvisor.predict import physical as ph
from ioadvisor.predict.physical import Z90
from tests.slurm_cluster import slurm_cluster  # noqa: F401

SYSTEM, FS, OSTS = "simbox", "scratch", 32
# the ground truth the runs are drawn from: 1.2 GB/s per stream, 4 GB/s per node, 600 MiB/s per OST with
# contention on shared files, extent-lock conflicts where more nodes than stripes write one file independently,
# collective I/O paying for its exchange, an MPI-IO ceiling of 12 GiB/s
TRUTH = {"log_stream": math.log(1200.0), "log_node": math.log(4000.0), "log_ost": math.log(600.0),
         "log_pair": math.log(500.0), "log_peak": math.log(30000.0), "gamma_shared": 0.5, "gamma_fpp": 0.05,
         "placement": 0.7, "log_knee": math.log(65536.0), "exchange": 0.15, "log_shared_file": 0.0,
         "log_sync": math.log(0.6), "log_lock": math.log(131072.0),
         "cap:MPIIO/coll": math.log(12000.0), "cap:MPIIO/indep": math.log(9000.0), "cap:POSIX/-": math.log(1e6)}
NOISE = 0.12
TRANSFER = 1 << 20

CENTER = f"""
name = "{SYSTEM}"
[[filesystems]]
name = "{FS}"
type = "lustre"
mount = "{{mount}}"
ost_count = {OSTS}
default_stripe_count = 1
default_stripe_size = "1MiB"
"""


def _center(tmp_path: Path):
    path = tmp_path / "center.toml"
    path.write_text(CENTER.replace("{mount}", str(tmp_path / "scratch")))
    return path, load_center(path)


def _run(rnd: random.Random, nodes: int, rpn: int, api: str, layout: str, coll, stripes: int, op: str = "write",
         kind: str = "benchmark"):
    """One run drawn from the ground truth, mapped onto the model the way the advice maps a setting."""
    from ioadvisor.model.types import Config, FileSystem, Workload
    from ioadvisor.advise import candidate_point
    fs = FileSystem(name=FS, type="lustre", ost_count=OSTS, default_stripe_count=1, default_stripe_size=1 << 20)
    cfg = Config(filesystem=FS, layout=layout, api=api, collective=coll, stripe_count=stripes, stripe_size=1 << 20)
    w = Workload(nodes=nodes, ranks_per_node=rpn, bytes_per_rank=1 << 30, api=api, layout=layout, op=op,
                 access_size=TRANSFER)
    true = ph.predict_bw(TRUTH, candidate_point(cfg, fs, w).physical())
    return make_run(system=SYSTEM, filesystem=FS, fs_type="lustre", ost_count=OSTS, op=op, api=api, layout=layout,
                    collective=coll, nodes=nodes, ranks=nodes * rpn, ranks_per_node=rpn, stripe_count=stripes,
                    stripe_size=1 << 20, transfer_size=TRANSFER, value=true * math.exp(rnd.gauss(0, NOISE)),
                    unit="MiB/s", provenance=Provenance(kind=kind, source="simulated"))


def _initial_runs(seed: int = 1) -> list:
    """What a center has measured so far: small POSIX jobs at a few stripe counts, a little MPI-IO on one node."""
    rnd = random.Random(seed)
    runs = []
    for nodes in (1, 2, 4):
        for layout in ("fpp", "shared"):
            for stripes in (1, 4):
                runs.append(_run(rnd, nodes, 4, "POSIX", layout, None, stripes))
    for coll in (True, False):
        runs.append(_run(rnd, 1, 4, "MPIIO", "shared", coll, 1))
        runs.append(_run(rnd, 2, 4, "MPIIO", "shared", coll, 2))
    return runs


def _production(seed: int = 2) -> list:
    """The center's common jobs: 32 nodes writing one shared file with MPI-IO, 16 nodes writing a file per rank."""
    rnd = random.Random(seed)
    return ([_run(rnd, 32, 16, "MPIIO", "shared", True, 1, kind="production") for _ in range(5)]
            + [_run(rnd, 16, 16, "POSIX", "fpp", None, 1, kind="production") for _ in range(3)])


def _kb(tmp_path: Path) -> Path:
    path = tmp_path / "kb.sqlite"
    with KB.open(path) as kb:
        kb.add_runs(_initial_runs(), source="simulated", source_hash="sim-1", fmt="csv", importer="test")
        kb.add_runs(_production(), source="simulated-jobs", source_hash="sim-2", fmt="csv", importer="test")
    return path


def _simulate(points, rnd: random.Random, ops=("write",)) -> list:
    return [_run(rnd, p.nodes, p.ranks_per_node, p.api, p.layout, p.collective,
                 p.stripe_count if p.stripe_count is not None else 1, op) for p in points for op in ops]


def _at_targets(runs: list, plan: bp.BenchPlan, measure) -> float:
    """`measure(fit, point)` of the model refitted on `runs`, averaged over the targets' options as the plan
    weighs them."""
    fits = fit_all(runs, {FS: OSTS}, {FS: 1})
    tot = wsum = 0.0
    for op, ev in plan.evaluation.items():
        fit = fits[(SYSTEM, FS, op)]
        for p, w in ev:
            tot += w * measure(fit, p)
            wsum += w
    return tot / wsum


def _mean_width(runs: list, plan: bp.BenchPlan) -> float:
    """Mean 90% interval (high/low) of the refitted model at the targets' options, weighted as the plan weighs."""
    return _at_targets(runs, plan, lambda fit, p: math.exp(2 * Z90 * fit.log_sd(p)))


def _posterior_sd(runs: list, plan: bp.BenchPlan) -> float:
    """Mean sd of log bandwidth over the fit's posterior draws at the targets' options (weighted)."""
    return _at_targets(runs, plan, lambda fit, p: statistics.stdev(math.log(v) for v in fit.draws(p)))


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plan")
    # a module fixture runs before the per-test isolation (conftest): keep the reference KB cache of its own
    # too, not the user's, which other processes may hold locked
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp / "cache"))
        mp.setenv("XDG_DATA_HOME", str(tmp / "data"))
        center_path, center = _center(tmp)
        kb_path = _kb(tmp)
        with KB.open(kb_path) as kb:
            plan = bp.plan_for(kb, SYSTEM, center, budget=8)
    return tmp, center_path, kb_path, plan


def test_targets_are_the_production_workloads(simulated):
    _, _, _, plan = simulated
    assert plan.target_source == "production"
    got = {(t.workload.nodes, t.workload.ranks_per_node, t.workload.api, t.workload.layout, t.jobs)
           for t in plan.targets}
    assert got == {(32, 16, "MPIIO", "shared", 5), (16, 16, "POSIX", "fpp", 3)}
    assert sum(t.weight for t in plan.targets) == pytest.approx(1.0)
    # the grid reaches the targets' node counts and no further than twice the largest measured... or the targets'
    assert max(p.nodes for p in plan.grid) == 32
    # every stripe count the advice weighs, for every layout and API (bench run sets it with lfs setstripe) ...
    assert {p.stripe_count for p in plan.grid if p.api == "POSIX" and p.layout == "fpp"} == \
        {None, 2, 3, 4, 6, 8, 12, 16, 24, 32}
    # ... the default (1) as None, so that nothing is set for it; must NOT happen: more stripes than OSTs
    assert not any(p.stripe_count in (1,) or (p.stripe_count or 0) > OSTS for p in plan.grid)


def _random_points(plan: bp.BenchPlan, seed: int) -> list:
    """As many points as the plan proposes, drawn at random from its grid with one generator (a generator made
    afresh for each point would draw the same point every time)."""
    rnd = random.Random(seed)
    return [rnd.choice(plan.grid) for _ in plan.proposals]


def test_proposed_points_shrink_the_interval_more_than_random_points(simulated):
    """Refit with the proposed points simulated from the ground truth, and with as many random points of the
    same grid (five seeds, the median): the plan's points must narrow the mean interval more."""
    _, _, _, plan = simulated
    base = _initial_runs()
    now = _mean_width(base, plan)
    proposed = _mean_width(base + _simulate([p.point for p in plan.proposals], random.Random(11)), plan)
    rand = [_mean_width(base + _simulate(_random_points(plan, 100 + s), random.Random(11)), plan) for s in range(5)]
    print(f"mean 90% width: now {now:.3f}, planned {proposed:.3f}, random median {statistics.median(rand):.3f} "
          f"{sorted(round(r, 3) for r in rand)}; linearised: now {plan.width_now:.3f}, planned "
          f"{plan.proposals[-1].width_after:.3f}, random {plan.width_random:.3f}")
    assert proposed < now
    assert proposed < statistics.median(rand)
    # and the posterior alone (the fit's draws, without one run's scatter): what measuring can shrink
    sd_now = _posterior_sd(base, plan)
    sd_planned = _posterior_sd(base + _simulate([p.point for p in plan.proposals], random.Random(11)), plan)
    sd_random = statistics.median(
        _posterior_sd(base + _simulate(_random_points(plan, 100 + s), random.Random(11)), plan) for s in range(3))
    print(f"posterior sd of log bandwidth: now {sd_now:.3f}, planned {sd_planned:.3f}, random {sd_random:.3f}")
    assert sd_planned < sd_random < sd_now
    # the plan's own linearised expectation says the same
    assert plan.proposals[-1].width_after < plan.width_random < plan.width_now


def _decision_sd(runs: list, plan: bp.BenchPlan) -> float:
    """Mean sd, over the refitted posterior's draws, of log(best option / default) at each target (weighted)."""
    fits = fit_all(runs, {FS: OSTS}, {FS: 1})
    tot = wsum = 0.0
    for op, pairs in plan.decisions.items():
        fit = fits[(SYSTEM, FS, op)]
        for best, default, w in pairs:
            tot += w * statistics.stdev(math.log(b) - math.log(d) for b, d in zip(fit.draws(best), fit.draws(default)))
            wsum += w
    return tot / wsum


def test_decision_objective_narrows_the_best_to_default_ratio_more_than_random_points(simulated):
    """objective "decision": what the advice's choice turns on, log(best option / default) per target, refitted
    with the proposed points against as many random points of the grid (five seeds, the median)."""
    tmp, _, kb_path, _ = simulated
    _, center = _center(tmp)
    with KB.open(kb_path) as kb:
        plan = bp.plan_for(kb, SYSTEM, center, budget=8, objective="decision")
    assert plan.objective == "decision"
    # the pairs: each target's best predicted option against its default (1 stripe, the workload's own mode)
    pairs = plan.decisions["write"]
    assert len(pairs) == 2 and all(d.stripes == 1 and b != d for b, d, _ in pairs)
    assert sorted(w for _, _, w in pairs) == pytest.approx([3 / 8, 5 / 8])
    base = _initial_runs()
    now = _decision_sd(base, plan)
    planned = _decision_sd(base + _simulate([p.point for p in plan.proposals], random.Random(11)), plan)
    rand = [_decision_sd(base + _simulate(_random_points(plan, 100 + s), random.Random(11)), plan)
            for s in range(5)]
    print(f"sd of log(best/default): now {now:.3f}, planned {planned:.3f}, random median "
          f"{statistics.median(rand):.3f} {sorted(round(r, 3) for r in rand)}")
    assert planned < statistics.median(rand) < now
    assert plan.proposals[-1].posterior_after < plan.posterior_random < plan.posterior_now
    # must NOT happen: one run's scatter counted in a comparison of two predictions (the two widths are one)
    assert plan.proposals[-1].width_after == pytest.approx(plan.proposals[-1].posterior_after)


def _invoke(args, **kw):
    return CliRunner().invoke(app, args, catch_exceptions=False, **kw)


def test_cli_writes_a_sweep_file_that_bench_sweep_accepts(simulated, tmp_path):
    _, center_path, kb_path, plan = simulated
    out = tmp_path / "next.toml"
    r = _invoke(["bench", "plan", "--budget", "4", "--center", str(center_path), "--kb", str(kb_path),
                 "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["target_source"] == "production" and len(doc["points"]) == 4
    assert doc["width_after"] < doc["width_now"]
    # each point's figure is the state once it (and those above it) is measured: falling, point by point
    after = [p["posterior_after"] for p in doc["points"]]
    assert after == sorted(after, reverse=True) and doc["posterior_now"] > after[0] > after[-1]
    assert all(p["variance_removed"] > 0 for p in doc["points"])
    # the sweep file holds exactly the proposed points, each with its nodes and ranks
    sweep = plan_sweep(out, text=None)
    assert [(c.nodes, c.ranks) for c in sweep.configs] == [(p["nodes"], p["ranks"]) for p in doc["points"]]
    assert [c.settings["api"] for c in sweep.configs] == [p["api"].lower() for p in doc["points"]]
    assert all(c.settings["system"] == SYSTEM and c.settings["filesystem"] == FS for c in sweep.configs)
    assert all(c.settings["dir"].startswith(str(Path(center_path).parent / "scratch" / "ioadvise-plan"))
               for c in sweep.configs)
    for c, p in zip(sweep.configs, doc["points"]):
        # the stripe count as bench run takes it (0: the directory's default, nothing set)
        assert c.settings["stripe_count"] == (p["stripe_count"] or 0)
        assert c.settings["stripe_size"] == (1 << 20 if p["stripe_count"] else 0)
    # and bench sweep itself takes it, as a job array of as many tasks, sized for the largest point
    d = _invoke(["bench", "sweep", str(out), "--mode", "array", "--dry-run", "--json"])
    assert d.exit_code == 0, d.output
    script = json.loads(d.stdout)["script"]
    assert f"#SBATCH --array=0-3" in script
    assert f"#SBATCH --nodes={max(p['nodes'] for p in doc['points'])}" in script
    assert f"#SBATCH --ntasks-per-node={max(p['ranks_per_node'] for p in doc['points'])}" in script


def test_cli_never_overwrites_without_force(simulated, tmp_path):
    _, center_path, kb_path, _ = simulated
    out = tmp_path / "mine.toml"
    out.write_text("# the user's own sweep\n")
    args = ["bench", "plan", "--budget", "2", "--center", str(center_path), "--kb", str(kb_path), "--out", str(out)]
    r = _invoke(args)
    assert r.exit_code == 2 and "exists" in r.stderr and "--force" in r.stderr
    assert out.read_text() == "# the user's own sweep\n"
    r = _invoke(args + ["--force"])
    assert r.exit_code == 0, r.output
    assert "proposed benchmarks" in r.stdout and "[[config]]" in out.read_text()


@pytest.mark.parametrize("args, words", [
    (["--budget", "0"], "--budget must be at least 1"),
    (["--budget", "-3"], "--budget must be at least 1"),
    (["--system", "nosuchsystem"], "unknown system 'nosuchsystem'"),
    (["--filesystem", "nofs"], "has no file system 'nofs'"),
    (["--block-size", "3MiB", "--transfer-size", "2MiB"], "block_size"),
    (["--objective", "fastest"], "--objective: 'fastest' is not one of options, decision"),
])
def test_cli_bad_input_exits_2_with_a_clear_message(simulated, tmp_path, args, words):
    _, center_path, kb_path, _ = simulated
    base = ["bench", "plan", "--kb", str(kb_path), "--out", str(tmp_path / "x.toml")]
    if "--system" not in args:
        base += ["--center", str(center_path)]
    r = _invoke(base + args)
    assert r.exit_code == 2, r.output
    assert words in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / "x.toml").exists()


def test_production_records_without_node_counts():
    """Darshan records state the process count only: 64 ranks are 4 nodes of 16, not 64 ranks on one node; a
    record without any rank count, or of a metadata op, is no target."""
    def rec(**kw):
        return make_run(system=SYSTEM, op=kw.pop("op", "write"), value=kw.pop("value", 1e9), unit="B/s",
                        provenance=Provenance(kind="production"), **kw)
    runs = [rec(ranks=64, api="MPIIO", layout="shared")] * 3 + [rec(ranks=8, api="POSIX", layout="fpp")] + \
        [rec(api="POSIX")] + [rec(op="file_create", ranks=64, value=10.0)]
    got = [(t.workload.nodes, t.workload.ranks_per_node, t.workload.api, t.workload.layout, t.jobs)
           for t in bp.production_targets(runs)]
    assert got == [(4, 16, "MPIIO", "shared", 3), (1, 8, "POSIX", "fpp", 1)]


def test_a_system_without_runs_on_the_file_system_says_what_to_do(tmp_path):
    center_path, _ = _center(tmp_path)
    r = _invoke(["bench", "plan", "--center", str(center_path), "--kb", str(tmp_path / "empty.sqlite"),
                 "--out", str(tmp_path / "x.toml")])
    assert r.exit_code == 2 and "no measured write bandwidth on scratch" in r.stderr
    assert "bench sweep" in r.stderr


def test_default_targets_without_production_records(tmp_path):
    center_path, center = _center(tmp_path)
    path = tmp_path / "kb.sqlite"
    with KB.open(path) as kb:
        kb.add_runs(_initial_runs(), source="simulated", source_hash="sim-1", fmt="csv", importer="test")
        plan = bp.plan_for(kb, SYSTEM, center, budget=3)
    assert plan.target_source == "default"
    # measured up to 4 nodes: default targets at 1 and 4 nodes and at twice the largest measured, 16 ranks each
    assert sorted({t.workload.nodes for t in plan.targets}) == [1, 4, 8]
    assert {(t.workload.api, t.workload.layout) for t in plan.targets} == {("POSIX", "any"), ("MPIIO", "shared")}
    assert len(plan.proposals) == 3 and max(p.nodes for p in plan.grid) == 8


@pytest.mark.slurm
@pytest.mark.mpi
def test_the_plan_runs_as_a_job_array_and_lands_in_the_kb(simulated, slurm_cluster, tmp_path):
    """On the real single-node test cluster (2 CPUs): a plan held to one node and two ranks per node, run by
    `bench sweep --mode array`, adds one run per point and op to the KB, filed under the planned system and file
    system with the planned nodes and ranks."""
    import shutil
    import subprocess
    import sys
    _, center_path, kb_path, _ = simulated
    kb = tmp_path / "kb.sqlite"
    shutil.copy(kb_path, kb)
    out = tmp_path / "p.toml"
    ioadvise = Path(sys.executable).parent / "ioadvise"
    env = {**slurm_cluster.env, "IOADVISE_KB": str(kb)}
    p = subprocess.run([str(ioadvise), "bench", "plan", "--budget", "3", "--center", str(center_path),
                        "--max-nodes", "1", "--ranks-per-node", "2", "--block-size", "256KiB", "-t", "64KiB",
                        "--reps", "1", "--time", "00:05:00", "--out", str(out), "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    points = json.loads(p.stdout)["points"]
    assert len(points) == 3 and all(pt["nodes"] == 1 and pt["ranks_per_node"] <= 2 for pt in points)
    with KB.open(kb) as store:
        before = len(store.runs())
    s = subprocess.run([str(ioadvise), "bench", "sweep", str(out), "--mode", "array", "--results",
                        str(tmp_path / "res"), "--json", "--timeout", "150"], capture_output=True, text=True,
                       env=env, timeout=200)
    assert s.returncode == 0, s.stderr + s.stdout
    summary = json.loads(s.stdout)
    assert summary["failed"] == [] and summary["kb_runs"] == 3          # one op (write) per point
    with KB.open(kb) as store:
        new = [r for r in store.runs() if r.provenance.job_id and r.provenance.job_id.startswith(summary["job_id"])]
        assert len(store.runs()) == before + 3
    assert sorted((r.nodes, r.ranks, r.api, r.layout) for r in new) == \
        sorted((1, pt["ranks"], pt["api"], pt["layout"]) for pt in points)
    assert {(r.system, r.filesystem, r.op) for r in new} == {(SYSTEM, FS, "write")}
    # off Lustre the stripe count asked for is not claimed
    assert all(r.stripe_count is None for r in new)


def test_a_barely_measured_system_gets_bounded_figures_that_add_up(tmp_path, monkeypatch):
    """Three one-node one-rank runs: most options lie far outside what was measured. Must NOT happen: a figure
    such as "now 1939440131660214.50x" (one unidentified option's interval averaged in), a figure that the
    listed options do not give, or "no mount" for a mount under $USER when USER is not set."""
    path = tmp_path / "center.toml"
    path.write_text(CENTER.replace("{mount}", str(tmp_path / "lus") + "/$USER"))
    rnd = random.Random(3)
    kb = tmp_path / "kb.sqlite"
    with KB.open(kb) as store:
        store.add_runs([_run(rnd, 1, 1, "POSIX", "fpp", None, 1) for _ in range(3)], source="s", source_hash="h",
                       fmt="csv", importer="test")
    args = ["bench", "plan", "--budget", "4", "--center", str(path), "--kb", str(kb), "--out",
            str(tmp_path / "p.toml")]
    monkeypatch.delenv("USER", raising=False)
    r = _invoke(args)
    assert r.exit_code == 2 and "$USER, which is not set" in r.stderr and "--dir" in r.stderr, r.output
    assert "no mount" not in r.stderr
    monkeypatch.setenv("USER", "alice")
    r = _invoke(args + ["--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert plan_sweep(tmp_path / "p.toml", text=None).configs[0].settings["dir"].startswith(
        str(tmp_path / "lus" / "alice" / "ioadvise-plan"))
    # bounded: each option's interval counts at most WIDE (100x), so every mean lies in [1, 100]
    figures = [doc[k] for k in ("width_now", "width_after", "width_random", "posterior_now", "posterior_after",
                                "posterior_random")]
    assert all(1.0 <= f <= bp.WIDE for f in figures), figures
    assert doc["wide_share_now"] > doc["wide_share_after"]           # the points make options predictable
    # checkable by hand: the figure is the weighted geometric mean of the listed options' high/low
    opts = doc["options"]
    assert math.isclose(sum(o["weight"] for o in opts), 1.0, rel_tol=1e-3)
    for key in ("posterior_now", "posterior_after"):
        by_hand = math.exp(sum(o["weight"] * math.log(o[key]) for o in opts))
        assert math.isclose(by_hand, doc[key], rel_tol=1e-3), (key, by_hand, doc[key])   # weights are rounded
    wide = sum(o["weight"] for o in opts if o["posterior_now"] >= bp.WIDE * (1 - 1e-9))
    assert math.isclose(wide, doc["wide_share_now"], abs_tol=1e-3)
    # the text shows no figure above WIDE either
    r = _invoke(args + ["--force"], terminal_width=200)
    assert r.exit_code == 0, r.output
    shown = [float(x.replace(",", "")) for x in re.findall(r"([0-9][0-9,]*\.[0-9]+)x", r.stdout)]
    assert shown and max(shown) <= bp.WIDE, r.stdout
    assert "cannot predict" in r.stdout


def test_no_point_is_proposed_twice_and_targets_run_the_centers_ranks_per_node(tmp_path):
    """A center whose file says its jobs run 32 ranks per node, no production records yet, a budget of 6. Must
    NOT happen: a point proposed twice (it would run as two identical configs; each config repeats its
    measurement already) or default targets at 16 ranks per node (before: one point three times, every target
    and point at 16)."""
    path = tmp_path / "center.toml"
    path.write_text(CENTER.replace("{mount}", str(tmp_path / "scratch")).replace(
        f'name = "{SYSTEM}"', f'name = "{SYSTEM}"\nranks_per_node = 32'))
    center = load_center(path)
    with KB.open(tmp_path / "kb.sqlite") as kb:
        kb.add_runs(_initial_runs(), source="simulated", source_hash="sim-1", fmt="csv", importer="test")
        plan = bp.plan_for(kb, SYSTEM, center, budget=6)
    assert plan.target_source == "default"
    assert {t.workload.ranks_per_node for t in plan.targets} == {32}
    points = [p.point for p in plan.proposals]
    assert len(points) == 6 and len(set(points)) == 6, [p.label() for p in points]
    assert 32 in {p.ranks_per_node for p in plan.grid}
    # a budget larger than the grid proposes each point once, and says why there are fewer
    fits = fit_all(_initial_runs(), {FS: OSTS}, {FS: 1})
    small = bp.make_plan(SYSTEM, center, center.filesystems[0], fits, _initial_runs(), plan.targets[:1],
                         budget=10_000, max_nodes=1, rpn_max=1)
    assert len({p.point for p in small.proposals}) == len(small.proposals) <= small.candidates < 10_000
    assert any(n.startswith(f"{len(small.proposals)} point(s), not 10000") for n in small.notes), small.notes
    # Darshan records state ranks only: 64 ranks are 2 nodes of the center's 32
    rec = make_run(system=SYSTEM, op="write", ranks=64, api="MPIIO", layout="shared", value=1e9, unit="B/s",
                   provenance=Provenance(kind="production"))
    (t,) = bp.production_targets([rec], rpn=32)
    assert (t.workload.nodes, t.workload.ranks_per_node) == (2, 32)


# ---- the plan shows and settles the choices `ioadvise advise` makes ------------------------------------------------

def _advise_json_choice(system: str, w) -> dict:
    """`ioadvise advise --json` for a target's workload (the reference KB): the recommended settings."""
    args = ["advise", "--json", "--system", system, "--nodes", str(w.nodes), "--ranks-per-node",
            str(w.ranks_per_node), "--bytes-per-rank", str(w.bytes_per_rank), "--api", w.api.lower(),
            "--layout", w.layout, "--op", w.op, "--access-size", str(w.access_size)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["recommendation"]


def test_the_plan_settles_and_shows_the_choice_advise_makes():
    """Dell-EE-Lustre-2.1 on the reference KB (no production records: the default targets). For each target,
    the option whose ratio to the default the "decision" plan narrows must be the one `ioadvise advise --json`
    recommends (where that is not the default), and the advice the plan shows must be its settings: stripe count,
    layout, API and collective mode equal, target by target. A plan that takes the option its fit alone predicts
    best would settle a choice the advice does not make (MPI-IO to one shared file at 16 nodes: the fit alone
    ranks independent I/O first, the advice chooses collective I/O)."""
    from ioadvisor.advise.candidates import baseline_config, candidate_point
    with KB.open(None, create=False) as kb:
        center = load_center("Dell-EE-Lustre-2.1")
        plan = bp.plan_for(kb, "Dell-EE-Lustre-2.1", center, budget=2, objective="decision")
    fs = center.filesystem(plan.filesystem)
    pairs = iter(plan.decisions["write"])
    compared = 0
    for k, t in enumerate(plan.targets):
        rec = _advise_json_choice("Dell-EE-Lustre-2.1", t.workload)
        best, default, _ = next(pairs)
        w = t.workload
        base = baseline_config(w, center)
        assert default == candidate_point(base, fs, w)
        chosen = (rec["layout"], rec["api"], rec["collective"], rec["stripe_count"])
        if chosen != (base.layout, base.api, base.collective, base.stripe_count) and rec["tier"] is None:
            compared += 1
            assert (best.layout, best.klass, best.stripes) == (
                rec["layout"], candidate_point(_config(rec), fs, w).klass, float(rec["stripe_count"])), (k, rec)
        shown = plan.to_json()["targets"][k]["advice"]
        assert (shown["layout"], shown["api"], shown["collective"], shown["stripe_count"]) == chosen, (k, shown)
    assert compared >= 4


def _config(rec: dict):
    from ioadvisor.model.types import Config
    return Config(filesystem=rec["filesystem"], layout=rec["layout"], api=rec["api"], collective=rec["collective"],
                  stripe_count=rec["stripe_count"], stripe_size=rec["stripe_size_bytes"])
