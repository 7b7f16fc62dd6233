"""Property-based tests (hypothesis): random and hostile values through the importers, sizes, job records,
center files and wrapped job scripts. For every input: either success or a refusal the CLI turns into exit 2
(ImportFormatError, UsageError, ConfigError), never another exception (a traceback); never a change to the KB
on a refused import; never execution of injected text (a marker file the text would create must not exist)."""
from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ioadvisor.errors import ConfigError, ImportFormatError, UsageError
from ioadvisor.importers import ImportContext
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB
from ioadvisor.model.units import parse_size
from ioadvisor.model.validate import check_run

REFUSALS = (ImportFormatError, UsageError, ConfigError)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
COLS = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
        "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes,value_min,value_max,kind").split(",")
GOOD = "s1,sysA,lus,4,write,POSIX,fpp,,1,4,1048576,1073741824,1,1048576,100.5,MiB/s,,,,".split(",")

# what a hostile or careless file might hold in a cell
HOSTILE = st.one_of(
    st.sampled_from(["inf", "-inf", "nan", "1e400", "1e20", "1e300", str(2**64), "-5", "-1", "0", "1e-320",
                     "explode", "MPI-IO", "lots", "true", "", " ", "\ufeff", "%", "_", "[red]x[/red]", ":100:",
                     "a\nb", "a\rb", "\x00", "\x1b[2J", "$(touch {m})", "`touch {m}`", ";touch {m}", "\u2028"]),
    st.integers(min_value=-2**70, max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=40),
)
MARKER_TEXT = "{m}"


def _csv_cell(v: str) -> str:
    return '"' + v.replace('"', '""') + '"'


def _dump(kb: KB) -> list[str]:
    return list(kb.conn.iterdump())


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    # module scope comes before the per-test isolated home: give the KB (and its reference cache) its own here
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("prop-cache")))
        store = KB.open(tmp_path_factory.mktemp("prop") / "kb.sqlite")
    yield store
    store.close()


@SETTINGS
@given(changes=st.dictionaries(st.sampled_from(COLS), HOSTILE, min_size=1, max_size=4))
def test_csv_import_succeeds_or_refuses_and_the_kb_holds_only_valid_runs(kb, tmp_path_factory, changes):
    row = dict(zip(COLS, GOOD)) | {k: v.replace(MARKER_TEXT, "/nonexistent/m") for k, v in changes.items()}
    f = tmp_path_factory.mktemp("csv") / "in.csv"
    f.write_text(",".join(COLS) + "\n" + ",".join(_csv_cell(row[c]) for c in COLS) + "\n", encoding="utf-8",
                 errors="surrogatepass")
    before = _dump(kb)
    try:
        res = import_file(kb, f)
    except REFUSALS:
        event("refused")
        assert _dump(kb) == before          # refused: not one row, not one source
        return
    event("imported")
    # added, a copy of a run already there, or (the same bytes as an earlier example) the same file again
    assert res.runs + res.duplicates == 1 or (res.skipped and res.runs == 0)
    for run in kb.runs():
        check_run(run)                      # everything stored passes the gate again
        assert math.isfinite(run.value) and 0 <= run.value <= 1e12


JSON = st.recursive(st.none() | st.booleans() | st.integers(min_value=-2**80, max_value=2**80) |
                    st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                    max_leaves=8)


@SETTINGS
@given(top=st.dictionaries(st.sampled_from(["job_id", "host", "start", "end", "exit_code", "staged_out_bytes",
                                            "stage_out_seconds"]), JSON, max_size=3),
       settings_=st.dictionaries(st.sampled_from(["tier", "hints", "stripe_count", "stripe_size"]), JSON, max_size=3))
def test_job_records_parse_or_refuse(top, settings_):
    from ioadvisor.importers.jobrecord import parse
    d = {"job_id": "11", "host": "n1", "start": 100, "end": 110, "exit_code": 0, "staged_out_bytes": 10 << 20,
         "stage_out_seconds": 1, "settings": {"tier": {"name": "beeond"}, "hints": {}, "stripe_count": 4}}
    d.update(top)
    d["settings"].update(settings_)
    try:
        runs = parse(json.dumps(d).encode(), ImportContext(source="r.json", system="TSUBAME3.0"))
    except REFUSALS:
        return
    for r in runs:
        check_run(r)
        assert r.value <= 1e10


@SETTINGS
@given(text=st.one_of(HOSTILE, st.tuples(st.floats(allow_nan=True), st.sampled_from(["", "k", "MiB", "GiB", "PiB",
                                                                                    "GB", "x"])).map(lambda t: f"{t[0]}{t[1]}")))
def test_sizes_are_64_bit_integers_or_refused(text):
    try:
        n = parse_size(text)
    except UsageError:
        return
    assert isinstance(n, int) and 0 <= n < 2**63


def _center_toml(name: str, request: str, mount: str) -> str:
    q = json.dumps   # a JSON string is a TOML basic string (same escapes)
    return (f'name = "propcenter"\nmpi = "mpich"\n[[filesystems]]\nname = "scratch"\ntype = "beegfs"\n'
            f'striping = "none"\npersistent = false\n[[tiers]]\nname = {q(name)}\nfilesystem = "scratch"\n'
            f'kind = "per-job"\nrequest = {q(request)}\nmount = {q(mount)}\nstage = true\n')


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=HOSTILE, request=HOSTILE.map(lambda s: "--constraint=" + s), mount=HOSTILE.map(lambda s: "/scratch/" + s),
       outdir=HOSTILE, hint=HOSTILE)
@example(name="t", request="--constraint=BEEOND", mount="/scratch/$SLURM_JOB_ID", outdir="$(touch {m})",
         hint="enable")
@example(name="a;touch {m}", request="--constraint=A;touch {m}", mount="/scratch/`touch {m}`",
         outdir="x'; touch {m}; '", hint="enable")
def test_wrapped_scripts_never_run_injected_text(tmp_path_factory, name, request, mount, outdir, hint):
    from ioadvisor.center import load_center
    from ioadvisor.slurm.submit import Explicit, wrap_script
    d = tmp_path_factory.mktemp("wrap")
    marker = d / "pwned"
    sub = lambda s: s.replace(MARKER_TEXT, str(marker))  # noqa: E731
    cfile = d / "center.toml"
    cfile.write_text(_center_toml(sub(name), sub(request), sub(mount)), encoding="utf-8", errors="surrogatepass")
    script = "#!/bin/bash\n#SBATCH -N 1\necho user-ran\n"
    try:
        center = load_center(cfile)
        tier = center.tiers[0].name
        w = wrap_script(script, Explicit(tier=tier, outdir=sub(outdir) or None, hints={"romio_cb_write": sub(hint)}),
                        center=center, path="job.sh", strict=True)
    except REFUSALS:
        event("refused")
        return
    event("wrapped and run")
    out = d / "job.sh"
    out.write_text(w.text)
    env = {"PATH": os.environ["PATH"], "HOME": str(d), "TMPDIR": str(d)}
    p = subprocess.run(["bash", str(out)], cwd=d, env=env, capture_output=True, text=True, timeout=60)
    assert "user-ran" in p.stdout, p.stderr
    assert not marker.exists()
