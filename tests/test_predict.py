"""The bound-and-bottleneck model reproduces the seeds' measured curves."""
from __future__ import annotations

import pytest

from ioadvisor.kb import KB, RunFilter
from ioadvisor.model.run import make_run
from ioadvisor.predict import Point, fit_all, fit_group

MB = 1e6 / (1 << 20)   # MB/s in MiB/s


def _ha8000_write():
    with KB.open(None, create=False) as kb:
        return fit_all(kb.runs(RunFilter(system="HA8000", op="write")))[("HA8000", "lustre", "write")]


def test_ha8000_stripe_curve():
    fit = _ha8000_write()
    one = lambda s: fit.predict(Point(clients=1, ranks=1, targets=s, shared=True, transfer=None))  # noqa: E731
    assert abs(one(1) / MB - 100) < 5                      # about 100 MB/s on one stripe
    for s in (4, 6, 8, 16, 30):
        assert 300 <= one(s) / MB <= 350                   # the 300-350 MB/s plateau
    assert one(2) < one(3) <= one(4)
    assert fit.n_runs == 5 and len(fit.run_ids) == 5


def test_interval_widens_with_fewer_runs():
    runs = [make_run(system="S", filesystem="fs", fs_type="lustre", op="write", layout="shared", nodes=1, ranks=1,
                     stripe_count=s, value=min(100.0 * s, 400.0), unit="MiB/s") for s in (1, 2, 4, 8)]
    few = fit_group("S", "fs", "write", runs[:2])
    many = fit_group("S", "fs", "write", runs)
    assert (few.interval(100)[1] - few.interval(100)[0]) > (many.interval(100)[1] - many.interval(100)[0])
    assert abs(many.predict(Point(clients=1, ranks=1, targets=16, shared=True, transfer=None)) - 400) < 1


def test_metadata_rate_model():
    runs = [make_run(system="S", filesystem="fs", op="file_create", ranks=r, nodes=r, value=min(500.0 * r, 8000.0),
                     unit="ops/s") for r in (1, 2, 4, 64)]
    fit = fit_group("S", "fs", "file_create", runs)
    assert fit.kind == "rate"
    assert abs(fit.predict(Point(clients=8, ranks=8, targets=1, shared=False, transfer=None)) - 4000) < 1
    assert fit.predict(Point(clients=64, ranks=256, targets=1, shared=False, transfer=None)) <= 8000 + 1e-6


def test_shared_penalty_is_fitted_when_both_layouts_are_measured():
    runs = []
    for n in (1, 2, 4, 8):
        runs.append(make_run(system="S", filesystem="fs", fs_type="gpfs", op="write", layout="fpp", nodes=n, ranks=n,
                             value=1000.0 * n, unit="MiB/s"))
        runs.append(make_run(system="S", filesystem="fs", fs_type="gpfs", op="write", layout="shared", nodes=n,
                             ranks=n, value=(1000.0 * n) * (0.55 if n > 1 else 1), unit="MiB/s"))
    fit = fit_group("S", "fs", "write", runs)
    assert fit.shared_penalty == 0.55


def test_fit_knows_the_client_counts_it_was_measured_at():
    runs = [make_run(system="T", filesystem="fs", fs_type="lustre", ost_count=8, op="write", layout="fpp",
                     nodes=n, ranks=n, stripe_count=1, value=100.0 * n, unit="MiB/s") for n in (2, 4)]
    fit = fit_group("T", "fs", "write", runs, ost_count=8)
    at = lambda n: Point(clients=n, ranks=n, targets=n, shared=False, transfer=None)  # noqa: E731
    assert (fit.clients_min, fit.clients_max) == (2, 4)
    assert not fit.extrapolates(at(3)) and fit.extrapolates(at(1)) and fit.extrapolates(at(16))
    agg = make_run(system="T", filesystem="fs", fs_type="lustre", ost_count=8, op="write", layout="fpp",
                   value=2000.0, unit="MiB/s")                  # no client count: an aggregate over many clients
    assert not fit_group("T", "fs", "write", runs + [agg], ost_count=8).extrapolates(at(64))


def _meta(op, ranks, value):
    return make_run(system="S", filesystem="fs", fs_type="lustre", op=op, layout="fpp", nodes=ranks, ranks=ranks,
                    stripe_count=1, value=value, unit="ops/s")


def test_single_count_group_borrows_the_saturation_of_sibling_ops():
    # file_stat saturates at 100 ranks (100 ops/s per rank, 10,000 ceiling); file_create was measured only at one
    # rank: without a sibling its ceiling is unknown and the fit predicts the one-rank value for every count
    stat = [_meta("file_stat", 1, 100.0), _meta("file_stat", 400, 10000.0)]
    alone = fit_all([_meta("file_create", 1, 50.0)])[("S", "fs", "file_create")]
    assert alone.predict(Point(clients=64, ranks=400, targets=1, shared=False, transfer=None)) == pytest.approx(50.0)
    fits = fit_all(stat + [_meta("file_create", 1, 50.0)])
    f = fits[("S", "fs", "file_create")]
    big = f.predict(Point(clients=64, ranks=400, targets=1, shared=False, transfer=None))
    assert abs(big / 5000.0 - 1) < 0.01                     # 50 per rank x the sibling's saturation at 100 ranks
    assert f.predict(Point(clients=1, ranks=1, targets=1, shared=False, transfer=None)) == pytest.approx(50.0)


