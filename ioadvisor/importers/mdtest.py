"""mdtest outputs: one Run per line of the "SUMMARY rate" table whose mean rate is not zero.

The value is the Mean rate in ops/s with mdtest's Max, Min and Std Dev. mdtest's Std Dev is the sample
deviation (divided by N-1), so the 95% confidence interval (computed here, Student t on N-1 degrees of
freedom, for N > 1 iterations) uses it directly.

Layout, for metadata runs, describes the directories: `fpp` when each task works in its own directory
(`-u`), `shared` when all tasks create their items in the same directories. The notes say which. With `-S`
every task works on one single file: the rates then measure the clients' cache of that file's attributes,
not the metadata server, and the runs carry the evidence flag `one-file` (kept, listed, never fitted).
`items_per_rank` is the number of files/directories each task handles (from mdtest's
"N tasks, M files" line), `files_per_dir` the items in one directory where the command line tells it
(`-I`, or `-n` in a flat tree), and `file_size` the bytes written per file (`-w`).
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from datetime import datetime

from ..errors import ImportFormatError, IOAdvisorError
from ..center.evidence import ONE_FILE
from ..frozen import frozen
from ..model.run import Provenance, Run
from ..model.stats import ci95
from ..model.validate import make_run
from . import ImportContext, decode, place, register, system_of

OPS = {
    "file creation": "file_create", "file stat": "file_stat", "file read": "file_read",
    "file removal": "file_remove", "directory creation": "dir_create", "directory stat": "dir_stat",
    "directory rename": "dir_rename", "directory removal": "dir_remove", "tree creation": "tree_create",
    "tree removal": "tree_remove",
}

_LAUNCH = re.compile(r"^(mdtest-\S+) was launched with (\d+) total task\(s\) on (\d+) node\(s\)", re.M)
_NUM = r"(-?[0-9.]+(?:[eE][+-]?\d+)?|nan|-nan|inf)"
_ROW = re.compile(rf"^\s*([A-Za-z][A-Za-z ]*?)\s*:?\s+{_NUM}\s+{_NUM}\s+{_NUM}\s+{_NUM}\s*$")


def sniff(head: bytes) -> bool:
    return bool(re.search(rb"^mdtest-\S+ was launched with \d+ total task", head[:8192], re.M))


def _args(command: str) -> dict[str, str | bool]:
    """mdtest options from `Command line used:` (mdtest quotes each argument)."""
    try:
        args = shlex.split(command)
    except ValueError:
        args = command.replace("'", " ").split()
    out: dict[str, str | bool] = {}
    with_value = set("abBdefGiIlnNpsvwWxzO") - {"B", "v"}
    i = 1
    while i < len(args):
        a = args[i]
        if a.startswith("-") and len(a) == 2:
            if a[1] in with_value and i + 1 < len(args):
                out[a[1]] = args[i + 1]
                i += 2
                continue
            out[a[1]] = True
        i += 1
    return out


def _date(text: str) -> str | None:
    m = re.search(r"-- started at (\d\d)/(\d\d)/(\d{4})", text)
    if not m:
        return None
    try:
        return datetime(int(m.group(3)), int(m.group(1)), int(m.group(2))).date().isoformat()
    except ValueError:
        return None


def _int_opt(opts: dict, key: str) -> int | None:
    v = opts.get(key)
    if not isinstance(v, str):
        return None
    try:
        return int(float(v))
    except ValueError:
        return None


@frozen
class _Setup:
    """What the header and the command line tell about the whole run."""

    version: str
    ranks: int
    nodes: int
    command: str | None
    opts: dict
    items_per_rank: int | None
    unique: bool
    one_file: bool
    depth: int
    per_dir: int | None
    file_size: int | None
    api: str
    path: str | None                # the directory mdtest worked below (`Path:`, else the first `-d`)


def _setup(text: str, ctx: ImportContext) -> _Setup:
    launch = _LAUNCH.search(text)
    if not launch:
        raise ImportFormatError("not an mdtest output (no 'mdtest-... was launched with' line)", ctx.source, 1)
    ranks, nodes = int(launch.group(2)), int(launch.group(3))
    cmd_m = re.search(r"^Command line used: (.*)$", text, re.M)
    command = cmd_m.group(1).strip() if cmd_m else None
    opts = _args(command) if command else {}
    items_m = re.search(r"^\s*(\d+) tasks, (\d+) (files/directories|files|directories)\s*$", text, re.M)
    items_per_rank = (int(items_m.group(2)) // max(1, int(items_m.group(1)))) if items_m else _int_opt(opts, "n")
    unique = bool(opts.get("u"))
    depth = _int_opt(opts, "z") or 0
    per_dir = _int_opt(opts, "I")
    path_m = re.search(r"^Path\s*:\s*(\S.*?)\s*$", text, re.M)
    path = path_m.group(1) if path_m else (opts["d"].split("@")[0] if isinstance(opts.get("d"), str) else None)
    if per_dir is None and depth == 0 and items_per_rank is not None:
        per_dir = items_per_rank if unique else items_per_rank * ranks
    return _Setup(version=launch.group(1).split("-", 1)[1], ranks=ranks, nodes=nodes, command=command, opts=opts,
                  items_per_rank=items_per_rank, unique=unique, one_file=bool(opts.get("S")), depth=depth,
                  per_dir=per_dir, file_size=_int_opt(opts, "w"),
                  api=opts.get("a") if isinstance(opts.get("a"), str) else "POSIX", path=path)


def _summary_start(lines: list[str], ctx: ImportContext) -> int:
    """The index of the summary table's title line."""
    # "SUMMARY rate (in ops/sec): (of N iterations)" since mdtest 3; "SUMMARY: (of N iterations)" in 1.9
    start = next((i for i, l in enumerate(lines)
                  if l.strip().startswith("SUMMARY rate") or l.strip().startswith("SUMMARY: (of")), None)
    if start is None:
        raise ImportFormatError("truncated mdtest output: no 'SUMMARY rate' table (did mdtest stop early?)",
                                ctx.source, len(lines))
    return start


