"""IOR outputs: the human-readable text, `-O summaryFormat=JSON` and `-O summaryFormat=CSV`.

One Run per operation and test, taken from IOR's own summary ("Summary of all tests" in the text,
`summary` in the JSON): the value is the mean bandwidth in MiB/s over the repetitions, with IOR's
max, min and standard deviation. IOR's StdDev is the population deviation (divided by N); the 95%
confidence interval is not printed by IOR: it is computed here with Student's t on N-1 degrees of
freedom from the sample deviation (the population one times sqrt(N/(N-1))), for N > 1 repetitions.

The CSV summary format holds only one line per repetition and names neither the API nor the file
layout; its mean, min, max and (population) deviation are computed from those lines.

Random access (`-z`) becomes the op `randwrite`/`randread`; the value stays the bandwidth and the
notes give IOR's mean operation rate, since for small transfers that is the number people quote.
"""
from __future__ import annotations

import functools
import math
import re
import shlex
from datetime import datetime
from typing import Any

from ..errors import ImportFormatError, IOAdvisorError
from ..model.run import Provenance, Run
from ..model.stats import ci95
from ..model.validate import make_run
from ..model.units import parse_size
from . import SNIFF_BYTES, ImportContext, decode, load_json, place, register, system_of

MIB = 1 << 20

def population_to_sample_sd(sd: float | None, n: int | None) -> float | None:
    if sd is None or n is None or n < 2:
        return None
    return sd * math.sqrt(n / (n - 1))


# ---------------------------------------------------------------------------------------------------------
# detection

_JSON_CMD = re.compile(rb'"Command line"\s*:\s*"[^"]*\bior\b')
_CSV_HEAD = re.compile(rb"^\s*access\s*,\s*bw\(MiB/s\)\s*,", re.I)


def _kind(head: bytes) -> str | None:
    h = head.lstrip()
    if h.startswith(b"{") and _JSON_CMD.search(head[:8192]) and b'"tests"' in head:
        return "json"
    if _CSV_HEAD.match(head):
        return "csv"
    first = head[:4096]
    if re.search(rb"^IOR-\S+: MPI Coordinated Test of Parallel I/O", first, re.M):
        return "text"
    return None


def sniff(head: bytes) -> bool:
    return _kind(head) is not None


# ---------------------------------------------------------------------------------------------------------
# command line

@functools.lru_cache(maxsize=256)
def fsync_requested(command: str) -> bool:
    """Whether an IOR command line flushes written data to the storage before the timed close (`-e`, fsync at
    the end of each write phase, or `-Y`, after every write; `-O fsync=1`, `-O fsyncPerWrite=1`): its write
    bandwidth then includes the flush and cannot be the page cache's. Cached: a KB's runs share few commands."""
    return _flags(command)["fsync"]


def _flags(command: str | None) -> dict[str, Any]:
    """What the IOR command line says about layout, collective, random access, O_DIRECT, fsync and hints."""
    out: dict[str, Any] = {"fpp": False, "collective": False, "random": False, "direct": False, "fsync": False,
                           "hints": {}}
    if not command:
        return out
    try:
        args = shlex.split(command)
    except ValueError:
        args = command.split()
    for i, a in enumerate(args):
        nxt = args[i + 1] if i + 1 < len(args) else ""
        if a.startswith("-") and not a.startswith("--") and len(a) > 1 and not any(c.isdigit() for c in a[1:]):
            letters = a[1:]
            # IOR takes flags one by one (`-F -w -r`); combined forms such as `-wr` are rare but harmless to read
            if set(letters) <= set("wrCeFczBYgEkKHvqxu") and len(letters) <= 4:
                out["fpp"] |= "F" in letters
                out["collective"] |= "c" in letters
                out["random"] |= "z" in letters
                out["direct"] |= "B" in letters
                out["fsync"] |= "e" in letters or "Y" in letters
        if a == "--posix.odirect":
            out["direct"] = True
        if a == "-O" and "=" in nxt:
            for part in nxt.split(","):
                k, _, v = part.partition("=")
                k, v = k.strip(), v.strip()
                if k in ("filePerProc",) and v not in ("0", ""):
                    out["fpp"] = True
                elif k == "collective" and v not in ("0", ""):
                    out["collective"] = True
                elif k == "randomOffset" and v not in ("0", ""):
                    out["random"] = True
                elif k == "useO_DIRECT" and v not in ("0", ""):
                    out["direct"] = True
                elif k in ("fsync", "fsyncPerWrite") and v not in ("0", ""):
                    out["fsync"] = True
    return out


