"""The physical model: its limits do what the physics says, and its fits recover what generated the runs."""
from __future__ import annotations

import math
import random

import pytest

from ioadvisor.frozen import replace
from ioadvisor.kb import KB, RunFilter
from ioadvisor.model.validate import make_run
from ioadvisor.predict import Point, fit_all, fit_group
from ioadvisor.predict import physical as ph

MB = 1e6 / (1 << 20)   # MB/s in MiB/s

# one known system: 2 GB/s per node link, 1 GB/s per stream, 500 MiB/s per OST, 400 MiB/s per stream and OST
TRUTH = {"log_stream": math.log(1000.0), "log_node": math.log(2000.0), "log_ost": math.log(500.0),
         "log_pair": math.log(400.0), "log_peak": math.log(40000.0), "gamma_shared": 0.4, "gamma_fpp": 0.05,
         "placement": 0.6, "log_knee": math.log(32768.0), "exchange": 0.05}


def pt(nodes, ranks, stripes, shared, osts=56.0, klass="POSIX/-", transfer=None):
    return ph.PPoint(nodes=nodes, ranks=ranks, stripes=stripes, osts=osts, shared=shared, transfer=transfer,
                     klass=klass)


def test_busiest_ost_of_file_per_process():
    # 64 one-stripe files on 56 OSTs: round-robin leaves the busiest with ceil(64/56) = 2 files
    assert ph.expected_max_load(64, 1, 56, placement=0.0) == 2
    # random placement: binomial(64, 1/56) per OST, mean 1.14, sd 1.06, expected max ~ 1.14 + 1.06 x 2.84 = 4.1
    assert ph.expected_max_load(64, 1, 56, placement=1.0) == pytest.approx(4.15, abs=0.1)
    # every file on every OST: each OST serves all 64 streams whatever the placement
    assert ph.expected_max_load(64, 56, 56, placement=0.0) == ph.expected_max_load(64, 56, 56, 1.0) == 64


def test_wide_striping_wins_for_file_per_process_when_placement_is_uneven():
    # 64 nodes, one rank each, 56 OSTs: 1 stripe per file leaves OSTs idle and others doubled; 56 stripes spread
    one = ph.predict_bw(TRUTH, pt(64, 64, 1, False))
    wide = ph.predict_bw(TRUTH, pt(64, 64, 56, False))
    assert wide > 1.5 * one
    # must NOT happen: a prediction above what 56 OSTs can deliver without contention (56 x 500 MiB/s)
    assert wide <= 56 * 500


def test_collective_writes_funnel_through_one_aggregator_per_stripe():
    coll = "MPIIO/coll"
    th = dict(TRUTH, log_ost=math.log(2000.0))    # fast OSTs: the aggregators, not the disks, bind
    four = [ph.predict_bw(th, pt(n, 16 * n, 4, True, klass=coll)) for n in (32, 128, 512)]
    wide = ph.predict_bw(th, pt(512, 16 * 512, 48, True, klass=coll))
    # 4 stripes: 4 aggregators whatever the node count, so the bandwidth plateaus ...
    assert max(four) / min(four) < 1.2
    assert max(four) <= 4 * 1000 * 1.001          # ... at most 4 aggregators x one stream each
    # ... while 48 stripes bring 48 aggregators
    assert wide > 5 * max(four)
    # independent I/O of the same job is not bound by aggregators
    indep = ph.predict_bw(th, pt(128, 16 * 128, 4, True, klass="MPIIO/indep"))
    assert ph.binding(th, pt(128, 16 * 128, 4, True, klass=coll)) == "aggregators"
    assert ph.binding(th, pt(128, 16 * 128, 4, True, klass="MPIIO/indep")) != "aggregators"
    assert indep != four[1]


def test_contention_makes_one_stripe_shared_reads_fall_with_more_clients():
    per_node = [ph.predict_bw(TRUTH, pt(n, n, 1, True)) for n in (1, 2, 4, 8)]
    assert per_node[-1] < per_node[0]              # 8 streams on one OST: less than one stream alone


