"""IOzone outputs: the automatic-mode table (`-a`, or tests chosen with `-i`) and throughput mode (`-t N`).

Table rows (`kB reclen write rewrite read reread random read random write ...`) give one Run per
filled column among write, rewrite, read, reread, random read and random write (the other columns,
backward/stride reads, record rewrite and the f*-calls, have no op of their own here and are skipped).
IOzone leaves a column blank when its test was not selected (`-i 0 -i 2`), so cells are matched to
columns by position: IOzone right-aligns each number under its column name.
file_size is the kB column, transfer_size the reclen column; one process.

Throughput mode gives one Run per "Children see throughput for N <test>" block, with ranks = N, the
per-process file size and record size from "Each process writes a ... kByte file in ... kByte records",
and "Parent sees throughput" and the per-process min/avg/max in the notes. IOzone gives one file per
process in this mode, so the layout is `fpp`.

IOzone's kB are 1024 bytes: values are in KiB/s, or in ops/s when IOzone ran with `-O`.
"""
from __future__ import annotations

import re
import shlex
from datetime import datetime

from ..errors import ImportFormatError, IOAdvisorError
from ..model.run import Provenance, Run
from ..model.validate import make_run
from . import ImportContext, decode, register, system_of

TABLE_COLUMNS = ("kB", "reclen", "write", "rewrite", "read", "reread", "random read", "random write", "bkwd read",
                 "record rewrite", "stride read", "fwrite", "frewrite", "fread", "freread")
TABLE_OPS = {"write": "write", "rewrite": "rewrite", "read": "read", "reread": "reread",
             "random read": "randread", "random write": "randwrite"}
THROUGHPUT_OPS = {"initial writers": "write", "rewriters": "rewrite", "readers": "read", "re-readers": "reread",
                  "random readers": "randread", "random writers": "randwrite"}

_HEADER = re.compile(r"^\s*kB\s+reclen\s+write\s+rewrite\s+read\s+reread\b", re.I)
_NUM = r"(-?[0-9]+(?:\.[0-9]*)?)"
_CHILDREN = re.compile(rf"^\s*Children see throughput for\s+(\d+)\s+(.+?)\s*=\s*{_NUM}\s*(kB/sec|KB/sec|ops/sec)",
                       re.I)
_PARENT = re.compile(rf"^\s*Parent sees throughput for\s+\d+\s+.+?=\s*{_NUM}", re.I)
_PER_PROC = re.compile(rf"^\s*(Min|Max|Avg) throughput per process\s*=\s*{_NUM}", re.I)


def sniff(head: bytes) -> bool:
    text = head.decode("utf-8", "replace")
    if "Iozone: Performance Test of File I/O" in text:
        return True
    if re.search(r"^\s*Children see throughput for\s+\d+\s+\S", text, re.M):
        return True
    return any(_HEADER.match(line) for line in text.splitlines()[:200])


def _unit(text: str) -> str:
    if re.search(r"OPS Mode|Output is in (operations per second|ops/sec)", text):
        return "ops/s"
    return "KiB/s"


def _meta(text: str) -> dict:
    m_ver = re.search(r"Version \$Revision: ([0-9.]+) \$", text)
    m_cmd = re.search(r"^\s*Command line used: (.*?)\s*$", text, re.M)
    m_date = re.search(r"^\s*Run began: (.*?)\s*$", text, re.M)
    date = None
    if m_date:
        try:
            date = datetime.strptime(" ".join(m_date.group(1).split()), "%a %b %d %H:%M:%S %Y").date().isoformat()
        except ValueError:
            date = None
    command = m_cmd.group(1) if m_cmd else None
    args: list[str] = []
    if command:
        try:
            args = shlex.split(command)
        except ValueError:
            args = command.split()
    direct = ("-I" in args) or bool(re.search(r"^\s*O_DIRECT feature enabled", text, re.M))
    cluster = "-+m" in args
    return {"version": m_ver.group(1) if m_ver else None, "command": command, "date": date, "direct": direct,
            "cluster": cluster}


