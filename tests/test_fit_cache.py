"""Fits by content in the user's cache (advise.fits.fit_all_cached), as advise, `kb validate` and `kb publish`
read them: what must NOT happen is a figure that differs from a fresh fit's, or a fit read back for runs, OST
counts or model code other than those it was made for."""
from __future__ import annotations

import subprocess

import pytest

from ioadvisor.advise import fits as F
from ioadvisor.frozen import replace
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
    # what Fit's equality leaves out: every run id
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


# advise: where the KB's stored fits do not match (a new KB, a run added), the fits by content serve when the
# system's runs were fitted before; what must NOT happen is another answer than a fresh fit's, a fit of other
# runs read back, or an advice that fails because the cache cannot be read or written
SITE = 'name = "Site"\nmpi = "openmpi"\n[[filesystems]]\nname = "lus"\ntype = "lustre"\nost_count = 8\n'


def _site_runs(first: float = 400.0) -> list:
    # shared-file writes at 1-8 nodes and 1, 4, 8 stripes; `first` is the value of the first run
    runs = [make_run(value=float(min(900 * n, 400 * s)), unit="MiB/s", system="Site", filesystem="lus",
                     fs_type="lustre", op="write", api="POSIX", layout="shared", nodes=n, ranks=n, stripe_count=s)
            for n in (1, 2, 4, 8) for s in (1, 4, 8)]
    return [replace(runs[0], value=first)] + runs[1:]


@pytest.fixture
def site(counted, tmp_path):
    """advise --json for the center Site on a new KB (in a new process: nothing cached in this one) holding
    `runs`: (exit code, output, the fits the KB stores afterwards)."""
    import sqlite3
    from typer.testing import CliRunner
    from ioadvisor.cli import app
    from ioadvisor.kb import KB
    (tmp_path / "site.toml").write_text(SITE)
    made = iter(range(100))

    def advise(runs: list) -> tuple[int, str, list]:
        path = tmp_path / f"kb{next(made)}.sqlite"
        with KB.open(path) as kb:
            kb.add_runs(runs, source="a", source_hash="a", fmt="csv", importer="test/1")
        F._CACHE.clear()
        F._EVIDENCE.clear()
        res = CliRunner().invoke(app, ["advise", "--center", str(tmp_path / "site.toml"), "--nodes", "4",
                                       "--ranks-per-node", "2", "--bytes-per-rank", "1GiB", "--api", "posix",
                                       "--layout", "shared", "--json", "--kb", str(path)])
        with sqlite3.connect(path) as c:
            stored = c.execute("SELECT system FROM advise_fits").fetchall()
        c.close()
        return res.exit_code, res.stdout, stored
    return advise


def test_advise_reads_a_fit_of_the_same_runs_and_answers_as_a_fresh_fit(site, counted, tmp_path):
    d = tmp_path / "cache" / "ioadvisor" / "fits"
    fresh = site(_site_runs())
    assert fresh[0] == 0 and counted == [12] and len(list(d.glob("*.json.z"))) == 1
    assert fresh[2] == [("Site",)]                        # the user's KB stores its fits as before
    # another KB with the same runs: no fit, the same bytes out, its own table written
    assert site(_site_runs()) == fresh and counted == [12]
    # one run's value changed: its own fit (not the stored one of other runs), and another answer
    other = site(_site_runs(first=401.0))
    assert other[0] == 0 and counted == [12, 12] and other[1] != fresh[1]
    assert len(list(d.glob("*.json.z"))) == 2


def test_advise_without_a_usable_cache_fits_afresh_and_answers_the_same(site, counted, tmp_path):
    d = tmp_path / "cache" / "ioadvisor" / "fits"
    fresh = site(_site_runs())
    (stored,) = d.glob("*.json.z")
    # a damaged entry: fitted again, the same answer
    stored.write_bytes(stored.read_bytes()[:-20])
    assert site(_site_runs()) == fresh and counted == [12, 12]
    # a cache directory nothing can be written in (immutable: even root cannot), the entry gone: fitted, the
    # same answer, no error, nothing written there
    stored.unlink()
    if subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode:
        pytest.skip("cannot make a directory immutable here")
    try:
        assert site(_site_runs()) == fresh and counted == [12] * 3
    finally:
        subprocess.run(["chattr", "-i", str(d)], check=True)
    assert list(d.iterdir()) == []
    # a file where the cache directory should be: the same
    d.rmdir()
    d.write_text("")
    assert site(_site_runs()) == fresh and counted == [12] * 4


def test_the_digest_hashes_the_code_a_fit_runs_and_not_the_evidence_bands():
    # what must NOT happen: a fit read back after the code that made it changed, or every fit of a KB made again
    # for a change to the evidence bands, which bound predictions after the fit and are never read by it. Fitted
    # in a fresh process, the modules of ioadvisor.predict that the fit loaded are all hashed; evidence is not
    # loaded, and not hashed
    import json
    import sys
    code = ("import json, sys\n"
            "from ioadvisor.model.validate import make_run\n"
            "from ioadvisor.predict import fit_all\n"
            "runs = [make_run(system='Toy', filesystem='fs', fs_type='lustre', ost_count=16, op='write',\n"
            "                 layout='shared', nodes=n, ranks=n, stripe_count=sc, value=300.0 * n * sc ** 0.5,\n"
            "                 unit='MiB/s') for n, sc in ((1, 1), (2, 4), (4, 1), (8, 4))]\n"
            "assert fit_all(runs, {'fs': 16}, {'fs': 1})\n"
            "print(json.dumps([m.__file__ for n, m in sys.modules.items() if n.startswith('ioadvisor.predict')]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = {str(f) for f in json.loads(out)}
    hashed = {str(f) for f in F.model_files()}
    assert loaded and loaded <= hashed
    assert not any(f.endswith("evidence.py") for f in loaded | hashed)


def test_a_validation_memo_gives_each_run_its_own_key(counted):
    # what must NOT happen: a run given the key text of another run that had its id before (a run object freed
    # while the memo lives, its id taken by a new one), and so the other run's fit read back from the cache
    memo: dict = {}
    first, other = _runs(1.0), _runs(1.3)
    fits_first = F.fit_all_cached(first, {}, {}, memo=memo)
    # the memo's entries as they would stand had each run of `other` taken the id of a freed run of `first`
    texts = memo[F._RUN_TEXTS]
    for a, b in zip(first, other):
        texts[id(b)] = texts[id(a)]
    fits_other = F.fit_all_cached(other, {}, {}, memo=memo)
    assert F._run_texts(other, memo) == [repr(r) for r in other]
    assert fits_other != fits_first and counted == [4, 4]      # fitted on its own runs, not read back
    assert F.fit_all_cached(other, {}, {}) == fits_other and counted == [4, 4]