def test_api_ceiling_is_its_own_limit():
    th = dict(TRUTH, **{"cap:HDF5/coll": math.log(1500.0)})
    narrow = ph.predict_bw(th, pt(64, 64 * 16, 2, True, klass="HDF5/coll"))
    wide = ph.predict_bw(th, pt(64, 64 * 16, 48, True, klass="HDF5/coll"))
    mpiio = ph.predict_bw(th, pt(64, 64 * 16, 48, True, klass="MPIIO/coll"))
    assert wide <= 1500 * 1.001 and mpiio > 4 * wide
    assert abs(narrow - ph.predict_bw(th, pt(64, 64 * 16, 2, True, klass="MPIIO/coll"))) / narrow < 0.1


def _synthetic(n_runs: int, seed: int = 3, noise: float = 0.08) -> list:
    rnd = random.Random(seed)
    runs = []
    for _ in range(n_runs):
        nodes = rnd.choice([1, 2, 4, 8, 16, 32, 64])
        shared = rnd.random() < 0.5
        stripes = rnd.choice([1, 2, 4, 8, 16, 32, 56])
        v = ph.predict_bw(TRUTH, pt(nodes, nodes, stripes, shared)) * math.exp(rnd.gauss(0, noise))
        runs.append(make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=56, op="write",
                             layout="shared" if shared else "fpp", nodes=nodes, ranks=nodes, stripe_count=stripes,
                             value=v, unit="MiB/s"))
    return runs


def test_fit_recovers_the_generating_model_at_unseen_points():
    fit = fit_group("S", "fs", "write", _synthetic(120), ost_count=56)
    errs = []
    for nodes, stripes, shared in [(3, 6, True), (24, 12, False), (48, 40, True), (12, 3, False), (6, 24, True)]:
        true = ph.predict_bw(TRUTH, pt(nodes, nodes, stripes, shared))
        p = Point(clients=nodes, ranks=nodes, shared=shared, stripes=stripes, osts=56)
        errs.append(abs(fit.predict(p) / true - 1))
    assert sorted(errs)[2] < 0.15            # median error at unseen points, with 8% noise on the runs


def test_interval_narrows_with_more_runs_and_covers_the_truth():
    few = fit_group("S", "fs", "write", _synthetic(8), ost_count=56)
    many = fit_group("S", "fs", "write", _synthetic(120), ost_count=56)
    p = Point(clients=16, ranks=16, shared=True, stripes=8, osts=56)
    w = lambda f: math.log(f.interval(f.predict(p), p)[1] / f.interval(f.predict(p), p)[0])   # noqa: E731
    assert w(few) > w(many)
    lo, hi = many.interval(many.predict(p), p)
    assert lo <= ph.predict_bw(TRUTH, pt(16, 16, 8, True)) <= hi


def test_ha8000_stripe_curve():
    with KB.open(None, create=False) as kb:
        fit = fit_all(kb.runs(RunFilter(system="HA8000", op="write")))[("HA8000", "lustre", "write")]
    one = lambda s: fit.predict(Point(clients=1, ranks=1, shared=True, stripes=s))  # noqa: E731
    assert abs(one(1) / MB - 100) < 10                     # about 100 MB/s on one stripe (measured: 100)
    for s in (4, 6, 8):
        assert 300 <= one(s) / MB <= 350                   # the measured 300-350 MB/s plateau
    assert one(2) < one(3) <= one(4)
    assert fit.n_runs == 5 and len(fit.run_ids) == 5


def test_metadata_rate_model():
    runs = [make_run(system="S", filesystem="fs", op="file_create", ranks=r, nodes=r, value=min(500.0 * r, 8000.0),
                     unit="ops/s") for r in (1, 2, 4, 64)]
    fit = fit_group("S", "fs", "file_create", runs)
    assert fit.kind == "rate"
    assert fit.predict(Point(clients=8, ranks=8)) == pytest.approx(4000, rel=0.15)
    # must NOT happen: more ranks promised more than the measured ceiling
    assert fit.predict(Point(clients=64, ranks=256)) <= 8000 * 1.1