def _tool_version(text: str) -> str | None:
    m = re.search(r"^IOR-(\S+?):", text, re.M)
    return m.group(1) if m else None


def _iso_date(text: str | None) -> str | None:
    """`Sun Nov 22 06:41:11 2026` -> `2026-11-22`."""
    if not text:
        return None
    try:
        return datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y").date().isoformat()
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------------------
# building runs

def _run(ctx: ImportContext, *, operation: str, api: str | None, mean: float, vmax: float | None,
         vmin: float | None, sd_pop: float | None, reps: int | None, fpp: bool | None, collective: bool,
         random_access: bool, direct: bool | None, nodes: int | None, ranks: int | None, rpn: int | None,
         xfer: int | None, block: int | None, segments: int | None, file_size: int | None,
         ops_mean: float | None, hints: dict[str, str], command: str | None, version: str | None,
         date: str | None, path: str | None, extra_notes: list[str] | None = None) -> Run:
    op = operation.lower()
    if op not in ("write", "read"):
        raise ValueError(f"unknown IOR operation {operation!r}")
    if random_access:
        op = "rand" + op
    api_n = (api or "").upper() or None
    coll = collective if api_n in ("MPIIO", "HDF5", "NCMPI", "PNETCDF") else None
    low, high = ci95(mean, population_to_sample_sd(sd_pop, reps), reps)
    notes = list(extra_notes or [])
    if reps and reps > 1:
        notes.append(f"mean of {reps} repetitions; 95% CI computed (Student t) from IOR's StdDev")
    if random_access and ops_mean is not None:
        notes.append(f"random access: IOR mean {ops_mean:.2f} ops/s")
    total = file_size
    prov = Provenance(source=ctx.source, command=command, tool="IOR", tool_version=version, importer="ior/1",
                      date=date, kind=ctx.kind)
    filesystem, tier = place(ctx, path, "IOR")
    return make_run(system=system_of(ctx), filesystem=filesystem, tier=tier, op=op, api=api_n,
                    layout=None if fpp is None else ("fpp" if fpp else "shared"), collective=coll, hints=hints,
                    nodes=nodes, ranks=ranks, ranks_per_node=rpn, transfer_size=xfer, block_size=block,
                    segments=segments, file_size=file_size, total_bytes=total,
                    access="random" if random_access else "sequential", direct=direct, reps=reps,
                    value=mean, unit="MiB/s",
                    spread={"value_min": vmin, "value_max": vmax, "value_sd": sd_pop, "ci95_low": low,
                            "ci95_high": high},
                    notes="; ".join(notes) or None, provenance=prov)


def _num(text: str, what: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"{what}: not a number: {text!r}") from None
    if v != v or v < 0:
        raise ValueError(f"{what}: must be a non-negative number, got {text!r}")
    return v


def _int(text: Any, what: str) -> int:
    v = _num(str(text), what)
    return int(round(v))


# ---------------------------------------------------------------------------------------------------------
# text

_KV = re.compile(r"^(\S[^:]*?)\s*:\s?(.*)$")


