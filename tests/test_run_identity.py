"""Run ids follow the content, and must not change when the code that computes them gets faster: ids of the
reference data and the sample outputs as recorded in tests/data/ids/run_ids.tsv (written by the JSON definition
of the content key), the fast content key byte for byte against that definition on random and hostile runs, and
the quick paths of building and checking a run against the slow ones they stand in for."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ioadvisor.errors import UsageError
from ioadvisor.frozen import from_dict, replace
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB
from ioadvisor.model.run import IDENTITY_FIELDS, Provenance, Run, _content_key_json, content_key, run_id
from ioadvisor.model.validate import INT_RANGES, check_int, check_run

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "data" / "ids" / "run_ids.tsv"


def _recorded() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in RECORDED.read_text().splitlines():
        path, rid = line.split("\t")
        out.setdefault(path, []).append(rid)
    return out


def test_ids_of_reference_data_samples_and_hostile_rows_are_those_recorded():
    recorded = _recorded()
    # every kind of source is covered: the reference CSVs, IOR/mdtest/fio outputs, unicode, quotes and twins
    assert len(recorded) == 16 and sum(map(len, recorded.values())) == 120
    for path, ids in recorded.items():
        with KB.open(":memory:", reference=False) as kb:
            import_file(kb, ROOT / path)
            got = [r[0] for r in kb.conn.execute("SELECT id FROM runs ORDER BY rowid")]
        assert got == ids, path
    # the shipped reference KB holds the same ids
    with KB.open(":memory:") as kb:
        ref = {r[0] for r in kb.conn.execute("SELECT id FROM ref.runs")}
    assert ref == {i for p, ids in recorded.items() if p.startswith("data/reference/") for i in ids}


def test_twins_in_one_file_get_occurrences_and_other_content_other_ids():
    ids = _recorded()["tests/data/ids/crafted.csv"]
    # rows 2 and 3 differ only in their notes (not part of a run's identity): occurrences 0 and 1, two runs
    assert len(set(ids)) == len(ids) == 6
    with KB.open(":memory:", reference=False) as kb:
        import_file(kb, ROOT / "tests/data/ids/crafted.csv")
        runs = kb.runs()
    key = content_key(runs[1])
    assert content_key(runs[2]) == key and [runs[1].id, runs[2].id] == [run_id(key, 0), run_id(key, 1)]
    # what must not happen: a value changed in its 11th digit is a different measurement
    assert run_id(content_key(replace(runs[1], value=runs[1].value * (1 + 1e-9)))) != runs[1].id


TEXT = st.one_of(st.text(max_size=30), st.sampled_from(['"', "\\", "\t\n\r", "\x00\x1f\x7f", "\u2028", "é系", "\ud800"]))
ANY = st.one_of(st.none(), TEXT, st.integers(min_value=-2**70, max_value=2**70), st.booleans(),
                st.floats(allow_nan=True, allow_infinity=True))
HINTS = st.one_of(st.dictionaries(TEXT, TEXT, max_size=4),
                  st.dictionaries(st.one_of(TEXT, st.integers()), st.one_of(TEXT, st.integers()), max_size=3))


@settings(max_examples=300, deadline=None)
@given(fields=st.fixed_dictionaries({}, optional={f: ANY for f in IDENTITY_FIELDS if f not in ("hints", "unit")}),
       hints=HINTS, unit=TEXT, value=st.floats(allow_nan=True, allow_infinity=True),
       prov=st.fixed_dictionaries({}, optional={f: ANY for f in ("kind", "date", "job_id", "citation")}))
def test_the_fast_content_key_is_the_json_definition_byte_for_byte(fields, hints, unit, value, prov):
    # unchecked runs on purpose (a row read back by a migration is not checked first): any type in any field
    run = Run(system=fields.pop("system", "s") or "s", op=fields.pop("op", "write") or "write", value=value,
              unit=unit, hints=hints, provenance=Provenance(**prov), **fields)
    assert _outcome(content_key, run) == _outcome(_content_key_json, run)


def _outcome(fn, run):
    try:
        return fn(run)
    except TypeError as e:      # hints whose keys cannot be sorted together: the definition fails, so must we
        return type(e)


@settings(max_examples=200, deadline=None)
@given(kw=st.fixed_dictionaries({"system": TEXT, "op": TEXT, "value": st.floats(), "unit": TEXT},
                                optional={"nodes": st.integers(), "hints": st.dictionaries(TEXT, TEXT, max_size=2),
                                          "flags": st.tuples(TEXT), "notes": TEXT}))
def test_a_run_built_without_init_is_the_run_init_builds(kw):
    fast, slow = from_dict(Run, dict(kw)), Run(**kw)
    assert fast == slow and list(vars(fast)) == list(vars(slow))
    # defaults made per instance, as __init__ makes them: no two runs share a hints dict
    assert from_dict(Run, dict(kw)).hints is not fast.hints or "hints" in kw


def test_building_a_run_with_an_unknown_or_missing_field_fails_as_init_does():
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        from_dict(Run, {"system": "s", "op": "write", "value": 1.0, "unit": "MiB/s", "bogus": 1})
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'unit'"):
        from_dict(Run, {"system": "s", "op": "write", "value": 1.0})


OK = Run(system="s", op="write", value=1.0, unit="MiB/s")


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(sorted(INT_RANGES)),
       v=st.one_of(st.integers(min_value=-2**64, max_value=2**64), st.booleans(), st.floats(), TEXT,
                   st.sampled_from([-2, -1, 0, 64_000, 64_001, 1_000_000, 1_000_001, (1 << 63) - 1, 1 << 63]),
                   st.integers(min_value=-3, max_value=3).map(lambda i: type("Sub", (int,), {})(i))))
def test_check_run_refuses_an_integer_setting_exactly_when_check_int_does(field, v):
    try:
        check_int(v, field)
        expected = None
    except UsageError as e:
        expected = str(e)
    try:
        check_run(replace(OK, **{field: v}))
        got = None
    except UsageError as e:
        got = str(e)
    assert got == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=20))
def test_an_import_batchs_first_ids_are_run_id_of_each_key(keys):
    """`first_ids` writes `run_id`'s hashing out again for speed (an import makes a million ids). Must NOT happen:
    an id an import stores that `run_id` would not give for the same content (the same measurement imported
    again, or by another road, would not be found as the same run)."""
    from ioadvisor.model.run import first_ids, run_id
    assert first_ids(keys) == [run_id(k) for k in keys]
