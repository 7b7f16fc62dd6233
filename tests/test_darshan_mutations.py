"""Property tests: one counter of one record of a real Darshan log set to what no run produces (NaN, an infinity,
a huge or a negative value, any int64), and fields of its job record to any int64, read by `archive scan` and
`diagnose`, as any user can write such a log.

What must not happen: a traceback; a scan that stops (one bad log is at most one failed log, the good logs of its
batch are stored); a number stored in the archive tables that is not finite or outside its column's range; a
NaN or Infinity token, or a number that is not finite, in `diagnose --json`; a negative run time or I/O time in
the archive; a negative time anywhere in `diagnose --json` (the job's run time, every total, per-file and
per-rank time, and a finding's time at stake and expected saving): the reader drops an impossible timer value
(read as 0, named in a note) before any total is made of it."""
from __future__ import annotations

import json
import math
import re
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("darshan")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from typer.testing import CliRunner  # noqa: E402

from ioadvisor.cli import app  # noqa: E402
from tests.darshan_copies import module_layout, wheel_logs, with_counter, with_job  # noqa: E402
from tests.test_archive_impossible import _stored_numbers_in_range  # noqa: E402

runner = CliRunner()
# every (log, module) of the wheel whose records have the library's current layout, with its counter names
TARGETS = [(p, mod, names, fnames) for p in wheel_logs() if p.read_bytes()[:4] in (b"3.10", b"3.21")
           for mod in ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D")
           for found in [module_layout(p, mod)] if found for _, names, fnames in [found]]
HOSTILE_INTS = [-1, -2, -(2 ** 40), -(2 ** 63), 2 ** 62, 3 * 2 ** 61, 2 ** 63 - 1]
HOSTILE_FLOATS = [math.nan, math.inf, -math.inf, -1.0, -2662.75, -1e300, 1e300, 5e-324]
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def mutation(draw) -> tuple[Path, str, str, int | float, int]:
    """(log, module, counter, value, record): an int64 counter gets an int64, a float counter a double."""
    p, mod, names, fnames = draw(st.sampled_from(TARGETS))
    counter = draw(st.sampled_from(names + fnames))
    if counter in names:
        value = draw(st.one_of(st.sampled_from(HOSTILE_INTS), st.integers(-(2 ** 63), 2 ** 63 - 1)))
    else:
        value = draw(st.one_of(st.sampled_from(HOSTILE_FLOATS), st.floats(allow_nan=True, allow_infinity=True)))
    return p, mod, counter, value, draw(st.integers(0, 7))


JOB_VALUES = st.one_of(st.sampled_from([0, -1, 2 ** 31, 2 ** 63 - 1, -(2 ** 63), 10 ** 12, -5]),
                       st.integers(-(2 ** 63), 2 ** 63 - 1))


@st.composite
def job_mutation(draw) -> dict[str, int]:
    """Fields of the job record set to any int64 (most of them impossible: 0 or 2^63 - 1 processes, a run that
    ends before it starts or lasts 31,700 years, user id -5), or none."""
    fields = draw(st.sets(st.sampled_from(["nprocs", "start_time", "end_time", "uid"]), max_size=2))
    return {f: draw(JOB_VALUES) for f in sorted(fields)}


def _write(m: tuple, path: Path, jobid: int, job: dict[str, int] | None = None) -> Path:
    p, mod, counter, value, record = m
    path.write_bytes(with_job(with_counter(p, mod, counter, value, record=record), jobid=jobid, **(job or {})))
    return path


