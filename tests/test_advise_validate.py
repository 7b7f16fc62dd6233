"""Leave-one-out validation of the model (kb validate)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ioadvisor.advise.validate import validate
from ioadvisor.kb import KB, RunFilter
from ioadvisor.model.run import make_run

EXE = Path(sys.executable).parent / "ioadvise"


def test_validate_exact_on_a_model_shaped_system(kb_path):
    runs = [make_run(system="Toy", filesystem="fs", fs_type="lustre", ost_count=16, op="write", layout="shared",
                     nodes=1, ranks=1, stripe_count=s, value=min(100.0 * s, 400.0), unit="MiB/s")
            for s in (1, 2, 3, 4, 6, 8)]
    with KB.open(kb_path) as kb:
        kb.add_runs(runs, source="toy", source_hash="toy", fmt="csv", importer="test/1")
        rep = validate(kb, "Toy")
    s = rep["systems"]["Toy"]
    assert s["n"] == 6
    assert s["median_abs_error"] < 0.01          # every point is predicted by the others
    assert s["median_regret"] == 1.0 and s["regret_cases"] == 6


def test_validate_cli_on_reference_data():
    p = subprocess.run([str(EXE), "kb", "validate", "--json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert {"HA8000", "PixStor-NVMe"} <= set(rep["systems"])
    assert rep["overall"]["n"] > 50 and 0 <= rep["overall"]["median_abs_error"]
    assert rep["systems"]["HA8000"]["median_regret"] >= 1.0


def test_validate_splits_errors_by_measured_client_counts(kb_path):
    # bandwidth grows with clients up to 400 MiB/s; the runs at 1 and 8 clients are outside what the others measured
    runs = [make_run(system="Toy", filesystem="fs", fs_type="lustre", ost_count=16, op="write", layout="fpp",
                     nodes=n, ranks=n, stripe_count=1, value=min(100.0 * n, 400.0), unit="MiB/s")
            for n in (1, 2, 3, 4, 8)]
    with KB.open(kb_path) as kb:
        kb.add_runs(runs, source="toy", source_hash="toy", fmt="csv", importer="test/1")
        s = validate(kb, "Toy")["systems"]["Toy"]
    inside, outside = s["within_measured_clients"], s["extrapolated_clients"]
    assert (inside["n"], outside["n"]) == (3, 2)
    assert inside["median_abs_error"] < 0.01                   # 2, 3 and 4 clients lie between measured runs
    assert outside["median_abs_error"] > inside["median_abs_error"]


def test_reference_split_adds_up():
    p = subprocess.run([str(EXE), "kb", "validate", "--json"], capture_output=True, text=True, timeout=60)
    rep = json.loads(p.stdout)
    for s in [*rep["systems"].values(), rep["overall"]]:
        assert s["within_measured_clients"]["n"] + s["extrapolated_clients"]["n"] == s["n"]
    # measured on the reference data: 14.1% within measured client counts (26 runs), 87% extrapolated (50 runs)
    assert rep["overall"]["within_measured_clients"]["median_abs_error"] < 0.2


def test_production_observations_are_neither_fitted_nor_validated(kb_path):
    from ioadvisor.advise.fits import load_system_runs
    from ioadvisor.model.run import Provenance
    runs = [make_run(system="Toy", filesystem="fs", fs_type="lustre", ost_count=16, op="write", layout="shared",
                     nodes=1, ranks=1, stripe_count=s, value=min(100.0 * s, 400.0), unit="MiB/s")
            for s in (1, 2, 4)]
    seen = make_run(system="Toy", filesystem="fs", fs_type="lustre", ost_count=16, op="write", layout="shared",
                    nodes=1, ranks=1, stripe_count=4, value=5.0, unit="MiB/s",
                    provenance=Provenance(source="job.darshan", kind="production"))
    with KB.open(kb_path) as kb:
        kb.add_runs(runs, source="toy", source_hash="toy", fmt="csv", importer="test/1")
        kb.add_runs([seen], source="job.darshan", source_hash="job", fmt="darshan", importer="test/1")
        assert len(kb.runs(RunFilter(system="Toy"))) == 4
        assert {r.value for r in load_system_runs(kb, "Toy")} == {100.0, 200.0, 400.0}
        assert validate(kb, "Toy")["systems"]["Toy"]["n"] == 3


def test_lone_runs_are_counted_as_not_predictable_per_system(kb_path):
    # one write run and no other: left out, no model of writes remains, and the advice engine gives no number
    runs = [make_run(system="Toy", filesystem="fs", fs_type="lustre", ost_count=16, op="read", layout="shared",
                     nodes=1, ranks=1, stripe_count=s, value=min(100.0 * s, 400.0), unit="MiB/s") for s in (1, 2, 4)]
    runs.append(make_run(system="Toy", filesystem="fs", fs_type="lustre", ost_count=16, op="write", layout="shared",
                         nodes=1, ranks=1, stripe_count=1, value=90.0, unit="MiB/s"))
    with KB.open(kb_path) as kb:
        kb.add_runs(runs, source="toy", source_hash="toy", fmt="csv", importer="test/1")
        rep = validate(kb, "Toy")
    s = rep["systems"]["Toy"]
    assert s["n"] == 3 and s["not_predictable"] == 1
    assert rep["overall"]["not_predictable"] == rep["skipped_runs"] == 1


def test_left_out_run_is_predicted_from_the_other_runs_of_its_system_only(kb_path):
    # file_create measured at one rank only: left out, its pair at 400 ranks is predicted with the saturation
    # point of file_stat (measured at 1 and 400 ranks); no number of the left-out run enters its prediction
    def meta(op, ranks, value):
        return make_run(system="Toy", filesystem="fs", fs_type="lustre", op=op, layout="fpp", nodes=ranks,
                        ranks=ranks, stripe_count=1, value=value, unit="ops/s")
    runs = [meta("file_stat", 1, 100.0), meta("file_stat", 400, 10000.0),
            meta("dir_stat", 1, 200.0), meta("dir_stat", 400, 20000.0),
            meta("file_create", 1, 50.0), meta("file_create", 400, 5000.0)]
    with KB.open(kb_path) as kb:
        kb.add_runs(runs, source="toy", source_hash="toy", fmt="csv", importer="test/1")
        s = validate(kb, "Toy")["systems"]["Toy"]
    assert s["n"] == 6 and s["not_predictable"] == 0
    assert s["median_abs_error"] < 0.01


def test_reference_error_regression_guard():
    with KB.open(None, create=False) as kb:
        rep = validate(kb)
    # measured on the reference data: overall median 28.7% (76 runs), p90 88.3%, 6 runs not predictable
    # (Dell 2.1 30.8%, Dell 2.3 44.3%, HA8000 41.8%, PixStor 11.7%); before the model borrowed saturation points
    # from sibling ops (and was validated like the advice engine predicts) it was 46.2% / 106.8%
    assert rep["overall"]["median_abs_error"] < 0.30
    assert rep["overall"]["p90_abs_error"] < 0.92
    assert rep["systems"]["Dell-EE-Lustre-2.1"]["median_abs_error"] < 0.33
    assert rep["overall"]["median_regret"] <= 1.05
    assert rep["overall"]["not_predictable"] == 6
    assert rep["systems"]["PixStor-NVMe"]["median_abs_error"] < 0.13
    assert rep["systems"]["Dell-EE-Lustre-2.3"]["median_abs_error"] < 0.46


def test_validate_table_shows_the_split_and_the_unpredictable_runs():
    import os
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.run([str(EXE), "kb", "validate"], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    rep = json.loads(subprocess.run([str(EXE), "kb", "validate", "--json"], capture_output=True, text=True,
                                    timeout=60).stdout)
    row = next(line for line in p.stdout.splitlines() if line.startswith("│ overall"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    o = rep["overall"]
    assert cells[1] == str(o["n"]) and cells[6] == str(o["not_predictable"])
    assert cells[4] == f"{100 * o['within_measured_clients']['median_abs_error']:.1f}% ({o['within_measured_clients']['n']})"
