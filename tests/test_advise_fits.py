"""Fits stored in the KB: reused by every process that reads the same runs, refitted when the runs change."""
from __future__ import annotations

from pathlib import Path

from ioadvisor.advise import fits
from ioadvisor.kb import KB
from ioadvisor.model.validate import make_run


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


def _sweep(system: str = "Mine") -> list:
    """Shared-file writes at 1-8 nodes and 1, 4, 8 stripes, the OST count left to the center: in insertion
    order, so that a run of the middle is neither the first nor the last row."""
    return [make_run(value=float(min(900 * n, 400 * s)), unit="MiB/s", system=system, filesystem="lus",
                     fs_type="lustre", op="write", api="POSIX", layout="shared", nodes=n, ranks=n,
                     stripe_count=s) for n in (1, 2, 4, 8) for s in (1, 4, 8)]


def test_deleting_a_run_refits_even_when_the_largest_rowid_stays(kb_path):
    # must NOT happen: advice resting on a deleted run. The run deleted is one of the middle: the KB's largest
    # rowid (the old signature) does not change, its count of the system's runs does
    fits._CACHE.clear()
    with KB.open(kb_path) as kb:
        kb.add_runs(_sweep(), source="a", source_hash="a", fmt="csv", importer="test/1")
        before = fits.system_fits(kb, "Mine")[("Mine", "lus", "write")]
        assert before.n_runs == 12
        top = kb.conn.execute("SELECT max(rowid) FROM main.runs").fetchone()[0]
        gone = [r for r in kb.select(flt=None, ids=[before.run_ids[4]])]
        kb.delete(gone)
        assert kb.conn.execute("SELECT max(rowid) FROM main.runs").fetchone()[0] == top
    for cache in ({}, None):                      # this process, and another one reading the stored fits
        if cache is None:
            fits._CACHE.clear()
        with KB.open(kb_path) as kb:
            after = fits.system_fits(kb, "Mine")[("Mine", "lus", "write")]
        assert after.n_runs == 11 and gone[0]["id"] not in after.run_ids


def test_a_changed_center_refits(kb_path):
    # the OST count and default stripe count enter the fit (more stripes than OSTs are capped, the default is
    # what a run without a stripe count had): fits made for 8 OSTs must NOT serve a center that says 4
    from ioadvisor.model.types import Center, FileSystem
    fits._CACHE.clear()
    with KB.open(kb_path) as kb:
        kb.add_runs(_sweep("Site"), source="a", source_hash="a", fmt="csv", importer="test/1")
        eight = Center(name="Site", filesystems=[FileSystem(name="lus", type="lustre", ost_count=8)])
        four = Center(name="Site", filesystems=[FileSystem(name="lus", type="lustre", ost_count=4)])
        a = fits.system_fits(kb, "Site", eight)
        b = fits.system_fits(kb, "Site", four)
        assert fits.system_fits(kb, "Site", eight) == a
    fits._CACHE.clear()
    with KB.open(kb_path) as kb:
        c = fits.system_fits(kb, "Site", eight)
    assert a != b and c == a


def test_a_stored_evidence_index_is_decoded_group_by_group_and_one_stored_before_still_serves(kb_path):
    """A cold advice reads the stored evidence index of the system: each group's runs and each peak's points are
    decoded when first asked for (an advice asks for its op's), and an index stored in a form before (each peak's
    points a list; also each group's runs, under the key without the form) serves as it did instead of being
    rebuilt from the runs."""
    import json

    from ioadvisor.kb import fits as kb_fits
    from ioadvisor.predict.evidence import Evidence
    with KB.open(kb_path) as kb:
        kb.add_runs([_run(100.0 + i) for i in range(3)], source="a", source_hash="a", fmt="csv", importer="test/1")
        built = fits.system_evidence(kb, "HA8000")
        stored = kb_fits.load_derived(kb, "evidence", "HA8000")
    assert stored is not None and json.loads(stored[0])[-1] == fits.EVIDENCE_FORM
    groups = [tuple(k) for k, _ in json.loads(stored[1])["by"]]
    assert len(groups) >= 2 and {k[1] for k in groups} >= {"read", "write"}
    read = Evidence.from_json(json.loads(stored[1]))
    write = next(k for k in groups if k[1] == "write")
    assert read.measured(*write) and read.modes(write[0], "write", write[4]) == built.modes(write[0], "write", write[4])
    # what must NOT happen: the other op's groups decoded for a question about writes
    assert all(isinstance(read._by[k], str) for k in groups if k[1] != "write")
    assert {k: read._group(k) for k in groups} == {k: built._group(k) for k in groups}
    # nor the other op's peak points for the peak of writes (most of the numbers of a large system's index)
    peaks = [tuple(k) for k, _ in json.loads(stored[1])["peak"]]
    assert {k[1] for k in peaks} >= {"read", "write"}
    assert [read.measured_peak(*k, 4.0) for k in peaks if k[1] == "write"] == [
        built.measured_peak(*k, 4.0) for k in peaks if k[1] == "write"]
    assert all(isinstance(read._peak[k], str) for k in peaks if k[1] != "write")
    assert {k: read.measured_peak(*k, 8.0) for k in peaks} == {k: built.measured_peak(*k, 8.0) for k in peaks}
    sig = json.loads(stored[0])[:-1]
    # the form just before: groups as text, each peak's points a list
    before = {**json.loads(stored[1]), "peak": [[list(k), [list(x) for x in built._peak_points(k)]] for k in peaks]}
    fits._EVIDENCE.clear()
    with KB.open(kb_path) as kb:
        kb_fits.store_derived(kb, "evidence", "HA8000", json.dumps([*sig, "groups as text"]), json.dumps(before))
        again = fits._load_evidence(kb, "HA8000", tuple(sig))
    assert again is not None and {k: again.measured_peak(*k, 8.0) for k in peaks} == {
        k: built.measured_peak(*k, 8.0) for k in peaks}
    # the form before that: the same index, each group's runs a list, keyed by the signature alone
    old = {**before, "by": [[list(k), [list(o) for o in built._group(k)]] for k in groups]}
    fits._EVIDENCE.clear()                                # another process, of the version before
    with KB.open(kb_path) as kb:
        kb_fits.store_derived(kb, "evidence", "HA8000", json.dumps(sig), json.dumps(old))
        again = fits._load_evidence(kb, "HA8000", tuple(sig))     # None: not served, rebuilt from the runs
    assert again is not None and {k: again._group(k) for k in groups} == {k: built._group(k) for k in groups}