def _notes(setup: _Setup, reps: int | None) -> str:
    notes = ["every task on one single file (-S)" if setup.one_file
             else "unique directory per task (-u)" if setup.unique else "all tasks in shared directories"]
    if setup.depth:
        notes.append(f"tree depth {setup.depth}, branching {_int_opt(setup.opts, 'b') or 1}")
    if reps and reps > 1:
        notes.append(f"mean of {reps} iterations; 95% CI computed (Student t) from mdtest's Std Dev")
    return "; ".join(notes)


def _rows(lines: list[str], start: int, ctx: ImportContext) -> Iterator[tuple[int, re.Match]]:
    """The summary table's lines after the title, as (index, match); at least one, or an error."""
    seen_rows = 0
    for j in range(start + 1, len(lines)):
        s = lines[j].strip()
        if not s or set(s) <= set("- ") or s.startswith("Operation"):
            if seen_rows and not s:
                break
            continue
        if s.startswith("--") or s.startswith("SUMMARY"):
            break
        m = _ROW.match(lines[j])
        if not m:
            raise ImportFormatError(f"unreadable mdtest summary line: {s!r} (truncated?)", ctx.source, j + 1)
        seen_rows += 1
        yield j, m
    if not seen_rows:
        raise ImportFormatError("mdtest 'SUMMARY rate' table has no lines (truncated?)", ctx.source, start + 1)


def _row_run(m: re.Match, op: str, setup: _Setup, reps: int | None, notes: str, date: str | None,
             ctx: ImportContext) -> Run | None:
    """One summary line's run (None when its mean rate is zero)."""
    vmax, vmin, mean, sd = (float(m.group(k)) for k in (2, 3, 4, 5))
    if any(v != v or v < 0 for v in (vmax, vmin, mean, sd)):
        raise ValueError(f"{m.group(1).strip()}: negative or undefined rate")
    if mean == 0:
        return None
    low, high = ci95(mean, sd, reps)
    prov = Provenance(source=ctx.source, command=setup.command, tool="mdtest", tool_version=setup.version,
                      importer="mdtest/1", date=date, kind=ctx.kind)
    ranks, nodes = setup.ranks, setup.nodes
    filesystem, tier = place(ctx, setup.path, "mdtest")
    return make_run(
        system=system_of(ctx), filesystem=filesystem, tier=tier, op=op, api=setup.api,
        layout="fpp" if setup.unique else "shared", nodes=nodes, ranks=ranks,
        ranks_per_node=ranks // nodes if nodes and ranks % nodes == 0 else None,
        items_per_rank=setup.items_per_rank, files_per_dir=setup.per_dir if op.startswith(("file", "dir")) else None,
        file_size=setup.file_size if op.startswith("file") else None, reps=reps, value=mean, unit="ops/s",
        spread={"value_min": vmin, "value_max": vmax, "value_sd": sd, "ci95_low": low, "ci95_high": high},
        notes=notes, provenance=prov, flags=(ONE_FILE,) if setup.one_file else ())


def parse(data: bytes, ctx: ImportContext) -> list[Run]:
    text = decode(data, ctx.source)
    lines = text.splitlines()
    setup = _setup(text, ctx)
    start = _summary_start(lines, ctx)
    it_m = re.search(r"\(of (\d+) iterations?\)", lines[start])
    reps = int(it_m.group(1)) if it_m else _int_opt(setup.opts, "i")
    notes, date = _notes(setup, reps), _date(text)
    runs: list[Run] = []
    for j, m in _rows(lines, start, ctx):
        op = OPS.get(" ".join(m.group(1).split()).lower())
        if op is None:
            continue
        try:
            run = _row_run(m, op, setup, reps, notes, date, ctx)
        except (ValueError, IOAdvisorError) as e:
            raise ImportFormatError(str(e), ctx.source, j + 1) from None
        if run is not None:
            runs.append(run)
    if not any(l.startswith("-- finished at") for l in lines[start:]):
        raise ImportFormatError("truncated mdtest output: no '-- finished at' line after the summary",
                                ctx.source, len(lines))
    return runs


register("mdtest", sniff, parse)