def test_aggregate_only_group_does_not_promise_its_aggregate_to_one_rank():
    # a rate stated with no rank count (an aggregate) used to make the per-rank rate unbounded, so one rank was
    # predicted the aggregate; with a sibling that measured both ends, one rank gets aggregate / saturation
    stat = [_meta("file_stat", 1, 100.0), _meta("file_stat", 400, 10000.0)]
    agg = make_run(system="S", filesystem="fs", fs_type="lustre", op="dir_create", layout="fpp", stripe_count=1,
                   value=20000.0, unit="ops/s")
    f = fit_all(stat + [agg])[("S", "fs", "dir_create")]
    one = f.predict(Point(clients=1, ranks=1, targets=1, shared=False, transfer=None))
    assert abs(one / 200.0 - 1) < 0.01
    assert f.predict(Point(clients=float("inf"), ranks=float("inf"), targets=1, shared=False,
                           transfer=None)) == pytest.approx(20000.0)


def test_saturation_is_borrowed_only_within_a_system_file_system_and_family():
    stat = [_meta("file_stat", 1, 100.0), _meta("file_stat", 400, 10000.0)]
    other = make_run(system="T", filesystem="fs", fs_type="lustre", op="file_create", layout="fpp", nodes=1,
                     ranks=1, stripe_count=1, value=50.0, unit="ops/s")
    rand = make_run(system="S", filesystem="fs", fs_type="lustre", op="randwrite", layout="fpp", nodes=1,
                    ranks=1, stripe_count=1, transfer_size=4096, value=5000.0, unit="IOPS")
    fits = fit_all(stat + [other, rand])
    p = Point(clients=64, ranks=400, targets=1, shared=False, transfer=4096)
    assert fits[("T", "fs", "file_create")].predict(p) == pytest.approx(50.0)    # another system
    assert fits[("S", "fs", "randwrite")].predict(p) == pytest.approx(5000.0)     # random IOPS do not scale like metadata


def test_single_client_single_stripe_count_bandwidth_is_not_taken_as_target_bound():
    # writes measured at 1 client (1,000) and at 8 clients (6,000): saturation at 6 clients. Reads measured only
    # on one client over 8 stripes: the fit alone would read them as 125 per target and cap 24 targets at 3,000
    def bw(op, nodes, stripes, value):
        return make_run(system="S", filesystem="fs", fs_type="lustre", ost_count=24, op=op, layout="fpp",
                        nodes=nodes, ranks=nodes, stripe_count=stripes, value=value, unit="MiB/s")
    runs = [bw("write", 1, 8, 1000.0), bw("write", 8, 8, 6000.0), bw("read", 1, 8, 1000.0)]
    f = fit_all(runs, {"fs": 24})[("S", "fs", "read")]
    assert f.predict(Point(clients=1, ranks=1, targets=8, shared=False, transfer=None)) == pytest.approx(1000.0)
    assert f.predict(Point(clients=16, ranks=16, targets=24, shared=False, transfer=None)) == pytest.approx(6000.0)


def test_lookups_borrow_from_lookups_and_updates_from_updates():
    # stat saturates at 200 ranks, create at 10: a lone dir_stat run borrows 200, a lone dir_create 10
    runs = [_meta("file_stat", 1, 100.0), _meta("file_stat", 400, 20000.0),
            _meta("file_create", 1, 100.0), _meta("file_create", 400, 1000.0),
            _meta("dir_stat", 1, 50.0), _meta("dir_create", 1, 50.0)]
    fits = fit_all(runs)
    p = Point(clients=64, ranks=1000, targets=1, shared=False, transfer=None)
    assert fits[("S", "fs", "dir_stat")].predict(p) == pytest.approx(50.0 * 200)
    assert fits[("S", "fs", "dir_create")].predict(p) == pytest.approx(50.0 * 10)
    # with no sibling of its own kind, a lookup falls back to every metadata op of the system
    fits = fit_all(runs[2:4] + [_meta("dir_stat", 1, 50.0)])
    assert fits[("S", "fs", "dir_stat")].predict(p) == pytest.approx(50.0 * 10)


def test_a_group_that_does_not_rise_with_clients_lends_no_saturation_point():
    # a peak at 64 ranks and a lower sustained plateau over many more: no saturation point to lend
    plateau = make_run(system="S", filesystem="fs", fs_type="lustre", op="file_stat", layout="fpp",
                       stripe_count=1, value=3000.0, unit="ops/s")
    fits = fit_all([_meta("file_stat", 64, 6000.0), plateau, _meta("dir_stat", 1, 50.0)])
    p = Point(clients=64, ranks=1000, targets=1, shared=False, transfer=None)
    assert fits[("S", "fs", "dir_stat")].predict(p) == pytest.approx(50.0)