def _positions(line: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of each whitespace-separated token."""
    return [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"\S+", line)]


def _number(tok: str, what: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise ValueError(f"{what}: not a number: {tok!r}") from None
    if v < 0:
        raise ValueError(f"{what}: must not be negative, got {tok}")
    return v


def _table_runs(lines: list[str], ctx: ImportContext, meta: dict, unit: str) -> list[Run]:
    runs: list[Run] = []
    i = 0
    while i < len(lines):
        if not _HEADER.match(lines[i]):
            i += 1
            continue
        header = lines[i].expandtabs(8)
        cols = _positions(header)
        names = [TABLE_COLUMNS[k] if k < len(TABLE_COLUMNS) else tok for k, (_, _, tok) in enumerate(cols)]
        ends = [e for _, e, _ in cols]
        i += 1
        while i < len(lines):
            raw = lines[i].expandtabs(8)
            if not raw.strip():
                i += 1
                continue
            toks = _positions(raw)
            if not re.fullmatch(r"-?[0-9]+", toks[0][2]):
                break                              # end of the table
            lineno = i + 1
            cells: dict[str, str] = {}
            for _, end, tok in toks:
                k = min(range(len(ends)), key=lambda c: abs(ends[c] - end))
                if abs(ends[k] - end) > 2 or names[k] in cells:
                    raise ImportFormatError(f"IOzone table cell {tok!r} does not line up with a column",
                                            ctx.source, lineno)
                cells[names[k]] = tok
            try:
                if "kB" not in cells or "reclen" not in cells:
                    raise ValueError("IOzone table row without file size and record length")
                file_kib = _number(cells["kB"], "kB")
                rec_kib = _number(cells["reclen"], "reclen")
                filled = [c for c in TABLE_OPS if c in cells]
                if not filled:
                    raise ValueError("IOzone table row without a write/read result (truncated?)")
                for col in filled:
                    value = _number(cells[col], col)
                    runs.append(_run(ctx, meta, op=TABLE_OPS[col], value=value, unit=unit, ranks=1,
                                     file_size=int(file_kib * 1024), transfer_size=int(rec_kib * 1024),
                                     layout=None, notes=[f"IOzone table column '{col}'"]))
            except (ValueError, IOAdvisorError) as e:
                raise ImportFormatError(str(e), ctx.source, lineno) from None
            i += 1
    return runs


def _throughput_runs(lines: list[str], ctx: ImportContext, meta: dict) -> list[Run]:
    text = "\n".join(lines)
    each = re.search(r"Each process writes a (\d+) kByte file in (\d+) kByte records", text)
    file_size = int(each.group(1)) * 1024 if each else None
    rec = int(each.group(2)) * 1024 if each else None
    runs: list[Run] = []
    for i, line in enumerate(lines):
        m = _CHILDREN.match(line)
        if not m:
            continue
        lineno = i + 1
        n, test, value_text, unit_text = int(m.group(1)), " ".join(m.group(2).split()).lower(), m.group(3), m.group(4)
        # the block that follows: Parent sees, Min/Max/Avg per process, Min xfer
        block = lines[i + 1:i + 6]
        parent = next((pm.group(1) for pm in map(_PARENT.match, block) if pm), None)
        per = {pm.group(1).lower(): pm.group(2) for pm in map(_PER_PROC.match, block) if pm}
        if len(per) < 3 or parent is None:
            raise ImportFormatError(f"IOzone throughput block for {n} {test} is incomplete (truncated?)",
                                    ctx.source, lineno)
        op = THROUGHPUT_OPS.get(test)
        if op is None:
            continue
        unit = "ops/s" if unit_text.lower().startswith("ops") else "KiB/s"
        u = "ops/s" if unit == "ops/s" else "kB/s"
        try:
            value = _number(value_text, "Children see throughput")
            for k, v in per.items():
                _number(v, f"{k} throughput per process")
            _number(parent, "Parent sees throughput")
            notes = [f"IOzone '{n} {test}'; parent sees {parent} {u}",
                     f"per process min {per['min']}, avg {per['avg']}, max {per['max']} {u}"]
            runs.append(_run(ctx, meta, op=op, value=value, unit=unit, ranks=n, file_size=file_size,
                             transfer_size=rec, layout="fpp", notes=notes))
        except (ValueError, IOAdvisorError) as e:
            raise ImportFormatError(str(e), ctx.source, lineno) from None
    return runs


def _run(ctx: ImportContext, meta: dict, *, op: str, value: float, unit: str, ranks: int, file_size: int | None,
         transfer_size: int | None, layout: str | None, notes: list[str]) -> Run:
    nodes = None if meta["cluster"] else 1
    if meta["cluster"]:
        notes = notes + ["cluster mode (-+m): the number of client nodes is in the client list, not the output"]
    access = "random" if op.startswith("rand") else "sequential"
    prov = Provenance(source=ctx.source, command=meta["command"], tool="IOzone", tool_version=meta["version"],
                      importer="iozone/1", date=meta["date"], kind=ctx.kind)
    return make_run(system=system_of(ctx), filesystem=ctx.filesystem, op=op, api="POSIX", layout=layout,
                    nodes=nodes, ranks=ranks, ranks_per_node=ranks if nodes == 1 else None,
                    transfer_size=transfer_size, file_size=file_size, access=access, direct=meta["direct"],
                    value=value, unit=unit, notes="; ".join(notes), provenance=prov)


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    text = decode(data, ctx.source)
    lines = text.splitlines()
    meta = _meta(text)
    runs = _table_runs(lines, ctx, meta, _unit(text)) + _throughput_runs(lines, ctx, meta)
    if "Iozone: Performance Test of File I/O" in text and not re.search(r"iozone test complete", text, re.I):
        raise ImportFormatError("truncated IOzone output: no 'iozone test complete.' line", ctx.source, len(lines))
    if not runs:
        raise ImportFormatError("no IOzone results (no table rows and no 'Children see throughput' lines)",
                                ctx.source, len(lines))
    return runs


register("iozone", sniff, parse)