def test_aggregate_only_group_does_not_promise_its_aggregate_to_one_rank():
    # runs that state no client or rank count measured the file system's ceiling: one rank cannot reach it
    runs = [make_run(system="S", filesystem="fs", op="file_stat", value=v, unit="ops/s") for v in (50000.0, 60000.0)]
    runs.append(make_run(system="S", filesystem="fs", op="file_stat", nodes=1, ranks=1, value=2000.0, unit="ops/s"))
    fit = fit_group("S", "fs", "file_stat", runs)
    assert fit.predict(Point(clients=1, ranks=1)) < 5000
    assert fit.predict(Point(clients=math.inf, ranks=math.inf)) > 30000


def test_fit_knows_the_client_counts_and_stripes_it_was_measured_at():
    runs = [make_run(system="T", filesystem="fs", fs_type="lustre", ost_count=8, op="write", layout="fpp",
                     nodes=n, ranks=n, stripe_count=1, value=100.0 * n, unit="MiB/s") for n in (2, 4)]
    fit = fit_group("T", "fs", "write", runs, ost_count=8)
    assert (fit.clients_min, fit.clients_max) == (2, 4)
    assert fit.stripes_measured == (1.0,)
    assert not fit.extrapolates(Point(clients=3, ranks=3, stripes=1, osts=8))
    far = Point(clients=64, ranks=64, stripes=1, osts=8)
    assert fit.extrapolates(far)
    # the interval widens with the distance from the measured counts instead of hiding it
    near = Point(clients=4, ranks=4, stripes=1, osts=8)
    assert fit.log_sd(far) > fit.log_sd(near)


