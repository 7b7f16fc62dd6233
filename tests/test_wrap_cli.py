"""`ioadvise wrap` / `ioadvise submit --dry-run` through the CLI (no Slurm needed)."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from ioadvisor.cli import app
from ioadvisor.slurm.rewrite import BEGIN
from ioadvisor.slurm.submit import scrubbed_env

runner = CliRunner()
SCRIPT = "#!/bin/bash\n#SBATCH -N 4 --ntasks-per-node=8\n#IOADVISE bytes_per_rank=1GiB api=MPIIO layout=shared\nsrun ./app\n"


def _script(tmp_path, text=SCRIPT):
    p = tmp_path / "job.sh"
    p.write_text(text)
    return p


def test_wrap_writes_new_file_and_leaves_script_alone(tmp_path):
    src = _script(tmp_path)
    out = tmp_path / "job.wrapped.sh"
    r = runner.invoke(app, ["wrap", str(src), "-o", str(out), "--hints", "romio_cb_write=enable",
                            "--stripe-count", "4", "--stripe-size", "4MiB", "--mpi", "cray", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["source"] == "explicit" and rep["settings"]["stripe_size"] == 4 << 20
    assert src.read_text() == SCRIPT
    text = out.read_text()
    assert BEGIN in text and "export MPICH_MPIIO_HINTS='*:romio_cb_write=enable'" in text
    assert 'lfs setstripe -c 4 -S 4M "$IOADVISE_DIR"' in text
    assert out.stat().st_mode & 0o111


def test_wrap_refuses_to_overwrite_the_script(tmp_path):
    src = _script(tmp_path)
    r = runner.invoke(app, ["wrap", str(src), "-o", str(src), "--hints", "a=b"])
    assert r.exit_code == 2 and src.read_text() == SCRIPT


def test_wrap_bad_input_is_one_line_exit_2(tmp_path):
    src = _script(tmp_path)
    for args in (["--hints", "novalue"], ["--mpi", "lam"], ["--stripe-size", "huge"], ["--tier", "beeond"],
                 ["--hints", "k=$(id)"]):
        r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), *args])
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output
    r = runner.invoke(app, ["wrap", str(tmp_path / "missing.sh"), "-o", str(tmp_path / "o.sh")])
    assert r.exit_code == 2 and "missing.sh" in r.output


def test_wrap_with_advice_from_a_center(tmp_path):
    src = _script(tmp_path)
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), "--center", "HA8000", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["source"] == "advice"
    assert rep["settings"]["stripe_count"] and rep["settings"]["stripe_count"] > 1   # HA8000 is Lustre


def test_submit_fails_open_when_advice_fails(tmp_path):
    src = _script(tmp_path, "#!/bin/bash\necho no-ioadvise-lines\n")
    r = runner.invoke(app, ["submit", str(src), "--center", "HA8000", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["changed"] is False and rep["source"] == "none"
    assert any("unchanged" in w for w in rep["warnings"])
    r = runner.invoke(app, ["submit", str(src), "--center", "HA8000", "--dry-run", "--strict"])
    assert r.exit_code == 2 and "bytes_per_rank" in r.output


def test_submit_passes_unknown_options_to_sbatch(tmp_path):
    src = _script(tmp_path)
    r = runner.invoke(app, ["submit", str(src), "-N", "2", "--time=5", "-C", "nvme", "--hints", "a=b",
                            "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["sbatch_options"] == ["-N", "2", "--time=5", "-C", "nvme"]


def test_sbatch_environment_is_scrubbed():
    env = scrubbed_env({"SBATCH_CONSTRAINT": "x", "SBATCH_ACCOUNT": "a", "PATH": "/bin"})
    assert env == {"SBATCH_ACCOUNT": "a", "PATH": "/bin"}


def test_cli_constraint_keeps_the_tier_feature():
    from ioadvisor.slurm.submit import merge_cli_constraint
    req = "--constraint=BEEOND"
    assert merge_cli_constraint(["-N", "2", "-C", "nvme"], req) == (["-N", "2", "-C", "nvme&BEEOND"], True)
    assert merge_cli_constraint(["--constraint=a|b"], req) == (["--constraint=a|b&BEEOND"], True)
    assert merge_cli_constraint(["-Cnvme"], req) == (["-Cnvme&BEEOND"], True)
    assert merge_cli_constraint(["-C", "BEEOND"], req) == (["-C", "BEEOND"], False)
    assert merge_cli_constraint(["-N", "2"], req) == (["-N", "2"], False)
    assert merge_cli_constraint(["-C", "x"], "--bb=foo") == (["-C", "x"], False)


def test_submit_merges_tier_into_cli_constraint(tmp_path):
    src = _script(tmp_path, "#!/bin/bash\ntrue\n")
    center = tmp_path / "c.toml"
    center.write_text('name = "c"\n[[filesystems]]\nname = "b"\ntype = "beegfs"\nstriping = "none"\n'
                      '[[tiers]]\nname = "beeond"\nfilesystem = "b"\nrequest = "--constraint=BEEOND"\n'
                      'mount = "/mnt/odfs/$SLURM_JOB_ID"\n')
    r = runner.invoke(app, ["submit", str(src), "--center", str(center), "--tier", "beeond", "-C", "nvme",
                            "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["sbatch_options"] == ["-C", "nvme&BEEOND"]


# --- the workload options of `advise`, the directory it names, and what the striping does not reach ---------

APP = ("#!/bin/bash\n#SBATCH -N 4 --ntasks-per-node=8\n#IOADVISE bytes_per_rank=64MiB api=POSIX layout=fpp\n"
       "mkdir -p \"$SCRATCH/out\"\nsrun ./app --out \"$SCRATCH/out\" --in=/lustre/proj/input.h5\n")


def _advise_json(*args):
    r = runner.invoke(app, ["advise", "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_workload_flags_beat_ioadvise_lines_and_match_advise(tmp_path):
    """`wrap --bytes-per-rank 1GiB --api mpiio --layout shared` advises for the flags, not for the script's
    64MiB POSIX fpp line: its stripe count and hints are those `advise` gives for the same flags (HA8000: a
    shared MPI-IO file is striped over more than one OST; a POSIX file per process would get none)."""
    src = _script(tmp_path, APP)
    flags = ["--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "shared"]
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), "--center", "HA8000", "--json", *flags])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["source"] == "advice"
    assert rep["workload"]["sources"]["layout"] == "--layout" and rep["workload"]["sources"]["api"] == "--api"
    adv = _advise_json("--center", "HA8000", "--script", str(src), *flags)["recommendation"]
    assert adv["layout"] == "shared" and adv["stripe_count"] and adv["stripe_count"] > 1
    assert rep["settings"]["stripe_count"] == adv["stripe_count"]
    assert rep["settings"]["hints"] == {k: str(v) for k, v in adv["hints"].items()}
    for k, v in rep["settings"]["hints"].items():          # every hint the summary prints is explained
        assert any(x.startswith(f"hint {k}={v}: ") for x in rep["summary"]["settings"]), k
    # the same script without the flags is advised as its #IOADVISE line says: not the same job
    plain = _advise_json("--center", "HA8000", "--script", str(src))["recommendation"]
    assert (plain["layout"], plain["api"]) != (adv["layout"], adv["api"])


def test_wrap_needs_no_ioadvise_lines_when_flags_describe_the_job(tmp_path):
    src = _script(tmp_path, "#!/bin/bash\n#SBATCH -N 2 --ntasks-per-node=4\nsrun ./app\n")
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), "--center", "HA8000",
                            "--bytes-per-rank", "2GiB", "--api", "mpiio", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["source"] == "advice"
    r = runner.invoke(app, ["submit", str(src), "--center", "HA8000", "--bytes-per-rank", "2GiB", "--dry-run",
                            "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["source"] == "advice" and rep["sbatch_options"] == []      # not passed on to sbatch


def test_bad_workload_flag_is_one_line_exit_2_and_nothing_written(tmp_path):
    src = _script(tmp_path, APP)
    out = tmp_path / "o.sh"
    for args in (["--api", "fortran"], ["--bytes-per-rank", "lots"], ["--layout", "striped"], ["--op", "append"]):
        r = runner.invoke(app, ["wrap", str(src), "-o", str(out), "--center", "HA8000", *args])
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output and args[0] in r.output and not out.exists()


def test_wrap_stripes_the_directory_advise_names(tmp_path):
    """HA8000's Lustre is mounted at /lustre/$USER: `advise` makes $IOADVISE_DIR there, and so does the wrapped
    script (not below the job's start directory)."""
    src = _script(tmp_path, APP)
    flags = ["--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "shared"]
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), "--center", "HA8000", *flags])
    assert r.exit_code == 0, r.output
    lines = _advise_json("--center", "HA8000", "--script", str(src), *flags)["recommendation"]["commands"]["lines"]
    export = next(ln for ln in lines if ln.startswith("export IOADVISE_DIR="))
    assert export.startswith('export IOADVISE_DIR="/lustre/${USER}/')
    wrapped = [ln.strip() for ln in (tmp_path / "o.sh").read_text().splitlines()]
    assert export in wrapped
    assert "below /lustre/$USER ($IOADVISE_DIR)" in r.output.replace("\n", " ")


