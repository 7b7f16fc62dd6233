"""The bound-and-bottleneck model reproduces the seeds' measured curves."""
from __future__ import annotations

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
