"""Hostile and broken input, one test per kind: each gives exit 2 and one line naming the file (and line)
(or is accepted where it is valid, like a UTF-8 BOM), never a traceback, and a failed import leaves the KB
byte-for-byte as it was. Values that JSON cannot carry never reach `--json` output."""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ioadvisor.cli import app

runner = CliRunner()
HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")
COLS = HEADER.split(",")
GOOD = dict(zip(COLS, "s1,sysA,lus,4,write,POSIX,fpp,,1,4,1048576,1073741824,1,1048576,100.5,MiB/s,".split(",")))
DARSHAN = Path(__import__("darshan").__file__).parent / "examples" / "example_logs" / "example.darshan"


def csv_text(**changes: str) -> str:
    row = {**GOOD, **changes}
    extra = [c for c in row if c not in COLS]
    return (",".join(COLS + extra) + "\n" + GOOD_ROW + "," * len(extra) + "\n"
            + ",".join(row[c] for c in COLS + extra) + "\n")


GOOD_ROW = ",".join(GOOD[c] for c in COLS)


def ioadvise(*args: object):
    res = runner.invoke(app, [str(a) for a in args])
    assert "Traceback" not in res.output, res.output
    return res


def one_error_line(res, *needles: str) -> str:
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def seeded_kb(tmp_path: Path) -> Path:
    kb = tmp_path / "kb.sqlite"
    good = tmp_path / "good.csv"
    good.write_text(HEADER + "\n" + GOOD_ROW + "\n")
    assert ioadvise("kb", "import", good, "--kb", kb).exit_code == 0
    return kb


def digest(path: Path) -> str:
    h = hashlib.sha256()
    for suffix in ("", "-wal"):
        p = Path(str(path) + suffix)
        if p.exists():
            h.update(p.read_bytes())
    return h.hexdigest()


CSV_CASES = {
    "nodes_1e20": dict(nodes="1e20"),
    "nodes_inf": dict(nodes="inf"),
    "ranks_1e300": dict(ranks="1e300"),
    "ranks_nan": dict(ranks="nan"),
    "stripe_size_2_64": dict(stripe_size_bytes=str(2**64)),
    "stripe_count_minus_5": dict(stripe_count="-5"),
    "value_inf": dict(value="inf"),
    "value_1e400": dict(value="1e400"),
    "value_huge_gib": dict(value="1e300", unit="GiB/s"),
    "value_beyond_any_system": dict(value="1e9", unit="TiB/s"),   # 1e15 MiB/s > 1e10 MiB/s
    "op_explode": dict(op="explode"),
    "api_unknown": dict(api="SMOKE"),
    "layout_unknown": dict(layout="diagonal"),
    "kind_unknown": dict(kind="rumour"),
    "min_above_max": dict(value_min="200", value_max="50"),
    "min_above_value": dict(value_min="300"),
    "system_with_escape": dict(system="a\x1b[2Jb"),
    "cell_of_5_mb": dict(notes="x" * (5 << 20)),
}


@pytest.mark.parametrize("case", sorted(CSV_CASES))
def test_bad_csv_value_is_rejected_and_the_kb_is_unchanged(case, seeded_kb, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(csv_text(**CSV_CASES[case]))
    before = digest(seeded_kb)
    res = ioadvise("kb", "import", bad, "--kb", seeded_kb)
    # the bad row is the file's 3rd line; the good row before it must not go in either
    one_error_line(res, "bad.csv:3:")
    assert digest(seeded_kb) == before


def test_csv_with_a_bom_header_is_accepted(tmp_path):
    kb = tmp_path / "kb.sqlite"
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + (HEADER + "\n" + GOOD_ROW + "\n").encode())
    res = ioadvise("kb", "import", bom, "--kb", kb, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)[0]["runs"] == 1


def record(**changes) -> bytes:
    d = {"job_id": "11", "host": "n1", "start": 100, "end": 110, "exit_code": 0, "staged_out_bytes": 10 << 20,
         "stage_out_seconds": 1, "settings": {"tier": {"name": "beeond"}, "hints": {"romio_cb_write": "disable"},
                                               "stripe_count": 4, "stripe_size": 1 << 20}}
    for k, v in changes.items():
        if k in ("hints", "stripe_count", "tier"):
            d["settings"][k] = v
        else:
            d[k] = v
    return (json.dumps(d, separators=(",", ":")) + "\n").encode()