def test_cached_prediction_needs_no_numpy(tmp_path):
    import subprocess
    import sys
    code = ("import sys; from ioadvisor.predict import physical as ph; "
            "th = {'log_stream': 7.0, 'log_node': 8.0, 'log_ost': 6.0, 'log_pair': 6.0, 'log_peak': 10.0, "
            "'gamma_shared': 0.3, 'gamma_fpp': 0.1, 'placement': 0.5, 'log_knee': 10.0, 'exchange': 0.1}; "
            "p = ph.PPoint(nodes=4, ranks=16, stripes=4, osts=16, shared=True, transfer=None, klass='MPIIO/coll'); "
            "v = ph.predict_bw(th, p); assert v > 0; print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


GIB = float(1 << 30)
CACHE_TRUTH = dict(TRUTH, log_cache=math.log(200 * GIB), log_boost=math.log(6.0))


def _volume_runs(seed: int = 5, noise: float = 0.08, totals: tuple = (64 * GIB, 1024 * GIB)) -> list:
    """Reads of the same settings at each volume of `totals`: by default 64 GiB (in the servers' 200 GiB cache)
    and 1 TiB (far beyond it)."""
    rnd = random.Random(seed)
    runs = []
    for nodes in (4, 8, 16, 32, 64):
        for stripes in (4, 16, 56):
            for shared in (True, False):
                for total in totals:
                    p = ph.PPoint(nodes=nodes, ranks=nodes, stripes=stripes, osts=56.0, shared=shared,
                                  transfer=None, klass="POSIX/-", bytes=total)
                    v = ph.predict_bw(CACHE_TRUTH, p) * math.exp(rnd.gauss(0, noise))
                    runs.append(make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=56, op="read",
                                         layout="shared" if shared else "fpp", nodes=nodes, ranks=nodes,
                                         stripe_count=stripes, block_size=int(total // nodes), value=v,
                                         unit="MiB/s"))
    return runs


def test_cache_sized_runs_are_explained_not_fitted_as_disk_speed():
    runs = _volume_runs()
    fit = fit_group("S", "fs", "read", runs, ost_count=56)
    th = fit.posterior.params()
    # the fit finds a cache between the volumes that fit (64 GiB) and those that do not (1 TiB)
    assert 64 * GIB < math.exp(th["log_cache"]) < 1024 * GIB
    # the advice's prediction (no volume: data not in cache) stays at the disks' speed; it must NOT be raised
    # towards the cached runs: 30 of the 60 runs are up to 6x faster than the disks
    raised = 0
    for nodes, stripes, shared in [(8, 16, True), (32, 56, False), (16, 4, True), (64, 16, False)]:
        cold = ph.predict_bw(TRUTH, pt(nodes, nodes, stripes, shared))
        hot = ph.predict_bw(CACHE_TRUTH, ph.PPoint(nodes=nodes, ranks=nodes, stripes=stripes, osts=56.0,
                                                   shared=shared, transfer=None, klass="POSIX/-",
                                                   bytes=64 * GIB))
        p = Point(clients=nodes, ranks=nodes, shared=shared, stripes=stripes, osts=56)
        got = fit.predict(p)
        assert abs(got / cold - 1) < 0.2, (nodes, stripes, shared, got, cold)
        raised += hot > 1.5 * cold
        # a held-out run of cache size is predicted as cached
        hp = Point(clients=nodes, ranks=nodes, shared=shared, stripes=stripes, osts=56, bytes=64 * GIB)
        assert abs(fit.predict(hp) / hot - 1) < 0.25
    assert raised >= 2          # the cache matters at these points: the test could fail
    # without the volumes the same runs look like one noisy disk, and the prediction is raised
    blind = fit_group("S", "fs", "read", [replace(r, block_size=None) for r in runs], ost_count=56)
    p = Point(clients=32, ranks=32, shared=False, stripes=56, osts=56)
    assert blind.predict(p) > 1.2 * fit.predict(p)


def test_posterior_draws_do_not_depend_on_how_lapack_signs_eigenvectors(monkeypatch):
    # Two LAPACK builds may return the covariance's eigenvectors with opposite signs (as they may an SVD's): the
    # draws, and with them every gain probability the advice decides by, must be the same. Sampling through an
    # SVD factor (x + z S^1/2 U^T) changed with the signs; the symmetric square root V diag(sqrt w) V^T does not.
    import numpy as np
    runs = _synthetic(40)
    a = fit_group("S", "fs", "write", runs, ost_count=56).posterior
    eigh = np.linalg.eigh

    def flipped(m):
        w, v = eigh(m)
        return w, v * np.where(np.arange(v.shape[1]) % 2, -1.0, 1.0)

    svd = np.linalg.svd

    def flipped_svd(m, *args, **kw):
        u, sv, vh = svd(m, *args, **kw)
        f = np.where(np.arange(len(sv)) % 2, -1.0, 1.0)
        return u * f, sv, vh * f[:, None]

    monkeypatch.setattr(np.linalg, "eigh", flipped)
    monkeypatch.setattr(np.linalg, "svd", flipped_svd)
    b = fit_group("S", "fs", "write", runs, ost_count=56).posterior
    assert a.theta == b.theta
    assert len(a.draws) == ph.N_DRAWS
    assert np.allclose(np.array(a.draws), np.array(b.draws), rtol=1e-9, atol=1e-9)
    # the draws are not all the fit itself (a posterior with no spread would make every gain certain)
    assert np.ptp(np.array(a.draws), axis=0).max() > 0


def test_no_cache_holds_every_run():
    # Reads at 16 and 64 GiB, both inside a 200 GiB cache: no run measured the disks. A cache larger than every
    # run's volume would explain all of them as cached and leave the advice's cold prediction resting on no run
    # (ARCHER's fs3 writes were fitted a 5.6 TB cache, 2.6x faster than the disks, and a 3.8 GB/s disk ceiling
    # under their own 27 GB/s runs). The cache is bounded by the largest volume moved, and the cold prediction is
    # what the largest runs measured, not an invented lower disk speed.
    runs = _volume_runs(totals=(16 * GIB, 64 * GIB))
    fit = fit_group("S", "fs", "read", runs, ost_count=56)
    assert math.exp(fit.posterior.params()["log_cache"]) <= 64 * GIB * 1.001
    for nodes, stripes, shared in [(8, 16, True), (32, 56, False)]:
        largest = ph.predict_bw(CACHE_TRUTH, ph.PPoint(nodes=nodes, ranks=nodes, stripes=stripes, osts=56.0,
                                                       shared=shared, transfer=None, klass="POSIX/-",
                                                       bytes=64 * GIB))
        cold = fit.predict(Point(clients=nodes, ranks=nodes, shared=shared, stripes=stripes, osts=56))
        assert abs(cold / largest - 1) < 0.1


# ---- extent locks of shared-file writes ---------------------------------------------------------------------

LOCK_TRUTH = dict(TRUTH, log_sync=math.log(0.3), log_lock=math.log(65536.0))


def wpt(nodes, ranks, stripes, transfer=1 << 20, klass="POSIX/-", writes=True, **kw):
    return ph.PPoint(nodes=nodes, ranks=ranks, stripes=stripes, osts=56.0, shared=True, transfer=transfer,
                     klass=klass, writes=writes, **kw)


def test_extent_locks_cut_a_shared_files_writes_once_nodes_outnumber_stripes():
    # 4 stripes: up to 4 nodes each OST object has one writer; 12 nodes put ceil(12/4) = 3 on each, and every
    # hand-over of the object's lock costs: the OSTs' share is sync x t / (t + knee x (3 - 1))
    # = 0.3 x 1 MiB / (1 MiB + 2 x 64 KiB) = 0.2667
    assert ph.lock_writers(wpt(4, 4, 4)) == 1 and ph.lock_writers(wpt(12, 12, 4)) == 3
    plain = ph.limits(TRUTH, wpt(12, 12, 4))["osts"]
    locked = ph.limits(LOCK_TRUTH, wpt(12, 12, 4))["osts"]
    assert locked / plain == pytest.approx(0.3 * (1 << 20) / ((1 << 20) + 2 * 65536), rel=1e-9)
    assert ph.binding(LOCK_TRUTH, wpt(12, 12, 4)) == "extent locks"
    # more nodes then write less than fewer did, and more stripes (one writer per object again) win it back
    assert ph.predict_bw(LOCK_TRUTH, wpt(12, 12, 4)) < ph.predict_bw(LOCK_TRUTH, wpt(4, 4, 4))
    assert ph.predict_bw(LOCK_TRUTH, wpt(12, 12, 12)) > 3 * ph.predict_bw(LOCK_TRUTH, wpt(12, 12, 4))
    # small requests pay more per byte for each lock round trip: 64 KiB transfers lose more than 8 MiB ones
    small = ph.predict_bw(LOCK_TRUTH, wpt(12, 12, 4, transfer=65536)) / ph.predict_bw(TRUTH, wpt(12, 12, 4, 65536))
    large = ph.predict_bw(LOCK_TRUTH, wpt(12, 12, 4, transfer=8 << 20)) / ph.predict_bw(TRUTH, wpt(12, 12, 4, 8 << 20))
    assert small < large


def test_no_lock_conflict_where_no_two_clients_write_one_object():
    # must NOT be penalised (the model without the lock term predicts exactly the same): reads, collective writes
    # (one aggregator per stripe), many ranks on one node (one client holds the lock), file per process,
    # transfers that tile the stripes with no more nodes than stripes, and a run whose stripe count is unknown
    free = [wpt(12, 12, 4, writes=False), wpt(12, 192, 4, klass="MPIIO/coll"), wpt(1, 64, 1),
            wpt(12, 12, 4)._replace(shared=False), wpt(4, 4, 4, transfer=65536), wpt(4, 4, 4, transfer=4 << 20),
            wpt(12, 12, 1, stripes_known=False)]
    for p in free:
        assert ph.lock_writers(p) == 1, p
        assert ph.predict_bw(LOCK_TRUTH, p) == ph.predict_bw(TRUTH, p), p
    # transfers that straddle stripes (IO500's ior-hard: 47,008 bytes in 1 MiB stripes) put two clients on a
    # stripe's boundary even with a stripe per node, and so does an unknown stripe count
    for p in (wpt(4, 4, 4, transfer=47008), wpt(12, 12, 1, transfer=47008, stripes_known=False)):
        assert ph.lock_writers(p) == 2
        assert ph.predict_bw(LOCK_TRUTH, p) < 0.5 * ph.predict_bw(TRUTH, p)


def test_fit_finds_the_lock_cliff_and_advises_a_stripe_per_writer_node():
    # shared-file POSIX writes, one rank per node, 4 and 16 stripes, 1-48 nodes, three transfer sizes (the shape
    # of a public stripe sweep where writes fall 5x once nodes exceed stripes)
    rnd = random.Random(4)
    runs = []
    for stripes in (4, 16):
        for nodes in (1, 2, 4, 8, 16, 24, 32, 48):
            for t in (65536, 1 << 20, 8 << 20):
                v = ph.predict_bw(LOCK_TRUTH, wpt(nodes, nodes, stripes, transfer=t)) * math.exp(rnd.gauss(0, 0.08))
                runs.append(make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=56, op="write",
                                     api="POSIX", layout="shared", nodes=nodes, ranks=nodes, stripe_count=stripes,
                                     transfer_size=t, stripe_size=1 << 20, value=v, unit="MiB/s"))
    fit = fit_group("S", "fs", "write", runs, ost_count=56)
    at = lambda n, s: Point(clients=n, ranks=n, shared=True, stripes=s, osts=56, transfer=1 << 20, klass="POSIX/-",
                            writes=True)   # noqa: E731
    for n, s in ((12, 4), (6, 16), (40, 16), (32, 32)):           # not measured
        truth = ph.predict_bw(LOCK_TRUTH, wpt(n, n, s))
        assert abs(fit.predict(at(n, s)) / truth - 1) < 0.25, (n, s)
    # 32 writer nodes: 32 stripes (one writer per object) over 16 (two per object) by more than the lock's cost
    assert fit.predict(at(32, 32)) > 2 * fit.predict(at(32, 16))
    assert fit.binding(at(32, 16)) == "extent locks"


