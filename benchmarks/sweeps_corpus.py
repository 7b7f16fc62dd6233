"""Import the public sweep corpus (../shared/sweeps, see its README) into a scratch KB and validate the model on it.

The corpus files share one column layout, close to the canonical CSV; this script maps them onto it:
- metadata rows (layout `unique_dir`, `shared_dir`, `single_file`): op `create`/`stat`/`remove`/`read` ->
  `file_create`/`file_stat`/`file_remove`/`file_read`; `unique_dir` -> layout `fpp` (one directory per rank),
  `shared_dir` -> `shared`;
- `collective` yes/no/na -> true/false/empty; `POSIX(stdio fwrite)` -> STDIO, other `POSIX...` spellings
  (`POSIX(read_test_api)`, `POSIX/IME`) -> POSIX, unknown APIs -> OTHER;
- rows whose notes carry `WARNING` (values above the file system's rated peak: cache effects, per the corpus
  README) are left out and counted;
- mdtest `-S` rows (layout `single_file`: every rank works on one file) are left out and counted: they time
  the clients' cache of one file's attributes, not the metadata server, and the product keeps such runs out of
  its fits (the mdtest importer flags them `one-file`).

Usage: .venv/bin/python benchmarks/sweeps_corpus.py [--corpus DIR] [--kb PATH] [--json] [--system NAME]
Prints the sweep-out validation table (`ioadvise kb validate --sweeps`), the model next to the baselines.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT.parent / "shared" / "sweeps"
_META_OPS = {"create": "file_create", "stat": "file_stat", "remove": "file_remove", "read": "file_read",
             "write": "file_create"}
_META_LAYOUT = {"unique_dir": "fpp", "shared_dir": "shared", "single_proc": ""}


def convert(corpus: Path, out: Path) -> dict[str, int]:
    """Write the corpus as one canonical CSV per corpus file into `out`; returns counts kept / left out."""
    from ioadvisor.importers.csv import REQUIRED
    kept = dropped = one_file = 0
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(corpus.glob("*.csv")):
        rows = []
        with f.open(newline="") as fh:
            for r in csv.DictReader(fh):
                if "WARNING" in (r.get("notes") or ""):
                    dropped += 1
                    continue
                layout = r["layout"]
                op = r["op"]
                if layout == "single_file":
                    one_file += 1
                    continue
                if layout in _META_LAYOUT:
                    op = _META_OPS.get(op, op)
                    note = ""
                    layout = _META_LAYOUT[layout]
                else:
                    note = ""
                api = r["api"]
                if api.upper().startswith("POSIX"):    # POSIX(stdio fwrite), POSIX/IME, ...
                    api = "STDIO" if "stdio" in api.lower() else "POSIX"
                elif api.upper().startswith(("MPIIO", "MPI-IO")):
                    api = "MPIIO"
                elif api.upper() not in ("HDF5", "NETCDF", "PNETCDF", "STDIO"):
                    api = "OTHER"
                coll = {"yes": "true", "no": "false"}.get(r["collective"], "")
                if api == "POSIX" or api == "STDIO":
                    coll = ""
                rows.append({"source": r["source_url_or_repo_path"], "system": r["system"],
                             "filesystem": r["filesystem"], "ost_count": r["ost_count"], "op": op, "api": api,
                             "layout": layout, "collective": coll, "nodes": r["nodes"], "ranks": r["ranks"],
                             "transfer_size_bytes": r["transfer_size_bytes"],
                             "block_size_bytes_per_rank": r["block_size_bytes_per_rank"],
                             "stripe_count": r["stripe_count"], "stripe_size_bytes": r["stripe_size_bytes"],
                             "value": r["value"], "unit": r["unit"], "notes": (r["notes"] + note)[:500],
                             "fs_type": "lustre" if "lustre" in r["filesystem"].lower() else ""})
                kept += 1
        with (out / f.name).open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(REQUIRED) + ["fs_type"])
            w.writeheader()
            w.writerows(rows)
    return {"kept": kept, "left_out_warning": dropped, "left_out_one_file": one_file}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--kb", type=Path, default=None, help="scratch KB (default: a temporary file)")
    ap.add_argument("--system", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not sorted(args.corpus.glob("*.csv")):
        print(f"sweeps_corpus: no corpus CSV files in {args.corpus} (use --corpus DIR)", file=sys.stderr)
        return 2
    from ioadvisor.advise.validate import sweep_validate, format_sweep_table
    from ioadvisor.ingest import import_file
    from ioadvisor.kb import KB
    with tempfile.TemporaryDirectory() as tmp:
        counts = convert(args.corpus, Path(tmp) / "csv")
        kb_path = args.kb or Path(tmp) / "corpus.sqlite"
        with KB.open(kb_path, reference=False) as kb:
            for f in sorted((Path(tmp) / "csv").glob("*.csv")):
                import_file(kb, f, "csv")
            t0 = time.perf_counter()
            res = sweep_validate(kb, system=args.system)
            res["seconds"] = round(time.perf_counter() - t0, 1)
    res["corpus"] = counts
    if args.json:
        json.dump(res, sys.stdout, indent=1)
        print()
    else:
        print(f"corpus: {counts['kept']} runs imported, {counts['left_out_warning']} left out (WARNING: above the "
              f"rated peak), {counts['left_out_one_file']} left out (mdtest -S, one file for all ranks); "
              f"validation took {res['seconds']} s")
        print(format_sweep_table(res))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