RECORD_CASES = {
    "hints_list": dict(hints=["romio_cb_write", "disable"]),
    "staged_10_30": dict(staged_out_bytes=10**30),
    "stripe_count_dict": dict(stripe_count={"n": 4}),
    "stripe_count_lots": dict(stripe_count="lots"),
    "end_before_start": dict(end=50),
    "job_id_null": dict(job_id=None),
    "job_id_markup": dict(job_id="[red]1[/red]"),
    "host_with_newline": dict(host="n1\nrm -rf /"),
    "tier_name_list": dict(tier={"name": ["a"]}),
}


@pytest.mark.parametrize("case", sorted(RECORD_CASES))
def test_bad_job_record_is_rejected_and_the_kb_is_unchanged(case, seeded_kb, tmp_path):
    bad = tmp_path / "ioadvise-11.json"
    bad.write_bytes(record(**RECORD_CASES[case]))
    before = digest(seeded_kb)
    one_error_line(ioadvise("kb", "import", bad, "--kb", seeded_kb), "ioadvise-11.json")
    assert digest(seeded_kb) == before


@pytest.mark.parametrize("size", [16, 30, 39, 200])
def test_short_darshan_file_is_rejected(size, seeded_kb, tmp_path):
    short = tmp_path / "short.darshan"
    short.write_bytes(DARSHAN.read_bytes()[:size])
    before = digest(seeded_kb)
    one_error_line(ioadvise("kb", "import", short, "--kb", seeded_kb), "short.darshan", "truncated Darshan log")
    one_error_line(ioadvise("diagnose", short), "short.darshan")
    assert digest(seeded_kb) == before


def test_darshan_header_with_a_wrong_length_is_rejected_not_misread(tmp_path):
    data = bytearray(DARSHAN.read_bytes())
    name_len = int.from_bytes(data[32:40], "little")
    data[32:40] = (name_len - 100).to_bytes(8, "little")   # the name table now ends 100 bytes early
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(bytes(data))
    one_error_line(ioadvise("diagnose", bad, "--json"), "bad.darshan", "corrupt")
    assert ioadvise("diagnose", DARSHAN, "--json").exit_code == 0   # the untouched log still reads


def test_binary_thresholds_and_workload_files(tmp_path):
    binary = tmp_path / "bin.toml"
    binary.write_bytes(bytes(range(256)) * 8)
    one_error_line(ioadvise("diagnose", DARSHAN, "--thresholds", binary), "bin.toml")
    one_error_line(ioadvise("advise", "--system", "tsubame3", "--workload", binary), "bin.toml")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'nodes = 1\n# caf\xe9\n')
    one_error_line(ioadvise("advise", "--system", "tsubame3", "--workload", latin), "latin.toml:2:")


@pytest.mark.parametrize("size", ["1e400GiB", "1e30", "99999999999PiB"])
def test_sizes_beyond_64_bits(size, tmp_path):
    one_error_line(ioadvise("advise", "--system", "tsubame3", "--nodes", 1, "--ranks-per-node", 1,
                            "--bytes-per-rank", size), size)
    w = tmp_path / "w.toml"
    w.write_text(f'nodes = 1\nranks_per_node = 1\nbytes_per_rank = "{size}"\n')
    one_error_line(ioadvise("advise", "--system", "tsubame3", "--workload", w), size)
    from ioadvisor.errors import UsageError
    from ioadvisor.model.units import parse_size
    with pytest.raises(UsageError, match="too large"):   # 2^63 bytes and more do not fit the KB's integers
        parse_size(size)


def test_unwritable_output_paths(tmp_path, seeded_kb):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nsrun ./app\n")
    nowhere = Path("/proc/nonexistent/out")   # /proc refuses new directories, even to root
    one_error_line(ioadvise("kb", "export", "--kb", seeded_kb, "-o", nowhere), "cannot write")
    one_error_line(ioadvise("wrap", script, "-o", nowhere, "--hints", "a=b"), "cannot write")
    one_error_line(ioadvise("diagnose", DARSHAN, "--html", nowhere), "cannot write")
    one_error_line(ioadvise("docs", "build", "--kb", seeded_kb, "-o", nowhere), str(nowhere.parent))
    assert not (tmp_path / "out").exists()


