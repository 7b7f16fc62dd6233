"""Every Darshan log format PyDarshan reads is read by `ioadvise diagnose`: the current format (3.41, every Darshan
release since 3.4.0) from the real logs in ../shared/darshan/ beside the repository, the older ones (3.00-3.21) from
the logs in the darshan wheel. A log is either read (exit 0, with the job PyDarshan's own C backend sees) or refused
with exit 2 and one line naming the file, and only if PyDarshan cannot read it either. A log cut short anywhere is
refused the same way, never read as a smaller job and never a crash of the caller."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

darshan = pytest.importorskip("darshan")
from darshan.backend import cffi_backend as raw  # noqa: E402

from ioadvisor.cli import app  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "darshan"      # CI places a read-only copy of shared/ beside the clone
WHEEL = Path(darshan.__file__).parent
runner = CliRunner()


def _distinct(paths) -> list[Path]:
    out, seen = [], set()
    for p in sorted(paths):
        h = hashlib.sha256(p.read_bytes()).hexdigest()
        if h not in seen:
            seen.add(h)
            out.append(p)
    return out


SHARED_LOGS = sorted(SHARED.glob("*.darshan")) if SHARED.is_dir() else []
WHEEL_LOGS = _distinct(WHEEL.rglob("*.darshan"))
needs_shared = pytest.mark.skipif(not SHARED_LOGS, reason=f"{SHARED} is absent: no Darshan 3.41 logs to read")


def _log_version(path: Path) -> str:
    return path.read_bytes()[:8].rstrip(b"\0").decode()


def pydarshan_view(path: Path) -> dict | str:
    """What PyDarshan makes of the log, in a separate interpreter (its C library may abort on a bad log): the
    job's process count and module names, or the reason it failed."""
    code = ("import json,sys\nfrom darshan.backend import cffi_backend as b\nlog=b.log_open(sys.argv[1])\n"
            "job=b.log_get_job(log)\nmods=list(b.log_get_modules(log))\nb.log_get_name_records(log)\n"
            "print(json.dumps({'nprocs':job['nprocs'],'modules':mods,'log_ver':job['log_ver']}))\n")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "Error" in r.stderr:
        return (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
    return json.loads(r.stdout)


@needs_shared
def test_the_shared_logs_are_in_todays_format():
    assert len(SHARED_LOGS) >= 7
    assert {_log_version(p) for p in SHARED_LOGS} == {"3.41"}
    # and the wheel's are older formats: together the two sets cover 3.41 and what came before
    assert "3.41" not in {_log_version(p) for p in WHEEL_LOGS} and len(WHEEL_LOGS) >= 13


def _read_or_refused_alike(log: Path) -> None:
    r = runner.invoke(app, ["diagnose", str(log), "--json"])
    view = pydarshan_view(log)
    if r.exit_code == 2:
        # refused: one line naming the file, and PyDarshan fails on it too
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and log.name in lines[0] and "Traceback" not in r.output
        assert isinstance(view, str), f"refused a log PyDarshan reads: {lines[0]}"
        return
    assert r.exit_code == 0, r.output
    assert isinstance(view, dict), f"read a log PyDarshan refuses ({view})"
    doc = json.loads(r.stdout)
    assert doc["job"]["nprocs"] == view["nprocs"]
    assert doc["job"]["modules"] == view["modules"] and doc["job"]["log_version"] == view["log_ver"]


@needs_shared
@pytest.mark.parametrize("log", SHARED_LOGS, ids=lambda p: p.name[:32])
def test_every_341_log_is_read_or_refused_as_pydarshan_would(log):
    _read_or_refused_alike(log)


@pytest.mark.parametrize("log", WHEEL_LOGS, ids=lambda p: p.name[:32])
def test_every_wheel_log_is_read_or_refused_as_pydarshan_would(log):
    _read_or_refused_alike(log)


def _cuts(n: int) -> list[int]:
    """Cut lengths: inside every format's fixed header, in the maps, through the records, and the last bytes
    (a log losing only its final bytes loses the end of its last region, which the analysis may not read)."""
    return sorted({20, 200, 400, n // 3, n // 2, 2 * n // 3, n - 100, n - 10, n - 1})


@pytest.mark.parametrize("log", SHARED_LOGS + [WHEEL / "examples" / "example_logs" / "dxt.darshan"],
                         ids=lambda p: p.name[:32])
def test_a_log_cut_anywhere_is_refused_in_one_line(log, tmp_path):
    data = log.read_bytes()
    for n in _cuts(len(data)):
        cut = tmp_path / f"cut{n}.darshan"
        cut.write_bytes(data[:n])
        r = runner.invoke(app, ["diagnose", str(cut)])
        lines = [ln for ln in r.output.splitlines() if ln.strip()]
        assert r.exit_code == 2, f"{n} of {len(data)} bytes: exit {r.exit_code}\n{r.output[:400]}"
        assert len(lines) == 1 and cut.name in lines[0] and "Traceback" not in r.output
        assert "truncated" in lines[0] or "corrupt" in lines[0] or "not a Darshan log" in lines[0]


@needs_shared
def test_the_empty_341_log_is_a_job_without_io():
    (log,) = [p for p in SHARED_LOGS if p.name.startswith("empty_log")]
    r = runner.invoke(app, ["diagnose", str(log), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # no module records: nothing moved, so no rule can have a cause to fire
    assert doc["job"]["modules"] == [] and doc["job"]["files"] == 0 and doc["findings"] == []


def test_the_header_check_is_only_magic_and_size(tmp_path):
    """The caller checks only what holds for every format: the version string and magic number, and a size
    no header of any format is below. A 3.41 header (name map at bytes 32-47, unlike 3.00-3.21) passes it."""
    from ioadvisor.darshanlog.header import MIN_HEADER_BYTES, check_header
    from ioadvisor.errors import ImportFormatError
    for log in SHARED_LOGS + WHEEL_LOGS:
        check_header(log)
    short = tmp_path / "short.darshan"
    short.write_bytes((WHEEL_LOGS[0]).read_bytes()[:MIN_HEADER_BYTES - 1])
    with pytest.raises(ImportFormatError, match="truncated"):
        check_header(short)
    assert raw is not None


# ----------------------------------------------------------------------------------------------------
# the reader's own record access: the same numbers as PyDarshan's, without numpy

def _as_plain(x):
    """PyDarshan's record dicts hold numpy scalars and arrays; the reader's hold Python numbers and lists."""
    if isinstance(x, dict):
        return {k: _as_plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_as_plain(v) for v in x]
    return x.tolist() if hasattr(x, "tolist") else x


@pytest.mark.parametrize("log", SHARED_LOGS + WHEEL_LOGS, ids=lambda p: p.name)
def test_records_read_through_the_c_structs_equal_pydarshans_own(log):
    """Every record of every module the analysis reads, read through the module's C struct (`_records`), holds
    the same id, rank and counter values, name for name, as PyDarshan's `log_get_record(dtype="dict")` of the
    same log: not one counter differs, is renamed or is missing, but for the values no run can produce (a
    negative timer or count), which read as 0 and are listed."""
    import math

    from ioadvisor.darshanlog.derive import _records
    from ioadvisor.darshanlog.summary import READ_MODULES
    h1, h2 = raw.log_open(str(log)), raw.log_open(str(log))
    try:
        mods = [m for m in raw.log_get_modules(h1) if m in READ_MODULES]
        for mod in mods:
            dropped = []
            ours = _records(raw, h1, mod, dropped)
            theirs = []
            while (r := raw.log_get_record(h2, mod, dtype="dict")) is not None:
                theirs.append(_as_plain(r))
            for d in dropped:
                r = next(r for r in theirs if r["id"] == d.record_id and r["rank"] == d.rank
                         and ((r.get("fcounters") or {}).get(d.counter, 0) == d.value
                              or (r.get("counters") or {}).get(d.counter, 0) == d.value))
                where = "fcounters" if d.counter in r["fcounters"] else "counters"
                assert r[where][d.counter] < 0 or not math.isfinite(r[where][d.counter])
                r[where][d.counter] = 0.0 if where == "fcounters" else 0
            if mod == "LUSTRE":
                theirs = [{"id": r["id"], "rank": r["rank"],
                           "components": [{"counters": c["counters"], "pool_name": c["pool_name"],
                                           "ost_ids": c["ost_ids"]} for c in r["components"]]} for r in theirs]
            else:
                theirs = [{k: r[k] for k in ("id", "rank", "counters", "fcounters")} for r in theirs]
            assert ours == theirs, (log.name, mod)
    finally:
        raw.log_close(h1)
        raw.log_close(h2)


@pytest.mark.parametrize("log", SHARED_LOGS + WHEEL_LOGS, ids=lambda p: p.name)
def test_names_and_mounts_read_from_the_library_arrays_equal_pydarshans_own(log):
    """The reader unpacks the library's arrays of name records and mounts itself (`_name_records`, `_mounts`):
    every record name by id, and every mount in order, is what PyDarshan's own functions give for the log."""
    from ioadvisor.darshanlog.derive import _mounts, _name_records
    h1, h2 = raw.log_open(str(log)), raw.log_open(str(log))
    try:
        ours, theirs = _name_records(raw, h1), raw.log_get_name_records(h2)
        assert ours == theirs and list(ours) == list(theirs)
        assert _mounts(raw, h1) == raw.log_get_mounts(h2)
    finally:
        raw.log_close(h1)
        raw.log_close(h2)


@pytest.mark.parametrize("log", SHARED_LOGS + WHEEL_LOGS, ids=lambda p: p.name)
def test_lustre_layouts_read_straight_from_memory_equal_those_of_the_records(log):
    """The reader takes the Lustre layouts straight from each record's memory (`_lustre_layouts`); every layout,
    and the count of records, is what the LUSTRE records `_records` reads (checked above against PyDarshan's own)
    make of them: not one file's stripe size, stripe count, OST list, component count or pool differs."""
    from ioadvisor.darshanlog.derive import _layouts, _lustre_layouts, _records
    h1, h2 = raw.log_open(str(log)), raw.log_open(str(log))
    try:
        if "LUSTRE" not in raw.log_get_modules(h1):
            pytest.skip("no LUSTRE records in this log")
        recs = _records(raw, h1, "LUSTRE")
        layouts, n = _lustre_layouts(raw, h2)
        assert n == len(recs) > 0
        assert layouts == _layouts(recs) and list(layouts) == list(_layouts(recs))
    finally:
        raw.log_close(h1)
        raw.log_close(h2)


def test_records_with_equal_counters_share_one_dict_and_derive_as_copies_would():
    """sample-badost's 2,048 POSIX records (one file per rank) hold one set of counters: they are read into one
    dict, not 2,048 equal ones; and the summary derived from them is the summary of the same records each with a
    copy of its own (nothing the derivation does to one record's counters shows in another's)."""
    from ioadvisor.darshanlog.derive import _derive, _records
    log = next(p for p in WHEEL_LOGS if p.name == "sample-badost.darshan")
    h = raw.log_open(str(log))
    try:
        job, names = raw.log_get_job(h), raw.log_get_name_records(h)
        mods = tuple(raw.log_get_modules(h))
        recs = {"POSIX": _records(raw, h, "POSIX")}
    finally:
        raw.log_close(h)
    assert len(recs["POSIX"]) == 2048 and len({id(r["counters"]) for r in recs["POSIX"]}) == 1
    copies = {"POSIX": [{**r, "counters": dict(r["counters"])} for r in recs["POSIX"]]}
    shared = _derive(str(log), job, "", [], names, mods, recs, False)
    assert shared == _derive(str(log), job, "", [], names, mods, copies, False)
    assert len({id(r["counters"]) for r in recs["POSIX"]}) == 1


def test_the_log_reader_imports_pydarshan_without_numpy_or_pandas():
    """The one-log child imports PyDarshan's C backend with numpy and pandas left out (they are most of its
    start-up time, and the reader never uses them); afterwards both are still importable for real."""
    probe = ("import sys; from ioadvisor.darshanlog.derive import import_backend; b = import_backend(without_numpy=True); "
             "print(b is not None, 'numpy' in sys.modules, 'pandas' in sys.modules); "
             "import numpy; print(hasattr(numpy, 'ndarray'))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False", "False", "True"]


def test_a_lustre_component_claiming_more_stripes_than_lustre_lays_out_has_no_ost_ids_read():
    """A Lustre record's components carry their stripe counts, and the OST list is read as that many ids; the
    library sizes the record's memory by those counts as the log states them, so a log claiming 5,000 stripes
    (more than LOV_MAX_STRIPE_COUNT, 2,000) for an OST list of 2 has ids read from memory the log never filled,
    and a count of 2^40 from past the end. Must NOT happen: an id read for such a component. Here a component of
    5,000 stripes is laid in memory holding 2 ids: the reader refuses it (the record gets no layout, and the
    count is named in the log's note) instead of reading 5,000; a component of 2 stripes is read as its 2 ids."""
    from ioadvisor.darshanlog import derive
    backend = derive.import_backend()
    ffi = backend.ffi
    cnames = tuple(backend.counter_names("LUSTRE_COMP"))
    at = cnames.index("LUSTRE_COMP_STRIPE_COUNT")
    comp = ffi.new("struct darshan_lustre_component[1]")
    ids = ffi.new("int64_t[2]", [7, 3])
    for count, expect in ((2, [7, 3]), (5000, None), (-1, None), (2 ** 40, None)):
        comp[0].counters[at] = count
        addr = lambda p: int(ffi.cast("uintptr_t", p))        # noqa: E731
        if expect is None:
            with pytest.raises(derive._Unlaid) as e:
                derive._components(ffi, 1, addr(comp), addr(ids), cnames)
            assert e.value.args[0] == count
        else:
            (got,) = derive._components(ffi, 1, addr(comp), addr(ids), cnames)
            assert list(got["ost_ids"]) == expect
    s = derive._derive("x.darshan", {"nprocs": 4, "run_time": 1.0}, "", [], {}, ("LUSTRE",), {}, False, (),
                       [derive.Dropped("LUSTRE", "LUSTRE_COMP_STRIPE_COUNT", 5000.0, -1, 42)], {})
    assert any("LUSTRE_COMP_STRIPE_COUNT = 5000" in n and "outside 0-2000" in n for n in s.notes), s.notes