def _numbers(doc, where: str = ""):
    """Every (path, number) of a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _numbers(v, f"{where}.{k}")
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _numbers(v, f"{where}[{i}]")
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield where, doc


def _times(doc) -> list[tuple[str, float]]:
    """Every (path, number) of a `diagnose --json` document that is a duration in seconds: a key ending in `_s` or
    `_time` (the job's start time is a date, not a duration)."""
    return [(k, v) for k, v in _numbers(doc) if re.search(r"(_s|_time)(\[\d+\])?$", k)
            and not k.endswith(".start_time")]


def _strict(text: str):
    def refuse(token: str):
        raise AssertionError(f"{token} in --json")
    return json.loads(text, parse_constant=refuse)


def test_targets_cover_every_module_read():
    """The mutations reach POSIX, MPI-IO and H5F records of several logs (so the property is not vacuous)."""
    assert {mod for _, mod, _, _ in TARGETS} >= {"POSIX", "MPI-IO", "H5F"} and len(TARGETS) >= 10
    assert {mod for _, mod, _ in TIMERS} >= {"POSIX", "MPI-IO"}


@SETTINGS
@given(mutations=st.lists(st.tuples(mutation(), job_mutation()), min_size=3, max_size=8))
def test_archive_scan_of_mutated_counters(tmp_path_factory, mutations):
    """A scan of the mutated logs and one untouched log: exit 0, no traceback; every log is stored (read, or
    failed with a reason) and the untouched one read; every stored number finite and in range."""
    tmp = tmp_path_factory.mktemp("mut")
    arch, kb = tmp / "arch", tmp / "kb.sqlite"
    arch.mkdir()
    (arch / "good.darshan").write_bytes(with_job(TARGETS[0][0].read_bytes(), jobid=1))
    for i, (m, job) in enumerate(mutations):
        _write(m, arch / f"m{i}.darshan", 100 + i, job)
    r = runner.invoke(app, ["archive", "scan", str(arch), "--kb", str(kb), "-j", "1", "--json"])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    doc = _strict(r.stdout)
    db = sqlite3.connect(kb)
    statuses = dict(db.execute("SELECT path, status FROM archive_logs").fetchall())
    # a mutated log may equal another (or the untouched one): one stored log per content, every path seen
    assert db.execute("SELECT count(*) FROM archive_paths").fetchone()[0] == len(mutations) + 1
    assert statuses.get(str(arch / "good.darshan"), "ok") == "ok"
    assert len(doc["failed"]) == doc["added"]["failed"] == sum(s == "failed" for s in statuses.values())
    assert all(f["error"] for f in doc["failed"])
    assert _stored_numbers_in_range(kb) == []


@SETTINGS
@given(m=mutation(), job=job_mutation())
def test_diagnose_of_a_mutated_counter(tmp_path_factory, m, job):
    """diagnose --json: exit 0 with strict JSON whose every number is finite, whose run time is neither negative
    nor above a year and whose process count one job can have, or exit 2 with one line naming the log; never a
    traceback."""
    log = _write(m, tmp_path_factory.mktemp("mut") / "m.darshan", 7, job)
    r = runner.invoke(app, ["diagnose", str(log), "--json"])
    assert r.exit_code in (0, 2) and "Traceback" not in r.output, (m[1:], r.output)
    if r.exit_code == 2:
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: {log}"), r.output
        return
    doc = _strict(r.stdout)
    bad = [(k, v) for k, v in _numbers(doc) if isinstance(v, float) and not math.isfinite(v)]
    assert bad == [], m[1:]
    assert 0 <= doc["job"]["run_time"] <= 366 * 86400 and 1 <= doc["job"]["nprocs"] <= 2 ** 24, (job, doc["job"])
    assert [(k, v) for k, v in _times(doc) if not 0 <= v < math.inf] == [], m[1:]


TIMERS = [(p, mod, [n for n in fnames if "TIME" in n]) for p, mod, _, fnames in TARGETS]
TIMERS = [t for t in TIMERS if t[2]]


@st.composite
def timer_mutation(draw) -> tuple[Path, str, str, float, int]:
    """(log, module, timer, value, record): a time counter (the F_..._TIME fcounters) set to NaN, an infinity,
    a huge or a negative double."""
    p, mod, timers = draw(st.sampled_from(TIMERS))
    value = draw(st.one_of(st.sampled_from(HOSTILE_FLOATS), st.floats(max_value=-1e-300),
                           st.floats(min_value=1e300)))
    return p, mod, draw(st.sampled_from(timers)), value, draw(st.integers(0, 7))


@SETTINGS
@given(m=timer_mutation())
def test_diagnose_reports_no_negative_or_infinite_time_under_a_mutated_timer(tmp_path_factory, m):
    """One timer of one record set to NaN, an infinity, a huge or a negative value: `diagnose --json` exits 0
    and every duration in it (totals per API, per file, per rank and per OST, metadata time, a finding's time at
    stake and its expected saving) is finite and not negative. Before the reader dropped impossible timers, a
    timer of -2662.75 s gave a negative write time, and a NaN timer a NaN total (written as NaN in --json)."""
    log = _write(m, tmp_path_factory.mktemp("tmut") / "t.darshan", 8)
    r = runner.invoke(app, ["diagnose", str(log), "--json"])
    assert r.exit_code == 0 and "Traceback" not in r.output, (m[1:], r.output)
    doc = _strict(r.stdout)
    times = _times(doc)
    assert any(k.startswith(".apis.") for k, _ in times), times         # the property is not vacuous
    assert [(k, v) for k, v in times if not 0 <= v < math.inf] == [], m[1:]