def test_markup_and_emoji_codes_print_as_written(tmp_path):
    # ":100:" would become an emoji and "[bold]" would vanish if user text went through rich markup
    bad = tmp_path / "x[bold]y:100:.csv"
    bad.write_text("not,a,benchmark\n")
    res = ioadvise("kb", "import", bad, "--kb", tmp_path / "kb.sqlite")
    line = one_error_line(res)
    assert "x[bold]y:100:.csv" in line and "\U0001f4af" not in res.output
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\necho ':smile: [red]hi[/red]'\n")
    res = ioadvise("wrap", script, "-o", tmp_path / "w.sh", "--hints", "a=b", "--diff")
    assert res.exit_code == 0 and ":smile: [red]hi[/red]" in res.output and "\U0001f604" not in res.output


def test_json_output_never_holds_non_json_tokens(tmp_path):
    from ioadvisor.util import to_json
    text = to_json({"a": float("inf"), "b": [float("nan"), -float("inf"), 1.5], "c": (1, "x")})
    assert json.loads(text) == {"a": None, "b": [None, None, 1.5], "c": [1, "x"]}
    assert "Infinity" not in text and "NaN" not in text


def test_wrap_keeps_a_user_line_that_looks_like_the_block_start(tmp_path):
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/bash\nsrun ./a\n# >>> ioadvise wrap is what we use\nsrun ./b\n")
    out = tmp_path / "w.sh"
    assert ioadvise("wrap", script, "-o", out, "--hints", "a=b").exit_code == 0
    text = out.read_text()
    assert text.endswith("srun ./a\n# >>> ioadvise wrap is what we use\nsrun ./b\n")
    again = tmp_path / "w2.sh"   # wrapping the wrapped script replaces the block, keeps the user's lines
    assert ioadvise("wrap", out, "-o", again, "--hints", "a=b").exit_code == 0
    assert again.read_text() == text


@pytest.mark.parametrize("field,value", [
    ("request", "--constraint=A\ntouch /tmp/pwned"), ("request", '--constraint="A\nB"'),
    ("mount", "/scratch/$USER\ntouch /tmp/pwned"), ("name", "t\rx"), ("outdir", "out\ntouch /tmp/pwned"),
    ("stage_in", "in\x00put"), ("hint", "enable\u2028touch /tmp/pwned"),
])
def test_no_line_break_from_any_setting_reaches_the_script(field, value):
    """Whatever loader passed it on, the rewrite itself refuses a value that would start a new line."""
    from ioadvisor.errors import UsageError
    from ioadvisor.slurm.rewrite import TierSpec, WrapSettings, wrap
    tier = TierSpec(name="t", request="--constraint=A", mount="/scratch/$USER")
    kw: dict = {}
    if field in ("request", "mount", "name"):
        kw["tier"] = TierSpec(**{**tier.__dict__, field: value})
    elif field == "outdir":
        kw["outdir"] = value
    elif field == "stage_in":
        kw["tier"], kw["stage_in"] = tier, (value,)
    else:
        kw["hints"] = {"romio_cb_write": value}
    with pytest.raises(UsageError):
        wrap("#!/bin/bash\nsrun ./app\n", WrapSettings(**kw))


def _fio_with(io_bytes: str) -> str:
    text = (Path(__file__).parent / "data" / "samples" / "fio" / "seqwrite_1m_2jobs.json").read_text()
    out, n = re.subn(r'"io_bytes" : \d+', f'"io_bytes" : {io_bytes}', text, count=1)
    assert n == 1
    return out


JSON_CASES = {      # (file name, content, what the one line says): neither is any tool's output
    "fio_5000_digits": ("fio.json", lambda: _fio_with("9" * 5000), "more than 4300 digits"),
    "record_5000_digits": ("ioadvise-11.json", lambda: record().decode().replace('"start":100', '"start":' + "9" * 5000),
                           "more than 4300 digits"),
    "record_nested_100000": ("ioadvise-11.json", lambda: record().decode().replace(
        '"settings":{', '"settings":{"x":' + "[" * 100_000 + "]" * 100_000 + ","), "nested too deep"),
    "fio_nested_100000": ("fio.json", lambda: _fio_with("[" * 100_000 + "]" * 100_000), "nested too deep"),
}


@pytest.mark.parametrize("case,command", [(c, cmd) for c in sorted(JSON_CASES) for cmd in ("kb import", "jobs collect")
                                          if cmd == "kb import" or c.startswith("record")])
def test_huge_integers_and_deep_nesting_are_one_line(case, command, seeded_kb, tmp_path):
    """Python refuses int('9' * 5000) (ValueError) and nesting past its recursion limit (RecursionError) while it
    parses JSON; either is one line naming the file, exit 2, the KB unchanged."""
    name, content, says = JSON_CASES[case]
    bad = tmp_path / name
    bad.write_text(content())
    before = digest(seeded_kb)
    one_error_line(ioadvise(*command.split(), bad, "--kb", seeded_kb), name, says)
    assert digest(seeded_kb) == before


