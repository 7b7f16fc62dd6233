"""Fits stored in the KB: reused by every process that reads the same runs, refitted when the runs change."""
from __future__ import annotations

from pathlib import Path

from ioadvisor.advise import fits
from ioadvisor.kb import KB
from ioadvisor.model.run import make_run


def _run(value: float) -> object:
    return make_run(value=value, unit="MiB/s", system="Mine", filesystem="lus", op="write", api="POSIX",
                    layout="fpp", nodes=1, ranks=4, stripe_count=1)


def test_stored_fits_serve_every_cache_directory_of_the_same_reference_data(kb_path, tmp_path, monkeypatch):
    """Two users of one KB have their reference KB (the same data) in caches of their own: the second uses the
    fits the first stored. A run added to the KB makes them stale."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-a"))
    with KB.open(kb_path) as kb:
        kb.add_runs([_run(100.0)], source="a", source_hash="a", fmt="csv", importer="test/1")
        ref_a = Path(kb.reference)
        stored = fits.system_fits(kb, "HA8000")
    assert stored
    fits._CACHE.clear()                                   # another process
    fitted: list[str] = []
    real = fits.fit_all
    monkeypatch.setattr(fits, "fit_all", lambda runs, *a: fitted.append("fit") or real(runs, *a))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-b"))
    with KB.open(kb_path) as kb:
        assert kb.reference != str(ref_a) and Path(kb.reference).name == ref_a.name
        again = fits.system_fits(kb, "HA8000")
    assert fitted == [] and again.keys() == stored.keys()
    assert [f.n_runs for f in again.values()] == [f.n_runs for f in stored.values()]
    # what must not happen: fits kept after the runs changed (a new run raises the KB's largest rowid)
    fits._CACHE.clear()
    with KB.open(kb_path) as kb:
        kb.add_runs([_run(200.0)], source="b", source_hash="b", fmt="csv", importer="test/1")
        fits.system_fits(kb, "HA8000")
    assert fitted == ["fit"]