def test_advised_directory_that_cannot_be_made_falls_back_to_the_output_directory(tmp_path):
    """A user without /lustre/$USER on this node: the job still gets a job-private $IOADVISE_DIR (below the
    output directory), says so, and its hints file is there."""
    import os
    import subprocess
    from pathlib import Path
    src = _script(tmp_path, "#!/bin/bash\n#SBATCH -N 4 --ntasks-per-node=8\necho \"dir=$IOADVISE_DIR\"\n")
    out = tmp_path / "o.sh"
    (tmp_path / "afile").write_text("")         # below a plain file no directory can be made, not even by root
    shipped = Path(__file__).resolve().parents[1] / "data" / "centers" / "ha8000.toml"
    center = tmp_path / "ha8000.toml"
    center.write_text(shipped.read_text().replace('mount = "/lustre/$USER"', f'mount = "{tmp_path}/afile/$USER"'))
    r = runner.invoke(app, ["wrap", str(src), "-o", str(out), "--center", str(center), "--bytes-per-rank", "1GiB",
                            "--api", "mpiio", "--layout", "shared"])
    assert r.exit_code == 0, r.output
    p = subprocess.run(["bash", str(out)], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ["PATH"], "SLURM_JOB_ID": "77", "USER": "u", "HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert f"dir={tmp_path}/ioadvise-77" in p.stdout
    assert f"cannot create {tmp_path}/afile/u/ioadvise-77; using" in p.stderr
    assert (tmp_path / "ioadvise-77" / "romio-hints").read_text().startswith("striping_factor ")


def test_summary_names_the_scripts_paths_the_striping_does_not_reach(tmp_path):
    src = _script(tmp_path, APP)
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), "--center", "HA8000", "--json",
                            "--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "shared"])
    assert r.exit_code == 0, r.output
    notes = json.loads(r.stdout)["summary"]["not_changed"]
    outside = next(n for n in notes if n.startswith("striping for paths your commands name outside"))
    assert "$SCRATCH/out (line 4)" in outside and "/lustre/proj/input.h5 (line 5)" in outside
    assert "./app" not in outside                        # a program, and relative
    assert any(n.startswith("your commands do not use $IOADVISE_DIR") for n in notes)
    # a script that writes below $IOADVISE_DIR is told nothing of the sort
    src2 = _script(tmp_path, APP.replace('"$SCRATCH/out"', '"$IOADVISE_DIR/out"').replace("=/lustre/proj/input.h5", ""))
    r = runner.invoke(app, ["wrap", str(src2), "-o", str(tmp_path / "o2.sh"), "--center", "HA8000", "--json",
                            "--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout", "shared"])
    notes = json.loads(r.stdout)["summary"]["not_changed"]
    assert not any("outside $IOADVISE_DIR" in n or "do not use $IOADVISE_DIR" in n for n in notes), notes