def test_candidate_settings_carry_the_op_and_stripe_size_the_lock_term_needs():
    from ioadvisor.advise import candidate_point
    from ioadvisor.model.types import Config, FileSystem, Workload
    fs = FileSystem(name="fs", type="lustre", ost_count=56, default_stripe_count=1, default_stripe_size=4 << 20)
    cfg = Config(filesystem="fs", layout="shared", api="POSIX", collective=None, stripe_count=4)
    job = dict(nodes=12, ranks_per_node=1, bytes_per_rank=1 << 30, api="POSIX", layout="shared",
               access_size=1 << 20)
    write = candidate_point(cfg, fs, Workload(op="write", **job)).physical()
    read = candidate_point(cfg, fs, Workload(op="read", **job)).physical()
    assert write.writes and not read.writes
    assert write.stripe_size == 4 << 20          # the file system's default where the setting names none
    assert ph.lock_writers(write) == 3 and ph.lock_writers(read) == 1


def test_lock_writers_take_odd_sizes_without_an_exception():
    # a fractional transfer (0.5 bytes) or stripe size would make int() zero: no modulo by zero, no conflict
    # invented from it
    for t, size in ((0.5, None), (0, None), (None, None), (47008, 0.3), (1e30, None)):
        p = wpt(4, 4, 4, transfer=t, stripe_size=size)
        assert ph.lock_writers(p) == 1.0, (t, size)