def _parse_text(text: str, ctx: ImportContext) -> list[Run]:
    lines = text.splitlines()
    header, options, hints, summary_at = _text_sections(lines)
    if summary_at is None:
        raise ImportFormatError("truncated IOR output: no 'Summary of all tests' (did IOR stop early?)",
                                ctx.source, len(lines))
    cols_line = summary_at + 1
    if cols_line >= len(lines) or not lines[cols_line].lstrip().startswith("Operation"):
        raise ImportFormatError("IOR summary without its column header", ctx.source, cols_line + 1)
    # IOR 2.x spells some columns with blanks ("Max (MiB)", "Std Dev"): join them as IOR 3+ does
    cols = re.sub(r"\s+\(", "(", lines[cols_line]).replace("Std Dev", "StdDev").split()
    command = header.get("Command line")
    common = dict(hints=hints, command=command, version=_tool_version(text),
                  date=_iso_date(header.get("StartTime") or header.get("Began")), path=header.get("Path"))
    flags = _flags(command)
    runs: list[Run] = []
    for j in range(cols_line + 1, len(lines)):
        cells = lines[j].split()
        if not cells or cells[0].lower() not in ("write", "read"):
            break
        lineno = j + 1
        if len(cells) != len(cols):
            raise ImportFormatError(f"IOR summary line has {len(cells)} cells, header has {len(cols)} "
                                    "(truncated?)", ctx.source, lineno)
        try:
            runs.append(_summary_run(ctx, cols, cells, options, flags, common))
        except KeyError as e:
            raise ImportFormatError(f"IOR summary lacks column {e.args[0]}", ctx.source, cols_line + 1) from None
        except (ValueError, IOAdvisorError) as e:
            raise ImportFormatError(str(e), ctx.source, lineno) from None
    if not runs:
        raise ImportFormatError("IOR summary has no write or read line (truncated?)", ctx.source, cols_line + 2)
    return runs


def _text_sections(lines: list[str]) -> tuple[dict[str, str], list[dict[str, str]], dict[str, str], int | None]:
    """What precedes the summary: the header's `key: value` lines, one "Options:" block per test, the hints
    passed to MPI_File_open, and the index of the "Summary of all tests" line (None: there is none)."""
    header: dict[str, str] = {}
    options: list[dict[str, str]] = []      # one "Options:" block per test
    hints: dict[str, str] = {}
    in_options = False
    in_hints = False
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("Summary of all tests"):
            return header, options, hints, i
        if s.startswith("Options:"):
            options.append({})
            in_options = True
            continue
        if "hints passed to MPI_File_open()" in s or s.startswith("hints returned from opened file"):
            in_hints = "passed" in s
            continue
        if in_hints:
            if s.startswith("}"):
                in_hints = False
            elif "=" in s:
                k, _, v = s.partition("=")
                hints[k.strip()] = v.strip()
            continue
        if in_options:
            if not s or s.startswith("Results"):
                in_options = False
                continue
            m = _KV.match(s)
            if m:
                options[-1][m.group(1).strip()] = m.group(2).strip()
            continue
        m = _KV.match(line)
        if m and m.group(1).strip() not in header:
            header[m.group(1).strip()] = m.group(2).strip()
    return header, options, hints, None