def test_a_csv_imported_twice_leaves_nothing_on_stderr(tmp_path):
    """The second import stops after the first batch (the file is in the KB already); the reader of the file,
    left suspended, must be closed while the file is still open, not by the interpreter after it was closed
    ("Exception ignored ... I/O operation on closed file" on stderr)."""
    import os
    import subprocess
    import sys
    rows = tmp_path / "rows.csv"
    rows.write_text(HEADER + "\n" + "".join(
        GOOD_ROW.replace("s1,", f"s{i},", 1).replace(",100.5,", f",{100 + i / 100:.2f},") + "\n"
        for i in range(5000)))
    kb = tmp_path / "kb.sqlite"
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    for added in ("5000 run(s) added", "already in the KB"):
        res = subprocess.run([Path(sys.executable).parent / "ioadvise", "kb", "import", str(rows), "--kb", str(kb)],
                             capture_output=True, text=True, env=env, timeout=120)
        assert res.returncode == 0 and added in res.stdout, res.stdout + res.stderr
        assert "Exception ignored" not in res.stderr and "Traceback" not in res.stderr, res.stderr


TOML_READERS = {      # every command that reads a TOML file the user names
    "advise --workload": lambda f, tmp: ["advise", "--workload", f],
    "diagnose --thresholds": lambda f, tmp: ["diagnose", DARSHAN, "--thresholds", f],
    "archive scan --thresholds": lambda f, tmp: ["archive", "scan", DARSHAN, "--thresholds", f, "--kb",
                                                 tmp / "kb.sqlite"],
    "bench sweep": lambda f, tmp: ["bench", "sweep", f, "--kb", tmp / "kb.sqlite"],
    "center check": lambda f, tmp: ["center", "check", f],
}


@pytest.mark.parametrize("command", sorted(TOML_READERS))
@pytest.mark.parametrize("value,says", [("[" * 3000 + "]" * 3000, "nested too deep"),
                                        ("9" * 5000, "more than 4300 digits")])
def test_toml_python_cannot_hold_is_one_line(command, value, says, tmp_path):
    """3,000 nested arrays exceed Python's recursion limit (1,000) in tomllib (RecursionError, a traceback in
    every reader but the center file's); a 5,000-digit integer exceeds its conversion limit (ValueError, a
    traceback in all). Now each is one line naming the file, exit 2."""
    bad = tmp_path / "bad.toml"
    bad.write_text(f"a = {value}\n")
    one_error_line(ioadvise(*TOML_READERS[command](bad, tmp_path)), "bad.toml", says)


@pytest.mark.parametrize("kind", ["csv", "darshan"])
def test_kb_import_of_a_file_named_with_any_bytes(kind, tmp_path):
    """A file name with a byte that is not UTF-8 (0xff) and an ESC: sqlite refused the name as the runs'
    source (UnicodeEncodeError, a traceback), and a run's source may hold no control character. Imported now,
    the file's name (and a log's runs' source) written as `printable` shows it."""
    import os
    import sqlite3
    name = b"r\xff\x1b[31m." + kind.encode()
    path = os.path.join(os.fsencode(tmp_path), name)
    with open(path, "wb") as f:
        f.write((HEADER + "\n" + GOOD_ROW + "\n").encode() if kind == "csv" else DARSHAN.read_bytes())
    kb = tmp_path / "kb.sqlite"
    # a log measures a center only when the center's mounts hold its files: example.darshan's lie under /scratch2
    center = tmp_path / "s.toml"
    center.write_text('name = "s"\n[[filesystems]]\nname = "fs0"\ntype = "lustre"\nmount = "/scratch2"\n'
                      'ost_count = 8\n')
    res = ioadvise("kb", "import", os.fsdecode(path), "--kb", kb, "--system", "s", "--center", center, "--json")
    assert res.exit_code == 0, res.output
    shown = f"{tmp_path}/r\\xff\\x1b[31m.{kind}"
    assert json.loads(res.stdout)[0]["runs"] >= 1
    assert [r[1] for r in sqlite3.connect(kb).execute("SELECT * FROM sources")] == [shown]   # hash, path, ...
    if kind == "darshan":         # a CSV row names its own source
        assert {s for (s,) in sqlite3.connect(kb).execute("SELECT DISTINCT source FROM runs")} == {shown}