def test_every_limit_that_can_bind_is_named_in_words():
    # must NOT happen: "The bottleneck is extent locks." with the internal name where the reasons explain a limit
    from ioadvisor.advise.explain import _LIMIT_WORDS
    th = dict(LOCK_TRUTH, **{"cap:MPIIO/coll": math.log(1500.0)})
    names = set(ph.limits(th, wpt(12, 12, 4, klass="MPIIO/coll")))
    names |= {"aggregators", "extent locks", "request size", "metadata server", "target iops", "per-rank rate"}
    assert ph.binding(th, wpt(12, 12, 4)) == "extent locks"
    assert names <= set(_LIMIT_WORDS), names - set(_LIMIT_WORDS)


def _one_vector_at_a_time(f, names, X, y, mu, sd):
    """The residuals as a fit computed them one parameter vector at a time (each parameter a scalar)."""
    import numpy as np

    def rows(xs):
        out = []
        for x in np.asarray(xs, dtype=float):
            with np.errstate(all="ignore"):
                p = np.nan_to_num(f(dict(zip(names, x)), X, np), nan=1e-300, posinf=1e300)
            with np.errstate(divide="ignore"):
                lp = np.log(np.maximum(p, 1e-300))
            out.append(np.concatenate([(lp - y) / ph.OBS_SIGMA, (x - mu) / sd]))
        return np.array(out)
    return rows


