"""Do two versions of ioadvisor import the same files into the same KB? Row by row, every column.

Builds synthetic canonical CSVs (benchmarks/scale_data.py): `a.csv` of N rows, `b.csv` with half of a's rows
and as many new ones (imported with a center file whose node memory and rated peaks flag some runs), and a CRLF
copy of a (every run already in the KB). Each version imports them in that order into a KB of its own, in a
child process with that version first on sys.path; then the runs (every column and the row order), the per
system summary and the sources (but the import time) are compared, with what each import reported.
Usage: .venv/bin/python benchmarks/import_parity.py --old /path/to/old/checkout [--new DIR] [--rows 100000]
Exit code 0 when the KBs are the same, 1 otherwise.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_data  # noqa: E402

CHILD = """
import json, sys
import ioadvisor
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB
kb_path, center, *files = sys.argv[1:]
out = {"package": ioadvisor.__file__, "results": []}
with KB.open(kb_path) as kb:
    for f in files:
        r = import_file(kb, f, center=center if f.endswith("b.csv") else None)
        out["results"].append([r.runs, r.skipped, r.duplicates, r.note])
print(json.dumps(out))
"""

CENTER = """name = "synthetic-big"
node_memory = "256GiB"
[[filesystems]]
name = "scratch"
type = "lustre"
mount = "/scratch"
rated_write_bandwidth = "12GB/s"
rated_read_bandwidth = "14GB/s"
"""


def build(d: Path, n: int) -> list[Path]:
    a, b, crlf = d / "a.csv", d / "b.csv", d / "a-crlf.csv"
    rows = list(scale_data.rows(n, 7))
    new = list(scale_data.rows(n // 2, 8))
    a.write_text(scale_data.HEADER + "\n" + "\n".join(rows) + "\n")
    b.write_text(scale_data.HEADER + "\n" + "\n".join(rows[::2] + new) + "\n")
    crlf.write_bytes(a.read_bytes().replace(b"\n", b"\r\n"))
    (d / "center.toml").write_text(CENTER)
    return [a, b, crlf]


def import_with(code: Path, kb: Path, d: Path, files: list[Path]) -> dict:
    import json
    env = {**os.environ, "PYTHONPATH": str(code), "HOME": str(d / "home")}
    p = subprocess.run([sys.executable, "-c", CHILD, str(kb), str(d / "center.toml"), *map(str, files)],
                       capture_output=True, text=True, env=env, cwd=d)
    if p.returncode != 0:
        raise SystemExit(f"import with {code} failed:\n{p.stderr}")
    out = json.loads(p.stdout)
    if not Path(out["package"]).resolve().is_relative_to(code.resolve()):
        raise SystemExit(f"{code}: the child imported {out['package']}, not this version")
    return out


def table(db: Path, name: str, order: str, leave_out: tuple[str, ...] = ()) -> list[tuple]:
    conn = sqlite3.connect(db)
    cols = [r[1] for r in conn.execute(f"PRAGMA table_info({name})") if r[1] not in leave_out]
    rows = conn.execute(f"SELECT rowid, {','.join(cols)} FROM {name} ORDER BY {order}").fetchall()
    conn.close()
    # typed: 5 and 5.0 are one value to sqlite's = but not the same stored value
    return [tuple((type(v).__name__, v) for v in r) for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, type=Path)
    ap.add_argument("--new", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--rows", type=int, default=100_000)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="import-parity-") as tmp:
        d = Path(tmp)
        files = build(d, opts.rows)
        kbs, reports = {}, {}
        for label, code in (("old", opts.old), ("new", opts.new)):
            kbs[label] = d / f"kb-{label}.sqlite"
            reports[label] = import_with(code, kbs[label], d, files)
            print(f"{label}: {reports[label]['package']}: {reports[label]['results']}")
        same = reports["old"]["results"] == reports["new"]["results"]
        if not same:
            print("the imports reported different results")
        for name, order, leave_out in (("runs", "rowid", ()), ("system_fs", "system, fsname", ()),
                                       ("sources", "rowid", ("imported_at",))):
            old, new = (table(kbs[k], name, order, leave_out) for k in ("old", "new"))
            diff = [i for i, (x, y) in enumerate(zip(old, new)) if x != y]
            ok = len(old) == len(new) and not diff
            same &= ok
            print(f"{name}: {len(old):,} rows old, {len(new):,} new, {len(diff):,} differing"
                  + ("" if ok else f"; first: {old[diff[0]] if diff else ''} / {new[diff[0]] if diff else ''}"))
        conn = sqlite3.connect(kbs["new"])
        flagged = conn.execute("SELECT flags, count(*) FROM runs GROUP BY flags").fetchall()
        print(f"flags in the KB: {flagged}")
    print("same KB" if same else "KBs DIFFER")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
