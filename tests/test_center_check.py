"""`ioadvise center check` and docs/center.md: malformed files are rejected naming the key, shipped files
and the documented example pass, and the key reference in the docs is the loader's own table."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ioadvisor.center import available_centers
from ioadvisor.center.schema import KEYS, reference_table

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "center.md"
GOOD = """name = "c"
mpi = "mpich"
node_memory = "64GiB"

[[filesystems]]
name = "lustre"
type = "lustre"
mount = "/lustre"
ost_count = 8
default_stripe_size = "1MiB"
rated_write_bandwidth = "10GB/s"

[[tiers]]
name = "nvme"
filesystem = "lustre"
request = "--constraint=BEEOND"
mount = "/mnt/$SLURM_JOB_ID"
"""


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", "from ioadvisor.cli import main; main()", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=60)


def _example() -> str:
    return re.search(r"```toml\n(.*?)```", DOC.read_text(), re.S).group(1)


# (replace this line of GOOD, by this text) -> the line number and key the one-line error must name
CASES = [
    ('mpi = "mpich"', 'mpi = "lam"', 2, "mpi must be one of mpich, openmpi, cray, intel"),
    ('mpi = "mpich"', 'mpi_version = "four"', 2, "mpi_version is not a version"),
    ('node_memory = "64GiB"', 'node_memory = "lots"', 3, "node_memory is not a size"),
    ('node_memory = "64GiB"', 'nodes_memory = "64GiB"', 3, "unknown key 'nodes_memory'"),
    ('node_memory = "64GiB"', 'ranks_per_node = 0', 3, "ranks_per_node must be at least 1, got 0"),
    ('node_memory = "64GiB"', 'ranks_per_node = "all"', 3, "ranks_per_node must be int"),
    ('ost_count = 8', 'ost_count = "8"', 9, "filesystems[0].ost_count must be int"),
    ('ost_count = 8', 'ost_count = 0', 9, "filesystems[0].ost_count must be positive"),
    ('ost_count = 8', 'ost_count = 8\ndefault_stripe_count = 9', 10,
     "filesystems[0].default_stripe_count 9 is more than ost_count 8"),
    # 1000000 = 15 x 65536 + 16960: not a multiple of 64 KiB, which lfs setstripe refuses
    ('default_stripe_size = "1MiB"', 'default_stripe_size = 1000000', 10,
     "filesystems[0].default_stripe_size 1000000 bytes is not a positive multiple of 64 KiB"),
    ('rated_write_bandwidth = "10GB/s"', 'rated_write_bandwidth = "10GB"', 11,
     "filesystems[0].rated_write_bandwidth is not a bandwidth"),
    ('mount = "/lustre"', 'mount = "lustre"', 8, "filesystems[0].mount must be an absolute path"),
    ('type = "lustre"', 'type = "lustre"\npersistent = "yes"', 8, "filesystems[0].persistent must be bool"),
    ('filesystem = "lustre"', 'filesystem = "gpfs"', 15, "tiers[0].filesystem 'gpfs' is not one of"),
    ('request = "--constraint=BEEOND"', 'request = "--constraint=BEE OND"', 16,
     "tiers[0].request: 'BEE OND' is not a feature list"),
    ('request = "--constraint=BEEOND"', 'request = "please give me nvme"', 16,
     "tiers[0].request 'please give me nvme' is not one sbatch option"),
    ('mount = "/mnt/$SLURM_JOB_ID"', 'mount = "mnt/$SLURM_JOB_ID"', 17, "tiers[0].mount must be an absolute path"),
    ('mount = "/mnt/$SLURM_JOB_ID"', 'mount = "/mnt/$HOSTNAME"', 17, "$HOSTNAME is not allowed"),
    ('name = "nvme"', 'name = "nvme"\nkind = "ramdisk"', 15, "tiers[0].kind must be one of per-job"),
    ('[[tiers]]', '[[filesystems]]\nname = "lustre"\ntype = "nfs"\n[[tiers]]', 14,
     "file system names must be unique, got 'lustre' twice"),
]


def test_good_file_passes():
    assert GOOD.count("\n") == 17
    for old, *_ in CASES:
        assert GOOD.count(old) >= 1, old


@pytest.mark.parametrize("old, new, line, message", CASES, ids=[c[3][:40] for c in CASES])
def test_malformed_file_is_rejected_naming_line_and_key(tmp_path, old, new, line, message):
    p = tmp_path / "center.toml"
    text = GOOD.replace(old, new, 1) if old != 'mount = "/mnt/$SLURM_JOB_ID"' else GOOD.replace(old, new)
    p.write_text(text)
    res = _cli("center", "check", str(p))
    assert res.returncode == 2
    assert res.stdout == ""                                    # no report for a file that does not load
    err = res.stderr.strip()
    assert "\n" not in err and "Traceback" not in err          # one line
    assert err.startswith(f"Error: {p}:{line}: "), err
    assert message in err, err


# values that loaded and then broke a later command (the KB's 64-bit integers, a job script, a terminal):
# `center check` must refuse them as every command does, naming the line
LATER_CASES = [
    ('ost_count = 8', 'ost_count = 99999999999999999999', 9, "filesystems[0].ost_count must be between 1 and"),
    ('ost_count = 8', 'ost_count = 8\ndefault_stripe_count = -99999999999999999999', 10,
     "filesystems[0].default_stripe_count must be -1"),
    ('name = "c"', 'name = "c\\nd"', 1, "name contains a control character"),
    ('name = "lustre"', 'name = "lus\\u001btre"', 6, "filesystems[0].name contains a control character"),
    ('type = "lustre"', 'type = "LUSTRE\\n"', 7, "filesystems[0].type contains a control character"),
    ('mount = "/lustre"', 'mount = "/lustre\\r"', 8, "filesystems[0].mount contains a control character"),
    ('name = "nvme"', 'name = "nv\\nme"', 14, "tiers[0].name contains a control character"),
    ('request = "--constraint=BEEOND"', 'request = "--constraint=BEEOND\\n"', 16,
     "tiers[0].request contains a control character"),
    ('mount = "/mnt/$SLURM_JOB_ID"', 'mount = "/mnt/$SLURM_JOB_ID\\ntouch /tmp/x"', 17,
     "tiers[0].mount contains a control character"),
    ('mount = "/mnt/$SLURM_JOB_ID"', 'mount = "/mnt/$SLURM_JOB_ID\\r"', 17,
     "tiers[0].mount contains a control character"),
    ('mpi = "mpich"', 'mpi = "mpich"\nmpi_version = "4.1\\n"', 3, "mpi_version contains a control character"),
    ('mpi = "mpich"', 'mpi = "mpich"\ntitle = "a \\u001b[2J title"', 3, "title contains a control character"),
]


@pytest.mark.parametrize("old, new, line, message", LATER_CASES, ids=[c[1][:40] for c in LATER_CASES])
def test_what_a_later_command_refuses_is_refused_by_center_check(tmp_path, old, new, line, message):
    test_malformed_file_is_rejected_naming_line_and_key(tmp_path, old, new, line, message)


def test_a_tier_mount_submit_refuses_is_refused_when_the_center_loads(tmp_path):
    """The loader every command uses refuses it (before: `center check` passed, `wrap`/`submit` refused)."""
    p = tmp_path / "center.toml"
    p.write_text(GOOD.replace('mount = "/mnt/$SLURM_JOB_ID"', 'mount = "/mnt/$SLURM_JOB_ID\\rtouch /tmp/x"'))
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nsrun ./app\n")
    for args in (("center", "check", str(p)), ("wrap", str(script), "-o", str(tmp_path / "w.sh"), "--center", str(p), "--tier", "nvme")):
        res = _cli(*args)
        assert res.returncode == 2, res.stderr
        err = res.stderr.strip()
        assert "\n" not in err and "Traceback" not in err and f"{p}:17: tiers[0].mount" in err, err
    assert not (tmp_path / "w.sh").exists()


@pytest.mark.parametrize("nest", ["a = " + "[" * 3000 + "]" * 3000, "a = " + "{b = " * 3000 + "1" + "}" * 3000])
def test_deep_nesting_is_refused_in_one_line(tmp_path, nest):
    p = tmp_path / "center.toml"
    p.write_text(nest + "\n" + GOOD)
    res = _cli("center", "check", str(p))   # before: RecursionError
    assert res.returncode == 2, res.stderr
    err = res.stderr.strip()
    assert "\n" not in err and "Traceback" not in err and str(p) in err, err


def test_shipped_centers_and_the_documented_example_pass(tmp_path):
    example = tmp_path / "example.toml"
    example.write_text(_example())
    files = [str(p) for p in available_centers()] + [str(example)]
    assert len(files) == 6
    res = _cli("center", "check", *files, "--json")
    assert res.returncode == 0, res.stderr
    reports = json.loads(res.stdout)
    assert [r["ok"] for r in reports] == [True] * 6
    ex = reports[-1]
    # the example is complete: no warnings, and the loader read its units as documented
    assert ex["warnings"] == []
    assert ex["node_memory"] == 256 << 30
    lustre = ex["filesystems"][0]
    assert lustre["rated_write_bandwidth"] == 40e9 and lustre["ost_count"] == 48 and lustre["stripable"]
    assert ex["tiers"][0]["mount"] == "/mnt/odfs/$SLURM_JOB_ID"


def test_docs_key_table_is_the_loaders():
    text = DOC.read_text()
    assert reference_table() in text
    # and every key the loader knows appears in it
    for k in KEYS:
        assert f"| `{k.path}` |" in text


def test_warnings_name_what_is_missing(tmp_path):
    p = tmp_path / "bare.toml"
    p.write_text('name = "bare"\n[[filesystems]]\nname = "l"\ntype = "lustre"\n'
                 '[[tiers]]\nname = "t"\nfilesystem = "l"\nrequest = "--constraint=NVME"\n')
    res = _cli("center", "check", str(p))
    assert res.returncode == 0
    out = " ".join(res.stdout.split())
    for what in ("ost_count is not set", "mount is not set", "node_memory is not set",
                 "marks only --constraint=BEEOND"):
        assert what in out


def test_version_and_systems():
    from importlib.metadata import version
    res = _cli("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"ioadvise {version('ioadvisor')}"
    res = _cli("systems", "--json")
    assert res.returncode == 0, res.stderr
    rows = {r["system"]: r for r in json.loads(res.stdout)}
    # every shipped center is listed with its file; reference runs are counted per system
    assert {"HA8000", "TSUBAME3.0", "PixStor-NVMe", "Dell-EE-Lustre-2.1", "Dell-EE-Lustre-2.3"} <= set(rows)
    assert rows["HA8000"]["center_file"].endswith("ha8000.toml")
    assert rows["HA8000"]["reference_runs"] == rows["HA8000"]["runs"] > 0 and rows["HA8000"]["user_runs"] == 0
    assert "lustre" in rows["HA8000"]["filesystems"]