def test_a_fit_evaluated_in_batches_is_the_fit_evaluated_vector_by_vector(monkeypatch):
    # The optimiser's finite-difference Jacobian and the posterior's 256 proposals are evaluated as one batch of
    # parameter vectors each (a column of parameters against a row of runs): every element must come out of the
    # same arithmetic as one vector at a time. Must NOT happen: any bit of a fit changed by the batching (the
    # optimum, the draws the advice decides by, the residual scale), in any branch of the model: API ceilings
    # (two classes in a group), the servers' cache (two volumes), extent locks (shared independent writes over
    # more nodes than stripes, transfers that straddle stripes), and a metadata rate.
    rnd = random.Random(7)
    mixed = [replace(r, api=api, collective=api == "MPIIO" or None)
             for r, api in zip(_synthetic(48), ["POSIX", "MPIIO"] * 24)]
    locks = [make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=56, op="write", api="POSIX",
                      layout="shared", nodes=n, ranks=n, stripe_count=s, transfer_size=t, stripe_size=1 << 20,
                      value=ph.predict_bw(LOCK_TRUTH, wpt(n, n, s, transfer=t)) * math.exp(rnd.gauss(0, 0.1)),
                      unit="MiB/s")
             for s in (2, 8) for n in (1, 4, 16) for t in (47008, 1 << 20)]
    rates = [make_run(system="S", filesystem="fs", op="file_create", ranks=r, nodes=max(1, r // 8),
                      value=min(400.0 * r, 9000.0) * math.exp(rnd.gauss(0, 0.1)), unit="ops/s")
             for r in (1, 2, 4, 16, 64, 256)]
    groups = [("write", mixed), ("read", _volume_runs(noise=0.1)), ("write", locks), ("file_create", rates)]

    def fits():
        return [fit_group("S", "fs", op, runs, ost_count=56).posterior for op, runs in groups]

    batched = fits()
    monkeypatch.setattr(ph, "_residual_rows", _one_vector_at_a_time)
    monkeypatch.setattr(ph, "_HAS_WORKERS", [False])
    single = fits()
    assert {"cap:MPIIO/coll", "log_cache", "log_lock"} <= {k for p in batched for k, _ in p.theta}
    assert batched[-1].kind == "rate"
    # the same arithmetic: on a numpy without AVX-512 every bit is equal; one whose vector math rounds a batch's
    # elements another way than one vector's (an AVX-512 pow: numpy 2.4 on an AMD EPYC) differs in the last bits,
    # which the optimiser and the sampler carry no further than their own tolerances: there the optimum of the
    # API-ceiling group moved by up to 1.6e-7 and its draws by up to 2.6e-7 (2e-6 of a shared-file exponent's
    # draw of 0.005). The parameters are logarithms of rates and sizes, exponents and fractions: 1e-6 either way
    # moves a prediction by a few millionths; a change the batching made to the arithmetic moves them by far more
    import numpy as np
    for a, b in zip(batched, single):
        assert [k for k, _ in a.theta] == [k for k, _ in b.theta] and a.prior_only == b.prior_only
        np.testing.assert_allclose([v for _, v in a.theta], [v for _, v in b.theta], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(a.draws, dtype=float), np.asarray(b.draws, dtype=float),
                                   rtol=1e-6, atol=1e-6)
        assert a.log_sigma == pytest.approx(b.log_sigma, rel=1e-6, abs=1e-9)
