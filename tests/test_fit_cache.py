"""Fits by content in the user's cache (advise.fits.fit_all_cached), as `kb validate` and `kb publish` read them:
what must NOT happen is a figure that differs from a fresh fit's, or a fit read back for runs, OST counts or model
code other than those it was made for."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ioadvisor.advise import fits as F
from ioadvisor.model.validate import make_run


def _runs(scale: float = 1.0) -> list:
    # one system, one group: four shared-file writes over 1-8 nodes and 1-4 stripes, bandwidth growing with both
    return [make_run(system="Toy", filesystem="fs", fs_type="lustre", ost_count=16, op="write", layout="shared",
                     nodes=n, ranks=n, stripe_count=sc, value=scale * 300.0 * n * sc ** 0.5, unit="MiB/s")
            for n, sc in ((1, 1), (2, 4), (4, 1), (8, 4))]


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """The cache in a directory of its own, and the fits actually made (each call of fit_all) counted."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    made: list[int] = []
    real = F.fit_all

    def fit_all(runs, *a, **kw):
        made.append(len(runs))
        return real(runs, *a, **kw)

    monkeypatch.setattr(F, "fit_all", fit_all)
    return made


def test_a_fit_read_back_is_the_fit_made(counted, tmp_path):
    runs, osts = _runs(), {"fs": 16}
    fresh = F.fit_all_cached(runs, osts, {"fs": 1})
    again = F.fit_all_cached(runs, osts, {"fs": 1})
    assert counted == [4]                                # the second came from the cache
    assert again == fresh and again is not fresh
    # what Fit's equality leaves out: every run id (not only the first MAX_EVIDENCE_IDS stored in a KB)
    assert [f.run_ids for f in again.values()] == [f.run_ids for f in fresh.values()]
    assert len(list((tmp_path / "cache" / "ioadvisor" / "fits").glob("*.json.z"))) == 1


def test_other_runs_counts_or_model_code_are_fitted_afresh(counted, monkeypatch):
    runs = _runs()
    base = F.fit_all_cached(runs, {"fs": 16}, {"fs": 1})
    # one value changed in its 10th digit, one run less, the runs in another order, another OST count or
    # default stripe count: each a fit of its own
    moved = [replace(runs[0], value=runs[0].value * (1 + 1e-10))] + runs[1:]
    for args in ((moved, {"fs": 16}, {"fs": 1}), (runs[1:], {"fs": 16}, {"fs": 1}),
                 (runs[::-1], {"fs": 16}, {"fs": 1}), (runs, {"fs": 32}, {"fs": 1}), (runs, {"fs": 16}, {"fs": 2})):
        F.fit_all_cached(*args)
    assert counted == [4, 4, 3, 4, 4, 4]
    # the model's code changed (a new digest): the stored fit is not read
    monkeypatch.setattr(F, "_MODEL_DIGEST", ["another model"])
    assert F.fit_all_cached(runs, {"fs": 16}, {"fs": 1}) == base and counted[-1] == 4 and len(counted) == 7


def test_a_damaged_or_missing_cache_only_costs_a_fit(counted, tmp_path):
    runs = _runs()
    fresh = F.fit_all_cached(runs, {}, {})
    d = tmp_path / "cache" / "ioadvisor" / "fits"
    (stored,) = d.glob("*.json.z")
    stored.write_bytes(stored.read_bytes()[:-20])          # cut short
    assert F.fit_all_cached(runs, {}, {}) == fresh and counted == [4, 4]
    # no cache directory can be made (a file in its place): fitted, nothing stored
    stored.unlink()
    d.rmdir()
    d.write_text("")
    assert F.fit_all_cached(runs, {}, {}) == fresh and counted == [4, 4, 4]
    assert F.fit_all_cached(runs, {}, {}) == fresh and counted == [4, 4, 4, 4]


def test_the_cache_keeps_a_bounded_number_of_fits(counted, tmp_path, monkeypatch):
    monkeypatch.setattr(F, "FIT_CACHE_FILES", 2)
    for k in range(3):
        F.fit_all_cached(_runs(1 + k / 10), {}, {})
    # the 3rd file made three, above 2: the oldest went, down to 3/4 of the limit (one file); the last one made
    # is the one kept, and read back
    assert len(list((tmp_path / "cache" / "ioadvisor" / "fits").glob("*.json.z"))) == 1
    F.fit_all_cached(_runs(1.2), {}, {})
    assert counted == [4] * 3