def _summary_run(ctx: ImportContext, cols: list[str], cells: list[str], options: list[dict[str, str]],
                 flags: dict[str, Any], common: dict[str, Any]) -> Run:
    """The run of one summary line (KeyError for a missing column, ValueError for a bad cell); the test's
    "Options:" block and the command's flags fill what the line does not say."""
    # first occurrence of each column name wins: the bandwidth StdDev precedes the OPs one
    row: dict[str, str] = {}
    for c, v in zip(cols, cells):
        row.setdefault(c, v)
    ops_idx = cols.index("Mean(OPs)") if "Mean(OPs)" in cols else None
    test_no = _int(row.get("Test#", "0"), "Test#")
    opts = options[test_no] if test_no < len(options) else (options[-1] if options else {})
    reps = _int(row["reps"], "reps") if "reps" in row else None
    ranks = _int(row["#Tasks"], "#Tasks") if "#Tasks" in row else None
    rpn = _int(row["tPN"], "tPN") if "tPN" in row else None
    nodes = _int(opts["nodes"], "nodes") if opts.get("nodes") else (
        ranks // rpn if ranks and rpn else None)
    fpp = (row.get("fPP", "0") != "0") if "fPP" in row else flags["fpp"]
    if opts.get("access"):
        fpp = opts["access"] == "file-per-process"
    agg = opts.get("aggregate filesize")
    file_size = parse_size(agg) if agg else (
        int(round(_num(row["aggs(MiB)"], "aggs(MiB)") * MIB)) if "aggs(MiB)" in row else None)
    random_access = flags["random"] or opts.get("ordering in a file") == "random"
    collective = flags["collective"] or opts.get("type") == "collective"
    api = row.get("API") or opts.get("api")
    common = {**common, "path": opts.get("test filename") or common["path"]}     # the test's own file
    return _run(
        ctx, operation=cells[0], api=api, mean=_num(row["Mean(MiB)"], "Mean(MiB)"),
        vmax=_num(row["Max(MiB)"], "Max(MiB)"), vmin=_num(row["Min(MiB)"], "Min(MiB)"),
        sd_pop=_num(row["StdDev"], "StdDev"), reps=reps, fpp=fpp, collective=collective,
        random_access=random_access, direct=flags["direct"], nodes=nodes, ranks=ranks, rpn=rpn,
        xfer=_int(row["xsize"], "xsize") if "xsize" in row else None,
        block=_int(row["blksiz"], "blksiz") if "blksiz" in row else None,
        segments=_int(row["segcnt"], "segcnt") if "segcnt" in row else None,
        file_size=file_size,
        ops_mean=_num(cells[ops_idx], "Mean(OPs)") if ops_idx is not None else None, **common)


# ---------------------------------------------------------------------------------------------------------
# JSON

def _parse_json(text: str, ctx: ImportContext) -> list[Run]:
    doc = load_json(text, ctx.source, "IOR JSON")
    if not isinstance(doc, dict):
        raise ImportFormatError("IOR JSON is not an object", ctx.source, 1)
    summary = doc.get("summary")
    if not isinstance(summary, list) or not summary:
        raise ImportFormatError("IOR JSON has no 'summary' (did IOR stop early?)", ctx.source)
    tests = {t.get("TestID", i): t for i, t in enumerate(doc.get("tests") or []) if isinstance(t, dict)}
    command = doc.get("Command line")
    version = doc.get("Version")
    date = _iso_date(doc.get("Began"))
    flags = _flags(command)
    runs = []
    for k, s in enumerate(summary):
        where = f"summary entry {k + 1}"
        try:
            if not isinstance(s, dict):
                raise ValueError("not an object")
            test = tests.get(s.get("TestID", 0), {})
            params = test.get("Parameters") or {}
            opts = test.get("Options") or {}
            reps = _int(s["repetitions"], "repetitions")
            ranks = _int(s["numTasks"], "numTasks")
            rpn = _int(s["tasksPerNode"], "tasksPerNode") if "tasksPerNode" in s else None
            nodes = _int(params["nodes"], "nodes") if "nodes" in params else (
                ranks // rpn if rpn else None)
            agg = opts.get("aggregate filesize")
            file_size = parse_size(agg) if agg else (
                int(round(_num(str(s["xsizeMiB"]), "xsizeMiB") * MIB)) if "xsizeMiB" in s else None)
            random_access = flags["random"] or str(params.get("randomOffset", "0")) not in ("0", "")
            collective = flags["collective"] or str(params.get("collective", "0")) not in ("0", "")
            direct = flags["direct"] or str(params.get("useO_DIRECT", "0")) not in ("0", "")
            runs.append(_run(
                ctx, operation=str(s["operation"]), api=s.get("API") or params.get("api"),
                mean=_num(str(s["bwMeanMIB"]), "bwMeanMIB"), vmax=_num(str(s["bwMaxMIB"]), "bwMaxMIB"),
                vmin=_num(str(s["bwMinMIB"]), "bwMinMIB"), sd_pop=_num(str(s["bwStdMIB"]), "bwStdMIB"),
                reps=reps, fpp=str(s.get("filePerProc", params.get("filePerProc", 0))) not in ("0", ""),
                collective=collective, random_access=random_access, direct=direct, nodes=nodes, ranks=ranks,
                rpn=rpn, xfer=_int(s["transferSize"], "transferSize"), block=_int(s["blockSize"], "blockSize"),
                segments=_int(s["segmentCount"], "segmentCount") if "segmentCount" in s else None,
                file_size=file_size,
                ops_mean=_num(str(s["OPsMean"]), "OPsMean") if "OPsMean" in s else None,
                hints={}, command=command, version=version, date=date, path=_test_path(test, params)))
        except KeyError as e:
            raise ImportFormatError(f"IOR JSON {where} lacks {e.args[0]!r}", ctx.source) from None
        except (ValueError, IOAdvisorError) as e:
            raise ImportFormatError(f"IOR JSON {where}: {e}", ctx.source) from None
    return runs


def _test_path(test: dict, params: dict) -> str | None:
    """The file a JSON test wrote: its testFileName, else the Path IOR printed for it."""
    path = params.get("testFileName") or test.get("Path")
    return path if isinstance(path, str) else None


# ---------------------------------------------------------------------------------------------------------
# CSV (one line per repetition)

def _parse_csv(text: str, ctx: ImportContext) -> list[Run]:
    lines = text.splitlines()
    cols = [c.strip() for c in lines[0].split(",")]
    need = ("access", "bw(MiB/s)", "block(KiB)", "xfer(KiB)", "numTasks")
    missing = [c for c in need if c not in cols]
    if missing:
        raise ImportFormatError(f"IOR CSV header lacks column(s): {', '.join(missing)}", ctx.source, 1)
    groups: dict[tuple, list[float]] = {}
    order: list[tuple] = []
    ops: dict[tuple, list[float]] = {}
    for i, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(cols):
            raise ImportFormatError(f"expected {len(cols)} cells, found {len(cells)} (truncated?)", ctx.source, i)
        row = dict(zip(cols, cells))
        try:
            key = (row["access"].lower(), _int(row["numTasks"], "numTasks"),
                   int(round(_num(row["block(KiB)"], "block(KiB)") * 1024)),
                   int(round(_num(row["xfer(KiB)"], "xfer(KiB)") * 1024)))
            if key[0] not in ("write", "read"):
                raise ValueError(f"unknown IOR operation {row['access']!r}")
            bw = _num(row["bw(MiB/s)"], "bw(MiB/s)")
            iops = _num(row["IOPS"], "IOPS") if "IOPS" in row else None
        except ValueError as e:
            raise ImportFormatError(str(e), ctx.source, i) from None
        if key not in groups:
            order.append(key)
            groups[key], ops[key] = [], []
        groups[key].append(bw)
        if iops is not None:
            ops[key].append(iops)
    if not order:
        raise ImportFormatError("IOR CSV has a header but no result lines", ctx.source)
    runs = []
    for key in order:
        vals = groups[key]
        n = len(vals)
        mean = sum(vals) / n
        sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / n)
        runs.append(_run(
            ctx, operation=key[0], api=None, mean=mean, vmax=max(vals), vmin=min(vals), sd_pop=sd, reps=n,
            fpp=None, collective=False, random_access=False, direct=None, nodes=None, ranks=key[1], rpn=None,
            xfer=key[3], block=key[2], segments=None, file_size=None,
            ops_mean=sum(ops[key]) / len(ops[key]) if ops[key] else None, hints={}, command=None, version=None,
            date=None, path=None, extra_notes=["IOR CSV summary: API, layout and command line not recorded; statistics "
                                    "computed from the per-repetition lines"]))
    return runs


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    text = decode(data, ctx.source)
    kind = _kind(data[:SNIFF_BYTES])
    if kind == "json":
        return _parse_json(text, ctx)
    if kind == "csv":
        return _parse_csv(text, ctx)
    if kind == "text":
        return _parse_text(text, ctx)
    raise ImportFormatError("not an IOR output (no IOR banner, JSON summary or CSV header)", ctx.source, 1)


register("ior", sniff, parse)