def test_stored_fits_are_decoded_fit_by_fit_and_those_stored_before_still_serve(kb_path):
    """A cold advice reads the system's stored fits: each is decoded when first asked for (an advice asks for its
    op's), and fits stored in the form before (one list of every fit) serve as they did instead of being made
    again."""
    import json

    from ioadvisor.kb import fits as kb_fits
    fits._CACHE.clear()
    with KB.open(kb_path) as kb:
        kb.add_runs([_run(100.0 + i) for i in range(3)], source="a", source_hash="a", fmt="csv", importer="test/1")
        made = dict(fits.system_fits(kb, "HA8000"))
        stored = kb_fits.load_derived(kb, "fits", "HA8000")
    assert stored is not None and json.loads(stored[0])[-1] == fits.FITS_FORM
    write = next(k for k in made if k[2] == "write")
    assert len(made) >= 2
    fits._CACHE.clear()                                   # another process
    with KB.open(kb_path) as kb:
        read = fits.system_fits(kb, "HA8000")
    assert isinstance(read, fits.StoredFits) and read.get(write) == made[write] and read.get(("x", None, "y")) is None
    # what must NOT happen: the other ops' fits decoded for a question about writes
    assert all(isinstance(read._fits[k], str) for k in made if k != write)
    assert dict(read) == made and list(read) == list(made)
    # the form before: every fit in one list
    sig = json.loads(stored[0])[:-1]
    fits._CACHE.clear()
    with KB.open(kb_path) as kb:
        kb_fits.store_derived(kb, "fits", "HA8000", json.dumps([*sig, fits.FITS_FORM_BEFORE]),
                              json.dumps(fits._fits_to_rows(made)))
        before = fits._load_table(kb, "HA8000", tuple(sig))
    assert before is not None and dict(before) == made


def test_stored_fits_show_the_same_evidence_as_fits_made_afresh(tmp_path):
    """Must NOT happen: the runs an advice shows as its evidence depending on whether its fits were made in this
    process or read back from the KB. The fit rests on 108 runs (6 node counts x 9 stripe counts x 2), stored in
    node-count order, so that the runs at 16 and 32 nodes, those near a 32-node job, are rows 73-108: a stored fit
    that kept only its first 40 run ids (as it once did) could show none of them."""
    from ioadvisor.advise import advise
    from ioadvisor.center import load_center
    from ioadvisor.cli.advise import advice_json
    from ioadvisor.model.types import Workload
    from test_advise_evidence import CLIFF_SITE, cliff_runs

    site = tmp_path / "cliff.toml"
    site.write_text(CLIFF_SITE)
    center = load_center(site)
    w = Workload(nodes=32, ranks_per_node=16, bytes_per_rank=1 << 30, api="mpiio", layout="shared",
                 access_size=16 << 20)
    fits._CACHE.clear(), fits._EVIDENCE.clear()
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        kb.add_runs(cliff_runs(nodes=(1, 2, 4, 8, 16, 32)), source="s", source_hash="s", fmt="csv",
                    importer="test/1")
        fresh = advice_json(advise(w, kb, center))
    fits._CACHE.clear(), fits._EVIDENCE.clear()          # another process: the fits come from the KB
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        assert kb.conn.execute("SELECT count(*) FROM advise_fits").fetchone()[0] == 1
        stored = advice_json(advise(w, kb, center))
    shown = [e["run_id"] for e in fresh["recommendation"]["evidence"] if e.get("run_id")]
    assert shown, "the recommendation shows measured runs"
    assert stored == fresh