def test_command_paths_skip_programs_system_dirs_and_the_block():
    from ioadvisor.slurm.rewrite import WrapSettings, command_paths, wrap
    script = ("#!/bin/bash\n#SBATCH -N 1\n# /not/a/command\nsrun -n 4 /home/u/bin/app --out=$WORK/o > /tmp/log 2>&1\n"
              "cd ${SCRATCH}/run && A=1 /usr/bin/env true /data/x\n")
    want = [(4, "$WORK/o"), (4, "/tmp/log"), (5, "${SCRATCH}/run"), (5, "/data/x")]
    assert command_paths(script) == want
    assert command_paths(wrap(script, WrapSettings(stripe_count=4))) == want


def test_stage_in_without_a_staged_tier_is_said_not_silently_dropped(tmp_path):
    """`#IOADVISE stage-in=...` on a job that gets no scratch tier copies nothing: the summary (text and --json)
    says so, naming the items, instead of leaving the user to find "staging: none" in the job's stderr."""
    src = _script(tmp_path, SCRIPT.replace("srun", "#IOADVISE stage-in=input.dat\nsrun"))
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), "--stripe-count", "4", "--json"])
    assert r.exit_code == 0, r.output
    said = [x for x in json.loads(r.stdout)["summary"]["not_changed"] if "stage-in" in x]
    assert said and "input.dat" in said[0] and "no scratch tier" in said[0], said
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o2.sh"), "--stripe-count", "4"])
    assert r.exit_code == 0 and "stage-in input.dat" in r.output, r.output


def test_a_job_without_an_api_is_not_described_as_posix_when_its_hints_are_applied(tmp_path):
    """A script whose description names no API gets MPI-IO hints (wrap renders for MPI-IO then): the summary's job
    line says so ("MPIIO (assumed)"), not "posix", an interface that never reads hints."""
    src = _script(tmp_path, "#!/bin/bash\n#SBATCH -N 2\nsrun ./app\n")
    r = runner.invoke(app, ["wrap", str(src), "-o", str(tmp_path / "o.sh"), "--hints", "romio_cb_write=enable",
                            "--json"])
    assert r.exit_code == 0, r.output
    sm = json.loads(r.stdout)["summary"]
    assert sm["job"].endswith("MPIIO (assumed)") and any("MPI-IO hints" in x for x in sm["settings"]), sm


def _kb_of_runs_only(tmp_path, monkeypatch):
    """A KB holding the benchmark's synthetic systems, of which `synthetic-big` has no center file."""
    from pathlib import Path
    from ioadvisor.ingest import import_file
    from ioadvisor.kb import KB
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import scale_data
    csv = tmp_path / "runs.csv"
    csv.write_text("\n".join([scale_data.HEADER, *scale_data.rows(3000, 7)]) + "\n")
    kb = tmp_path / "kb.sqlite"
    with KB.open(kb, reference=False) as store:
        import_file(store, csv, "csv")
    return kb


def test_submit_advises_for_a_system_the_kb_knows_only_from_its_runs(tmp_path, monkeypatch):
    """A center serving users from its KB (its runs, no center file): `advise --system synthetic-big` answers,
    but `submit --center synthetic-big` said the name was no center and submitted the job with NO settings.
    Must NOT happen: a job submitted unchanged for a system the KB advises on. A name neither a center nor a
    system of the KB still warns that it names no center."""
    from ioadvisor.center import find_center
    kb = _kb_of_runs_only(tmp_path, monkeypatch)
    assert find_center("synthetic-big") is None
    src = _script(tmp_path)
    r = runner.invoke(app, ["submit", str(src), "--center", "synthetic-big", "--kb", str(kb), "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["source"] == "advice" and rep["changed"] and rep["settings"]["stripe_count"], rep
    adv = runner.invoke(app, ["advise", "--system", "synthetic-big", "--kb", str(kb), "-N", "4",
                              "--ranks-per-node", "8", "--bytes-per-rank", "1GiB", "--api", "mpiio", "--layout",
                              "shared", "--json"])
    assert adv.exit_code == 0, adv.output
    assert json.loads(adv.stdout)["recommendation"]["stripe_count"] == rep["settings"]["stripe_count"]
    r = runner.invoke(app, ["submit", str(src), "--center", "nonesuch", "--kb", str(kb), "--dry-run", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["source"] == "none"
    assert "names no center" in r.output


def test_submit_without_a_center_says_nothing_was_advised(tmp_path):
    """No --center and no explicit setting: the summary said `Settings: none` and nothing else, so a user who
    forgot --center could not tell. It must say that no center was given and nothing was advised."""
    r = runner.invoke(app, ["submit", str(_script(tmp_path)), "--dry-run", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert any(w.startswith("no center given") and "nothing was advised" in w for w in rep["warnings"]), rep
