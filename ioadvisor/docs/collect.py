"""Gather what the guide shows for one system: measured tables per file system (every value tied to its run),
the runs' provenance, and the published comparisons. Values only, no rendering."""
from __future__ import annotations

import hashlib
import heapq
import re
import statistics
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..kb import KB
from ..kb import guide as kb_guide
from ..model.run import META_OPS
from ..model.types import Center, FileSystem
from ..util import cycles_paused

# Up to this many runs per file system the tables list every run; above it they list groups of runs with the
# same settings (median, range, count), so a system with 100,000 runs still gives a readable page. A run shown as
# a measurement of a file system is not a production job's (kb.guide.MEASUREMENT_SQL).
ROW_LIMIT = 300
# Most groups shown per file system and most runs listed on a provenance page (runs linked from a table are
# always listed).
GROUP_LIMIT = 200
PROVENANCE_LIMIT = 1000


def slug(name: str) -> str:
    """A file-name-safe page name. A name that does not survive the lower-case ASCII spelling (Japanese,
    accented letters; nothing left at all) gets a short hash of the name too, so it has a page of its own."""
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not s or not name.isascii():
        return f"{s or 'x'}-{_short_hash(name)}"
    return s


def _short_hash(name: str) -> str:
    return hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def unique_slugs(names: list[str]) -> dict[str, str]:
    """Page names for `names`, all different: where two names share a slug ("Foo Bar", "foo-bar"), each of
    them gets a short hash of its own name. The same name always gets the same page in the same company."""
    base = {n: slug(n) for n in names}
    count: dict[str, int] = {}
    for s in base.values():
        count[s] = count.get(s, 0) + 1
    out = {n: (s if count[s] == 1 else f"{s}-{_short_hash(n)}") for n, s in base.items()}
    assert len(set(out.values())) == len(out), "page names must be unique"
    return out


def fmt_num(v: float | None) -> str:
    """A value as a reader wants it: 3 significant digits for large numbers, no float noise."""
    if v is None:
        return "-"
    if v == int(v) and abs(v) < 1e7:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


LITE_COLUMNS = ("id", "filesystem", "op", "api", "layout", "collective", "access", "nodes", "ranks",
                "stripe_count", "stripe_size", "transfer_size", "unit", "value", "value_given", "unit_given",
                "value_min", "value_max", "ci95_low", "ci95_high", "citation", "source_hash", "seq", "origin", "flags")
# A run as far as tables and plots need it: read straight from sqlite, so 100,000 runs cost little.
Lite = namedtuple("Lite", LITE_COLUMNS)
_VALUE = LITE_COLUMNS.index("value")


@dataclass
class Row:
    op: str
    api: str
    layout: str
    collective: str
    nodes: str
    ranks: str
    stripe_count: str
    stripe_size: str
    transfer_size: str
    value: str             # as the source gave it (or the median of a group)
    unit: str
    given: str             # the value as its source gave it, where that was in another unit ("6 GB/s"), else ""
    spread: str            # ci95, min-max or "-"
    count: int
    run_id: str            # the run the value links to
    citation: str
    flags: tuple[str, ...] = ()   # evidence flags of the run (of any run of a group)


@dataclass
class FsSection:
    name: str
    slug: str
    info: FileSystem | None
    total_runs: int
    grouped: bool
    rows: list[Row]
    hidden_rows: int
    runs: list[Lite] = field(default_factory=list)      # for the plots
    plots: list[dict[str, Any]] = field(default_factory=list)
    points: dict[str, list[Lite]] | None = None         # for the plots of a grouped section (plots.section_plots)


@dataclass
class SystemData:
    name: str
    slug: str
    center: Center | None
    sections: list[FsSection]
    comparisons: list[dict[str, Any]]
    provenance: list[ProvEntry]
    provenance_total: int
    total_runs: int
    ci_runs: list[Lite] = field(default_factory=list)
    plots: list[dict[str, Any]] = field(default_factory=list)


def fmt_size(n: int | float | None) -> str:
    """A size in bytes in binary units, in the guide's one number format: "954 MiB" (not "953.674MiB"),
    "1 MiB", "1.5 GiB", "512 B"."""
    if n is None:
        return "-"
    for unit, mult in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            return f"{fmt_num(n / mult)} {unit}"
    return f"{fmt_num(n)} B"


def _given(value: float, unit_given: str | None, unit: str) -> str:
    """The value as its source wrote it, where that was another unit than the one every table uses."""
    return f"{fmt_num(value)} {unit_given}" if unit_given and unit_given != unit else ""


def _setting(v: Any, size: bool = False) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return fmt_size(v) if size else str(v)


def _spread(r: Lite) -> str:
    if r.ci95_low is not None and r.ci95_high is not None:
        return f"ci95 {fmt_num(r.ci95_low)}-{fmt_num(r.ci95_high)}"
    if r.value_min is not None and r.value_max is not None and fmt_num(r.value_min) != fmt_num(r.value_max):
        return f"{fmt_num(r.value_min)}-{fmt_num(r.value_max)}"
    return "-"                    # no spread stated, or one repetition (min = max says nothing)


def _settings(r: Lite) -> dict[str, str]:
    return dict(op=r.op, api=_setting(r.api), layout=_setting(r.layout), collective=_setting(r.collective),
                nodes=_setting(r.nodes), ranks=_setting(r.ranks), stripe_count=_setting(r.stripe_count),
                stripe_size=_setting(r.stripe_size, True), transfer_size=_setting(r.transfer_size, True))


def _run_row(r: Lite) -> Row:
    given = r.value_given if r.value_given is not None else r.value
    return Row(**_settings(r), value=fmt_num(r.value), unit=r.unit, given=_given(given, r.unit_given, r.unit),
               spread=_spread(r), count=1, run_id=r.id,
               citation=r.citation or "", flags=_flags(r))


def _flags(r: Lite) -> tuple[str, ...]:
    return tuple(r.flags.split(",")) if r.flags else ()


def _key(values: tuple) -> tuple:
    """Sort key for settings tuples: None last, numbers as numbers (a column never mixes types)."""
    return tuple([(v is None, "" if v is None else v) for v in values])


def _group_key(r: Lite) -> tuple:
    return (r.op, r.api, r.layout, r.collective, r.access, r.nodes, r.ranks, r.stripe_count, r.stripe_size,
            r.transfer_size, r.unit)


def _group_rows(runs: list[Lite]) -> list[Row]:
    groups: dict[tuple, list[Lite]] = {}
    for r in runs:
        groups.setdefault(_group_key(r), []).append(r)
    rows = []
    for key in sorted(groups, key=_key):
        g = sorted(groups[key], key=lambda r: (r.value, r.id))
        med = g[(len(g) - 1) // 2]                 # the median run itself, so the link points at a real value
        lo, hi = g[0].value, g[-1].value
        rows.append(Row(**_settings(med), value=fmt_num(med.value), unit=med.unit,
                        given="",
                        spread=f"{fmt_num(lo)}-{fmt_num(hi)}" if fmt_num(lo) != fmt_num(hi) else
                        (_spread(med) if len(g) == 1 else "-"),
                        count=len(g), run_id=med.id, citation=med.citation or "",
                        flags=tuple(sorted({f for r in g for f in _flags(r)}))))
    return rows


# what a provenance entry shows of a run, read as plain tuples (no Run objects for a thousand runs per system)
_PROV_COLUMNS = ("id", "origin", "system", "filesystem", "op", "value", "value_given", "unit", "unit_given", "source",
                 "citation", "command", "tool", "tool_version", "importer", "date", "job_id", "kind", "notes")
_Prov = namedtuple("_Prov", _PROV_COLUMNS)


# a provenance page's entry: attributes, which the templates read without the failed attribute lookup a dict
# costs Jinja on each of a thousand entries' fifteen fields
ProvEntry = namedtuple("ProvEntry", ("id", "system", "filesystem", "op", "value", "given", "source", "citation",
                                     "command", "tool", "importer", "date", "job_id", "kind", "notes", "origin"))


def _prov_entry(r: _Prov) -> ProvEntry:
    given = r.value_given if r.value_given is not None else r.value
    return ProvEntry(id=r.id, system=r.system, filesystem=r.filesystem or "-", op=r.op,
                     value=f"{fmt_num(r.value)} {r.unit}", given=_given(given, r.unit_given, r.unit),
                     source=r.source, citation=r.citation,
                     command=r.command, tool=" ".join(x for x in (r.tool, r.tool_version) if x) or None,
                     importer=r.importer, date=r.date, job_id=r.job_id, kind=r.kind, notes=r.notes,
                     origin=r.origin)


def _lite(t: tuple) -> Lite:
    c = t[5]                                      # collective: stored as 0/1
    return Lite._make(t if c is None else t[:5] + (bool(c),) + t[6:])


def lite_runs(kb: KB, names: list[str]) -> dict[str, list[Lite]]:
    """The runs of the named systems (keyed by lower-case name), read in one pass over the KB."""
    wanted: dict[str, list[Lite]] = {n.lower(): [] for n in names}
    for t in kb_guide.system_runs(kb, names, LITE_COLUMNS):
        wanted[t[0]].append(_lite(t[1:]))
    return wanted


def _table_row(med: Lite, values: list[float], flags: Iterable[str]) -> Row:
    """A group's table row: its median run, the range of its sorted `values` and their count."""
    lo, hi = values[0], values[-1]
    return Row(
        **_settings(med), value=fmt_num(med.value), unit=med.unit,
        given="",
        spread=f"{fmt_num(lo)}-{fmt_num(hi)}" if fmt_num(lo) != fmt_num(hi) else
        (_spread(med) if len(values) == 1 else "-"),
        count=len(values), run_id=med.id, citation=med.citation or "",
        flags=tuple(sorted(flags)))


def _place(r: Lite, values: list[float], last: tuple | None, curves: dict[str, dict[tuple, list]],
           best: dict[tuple, tuple]) -> None:
    """Put a group (its median run `r`) on the plot curves it belongs to; keep `last` (its largest run without
    an evidence flag, None if it has none: a cache-sized read-back is not the best a layout does on the file
    system) when it is the best of its layout and operation so far."""
    def add(kind: str, point: tuple) -> None:
        curves[kind].setdefault(point, []).append((r, values))

    api = r.api if r.api != "POSIX" else None
    if r.unit == "MiB/s":
        if r.stripe_count is not None:
            add("stripes", (r.op, r.layout, api, r.nodes, r.stripe_count))
        if r.ranks is not None:
            add("clients", (r.op, r.layout, api, r.stripe_count, r.ranks))
        if r.layout in ("fpp", "shared") and last is not None:
            b = best.get((r.layout, r.op))
            if b is None or last[:2] > b[:2]:
                best[(r.layout, r.op)] = last
    elif r.unit == "ops/s" and r.ranks is not None:      # as plots.quantity_of classifies rates
        if r.op in META_OPS:
            add("metadata", (r.op, r.ranks))
        else:
            add("iops", (r.op, r.layout, api, r.ranks))


def _curve_points(pts: dict[tuple, list]) -> list[Lite]:
    """A curve's stand-in runs: per point its single run, or its smallest, median and largest value."""
    out: list[Lite] = []
    for members in pts.values():
        first, v = members[0]
        if len(members) > 1:
            v = []
            for _, values in members:           # each sorted: one sort merges them
                v.extend(values)
            v.sort()
        elif len(v) == 1:
            out.append(first)                   # one run: itself, with its published spread
            continue
        # the run with another value: spliced, not namedtuple's _replace (a keyword lookup per field)
        head, tail = first[:_VALUE], first[_VALUE + 1:]
        out += [Lite._make(head + (x,) + tail) for x in (v[0], _sorted_median(v), v[-1])]
    return out


def _sorted_median(v: list[float]) -> float:
    """statistics.median of a sorted list, without sorting a copy of it first (a point of a million runs)."""
    i = len(v) // 2
    return v[i] if len(v) % 2 else (v[i - 1] + v[i]) / 2


class _SystemRuns:
    """One system's runs as the guide needs them, copied into a temporary table once (kb.guide.SystemTable);
    large file systems are then summarised by sqlite (groups, medians, plot points), never held as objects."""

    def __init__(self, kb: KB, name: str, only: tuple[str, ...] | None = None, but: tuple[str, ...] = ()):
        self.table = kb_guide.SystemTable(kb, name, LITE_COLUMNS, only, but)
        self.counts = self.table.counts
        self.total = sum(self.counts.values())

    def runs(self, fs: str, limit: int | None = None) -> list[Lite]:
        return [_lite(t) for t in self.table.runs(fs, limit)]

    def ci_runs(self) -> list[Lite]:
        return [_lite(t) for t in self.table.ci_runs()]

    def summarise(self, fs: str) -> tuple[list[Row], int, dict[str, list[Lite]]]:
        """The grouped table (its first GROUP_LIMIT rows, and the number of rows left out) and the plot points
        of one file system. sqlite groups the runs by their settings and hands each group's values to Python at
        once, with the group's median run; the rest is per group, not per run. Table: per group of equal
        settings its median run (the lower middle one by value and id, so the link points at a real value),
        range and count; only the rows a page shows are made (a million runs fell into 67,000 groups, whose
        rows took a third of the guide's reading). Plots: stand-ins for the runs that give every plot the same
        points as all the runs would: per plotted point its single run, or its smallest, median and largest
        value (plots draw the median with the range). Held in memory: one value per run."""
        medians, groups = self._group_medians(fs)
        groups_of: list[tuple[tuple, Lite, list[float], set[str]]] = []
        curves: dict[str, dict[tuple, list]] = {"stripes": {}, "clients": {}, "metadata": {}, "iops": {}}
        best: dict[tuple, tuple] = {}
        for rowid, med in medians:
            values, last, flags = groups[rowid]
            groups_of.append((_key(_group_key(med)), med, values, flags))
            _place(med, values, last, curves, best)
        # the best run of each layout and operation, read whole (a bar of one run shows its published spread)
        points: dict[str, list[Lite]] = {"layout": [self._run(b[2]) for b in best.values()]}
        for kind, pts in curves.items():
            points[kind] = _curve_points(pts)
        # sqlite sorts NULL first, the tables put "-" last: the groups' order is Python's. Only the first
        # GROUP_LIMIT are shown: picked, not all sorted (thousands of groups, each key eleven pairs to compare)
        shown = heapq.nsmallest(GROUP_LIMIT, groups_of, key=lambda g: g[0])
        rows = [_table_row(med, values, flags) for _, med, values, flags in shown]
        return rows, len(groups_of) - len(rows), points

    def _group_medians(self, fs: str) -> tuple[list[tuple[int, Lite]], dict[int, tuple[list[float], tuple, set]]]:
        """Per group of equal settings on `fs`: its median run (rowid, run), and by that rowid the group's sorted
        values, its last run without an evidence flag (value, id, rowid; None when every run has one) and the
        evidence flags of its runs."""
        # median's rowid -> sorted values, last run, flags
        groups: dict[int, tuple[list[float], tuple | None, set[str]]] = {}

        class Values:
            """One group's runs as (value, id, rowid, unflagged): the result is the median run's rowid; the values
            and the last unflagged run (the largest by value and id) are kept for the plots, the flags of its
            runs (few runs have any) for the table."""

            def __init__(self) -> None:
                self.runs: list[tuple] = []
                self.flags: set[str] = set()

            def step(self, value: float, rid: str, rowid: int, flags: str | None) -> None:
                self.runs.append((value, rid, rowid, not flags))
                if flags is not None:
                    self.flags.update(flags.split(","))

            def finalize(self) -> int:
                g = self.runs
                if len(g) == 1:                 # most groups of a small system: one run
                    value, rid, med, unflagged = g[0]
                    groups[med] = ([value], (value, rid, med) if unflagged else None, self.flags)
                    return med
                g.sort()
                med = g[(len(g) - 1) // 2][2]
                groups[med] = ([r[0] for r in g], next((r[:3] for r in reversed(g) if r[3]), None), self.flags)
                return med

        medians = self.table.group_medians(fs, _GROUP_COLS, LITE_COLUMNS, Values, lambda t: (t[0], _lite(t[1:])))
        return medians, groups

    def _run(self, rowid: int) -> Lite:
        return _lite(self.table.run(rowid, LITE_COLUMNS))

    def close(self) -> None:
        self.table.close()


# the grouping columns with the most distinct values first: sqlite's sort of a million runs compares fewer
# columns per pair (the largest system summarised in 12% less CPU than in the table's order; the groups are the
# same, and the table sorts them in Python)
_GROUP_COLS = ("ranks", "transfer_size", "stripe_count", "nodes", "stripe_size", "op", "api", "layout", "collective",
               "access", "unit")


def _prov_runs(kb: KB, ids: list[str]) -> dict[str, _Prov]:
    return {t[0]: _Prov._make(t) for t in kb_guide.runs_by_id(kb, ids, _PROV_COLUMNS)}


@dataclass
class Part:
    """What reading some of a system's file systems gives (`read_part`): their runs in all, their sections, per
    section the ids of the runs its provenance page may list after the ones the tables link to (in table order,
    at most PROVENANCE_LIMIT), and their runs that state a 95% confidence interval."""
    total: int
    sections: list[FsSection]
    more: dict[str, list[str]]
    ci: list[Lite]


def _fs_order(name: str) -> tuple[str, str]:
    return name.lower(), name


def collect_system(kb: KB, name: str, center: Center | None) -> SystemData:
    """Everything the pages of one system show, in a stable order: all its file systems read here, as one part.
    A file system with more than ROW_LIMIT runs is summarised in sqlite (memory does not grow with its runs);
    smaller ones are read whole."""
    return assemble(kb, name, center, [read_part(kb, name, center)])


def read_item(kb: KB, name: str, part: int, shares: tuple[tuple[str, ...], ...],
              centers: dict[str, Center]) -> SystemData | Part:
    """A reading plan's item (`reading_plan`) read in a worker: the whole system (its SystemData) where it is not
    shared out (no `shares`), else the part `part` of it (the parent assembles the parts)."""
    center = centers.get(name.lower())
    if not shares:
        return collect_system(kb, name, center)
    if part < len(shares):
        return read_part(kb, name, center, only=shares[part])
    return read_part(kb, name, center, but=tuple(fs for share in shares for fs in share))


def read_part(kb: KB, name: str, center: Center | None, only: tuple[str, ...] | None = None,
              but: tuple[str, ...] = ()) -> Part:
    """The file systems of system `name` that `only` names (all where None), but none that `but` names.

    Python's cyclic garbage collector is paused meanwhile: reading makes a tuple per run or group and holds
    them until the system is summarised, none of them in a cycle, and the collections it triggered went
    through them again and again (6% of reading the small systems). It runs again afterwards."""
    with cycles_paused():
        return _read_part(kb, name, center, only, but)


def _read_part(kb: KB, name: str, center: Center | None, only: tuple[str, ...] | None,
               but: tuple[str, ...]) -> Part:
    src = _SystemRuns(kb, name, only, but)
    try:
        fs_info = {f.name: f for f in (center.filesystems if center else ())}
        sections, more = [], {}
        for fs in sorted(src.counts, key=_fs_order):
            total = src.counts[fs]
            points = None
            if total > ROW_LIMIT:
                (rows, hidden, points), fs_runs = src.summarise(fs), []
                more[fs] = src.table.ids(fs, PROVENANCE_LIMIT)
            else:
                fs_runs = sorted(src.runs(fs), key=lambda r: _key(_group_key(r)) + ((False, r.value), (False, r.id)))
                rows = [_run_row(r) for r in fs_runs]
                hidden = max(0, len(rows) - GROUP_LIMIT)
                rows = rows[:GROUP_LIMIT]
                more[fs] = [r.id for r in fs_runs[:PROVENANCE_LIMIT]]
            sections.append(FsSection(fs, slug(fs), fs_info.get(fs), total, total > ROW_LIMIT, rows, hidden,
                                      fs_runs, points=points))
        return Part(src.total, sections, more, src.ci_runs())
    finally:
        src.close()


def assemble(kb: KB, name: str, center: Center | None, parts: list[Part]) -> SystemData:
    """The system's data from its parts, however its file systems were shared out among them: the sections of
    every file system with runs or in the center's description, by name; the provenance page's runs (every run
    a table links to, then others up to the limit, in table order); the runs with a confidence interval in the
    guide's order (the user's runs first, then by source and place in it: the order is total)."""
    fs_info = {f.name: f for f in (center.filesystems if center else ())}
    read = {sec.name: sec for p in parts for sec in p.sections}
    more = {fs: ids for p in parts for fs, ids in p.more.items()}
    sections = [read.get(fs) or FsSection(fs, slug(fs), fs_info.get(fs), 0, False, [], 0, [])
                for fs in sorted(set(read) | set(fs_info), key=_fs_order)]
    chosen = dict.fromkeys(r.run_id for sec in sections for r in sec.rows)
    for sec in sections:
        for rid in more.get(sec.name, ()):
            if len(chosen) >= PROVENANCE_LIMIT:
                break
            chosen.setdefault(rid)
    ci = sorted((r for p in parts for r in p.ci), key=lambda r: (r.source_hash, r.seq))
    ci.sort(key=lambda r: r.origin, reverse=True)            # a stable sort: "user" before "reference"
    full = _prov_runs(kb, list(chosen))
    order = {rid: i for i, rid in enumerate(chosen)}
    prov = [_prov_entry(full[rid]) for rid in sorted(full, key=order.__getitem__)]
    comps = sorted(kb.comparisons(name), key=lambda c: (c.get("filesystem") or "", c.get("op") or "",
                                                        c.get("factor") or "", str(c.get("better")),
                                                        str(c.get("worse")), c.get("citation") or ""))
    total = sum(p.total for p in parts)
    return SystemData(name, slug(name), center, sections, comps, prov, total, total, ci)


def reading_plan(kb: KB, names: list[str], workers: int) -> list[tuple[str, int, tuple[tuple[str, ...], ...]]]:
    """What `workers` processes read of the systems `names`, as items (name, part, shares) for `read_item`, the
    costliest first (by the per-system summary's sizes, which order and share only: what is read is the same).
    A system larger than one worker's even share of the runs is read in up to `workers` parts, its file systems
    shared out by size (two file systems of 444,000 runs each go to different workers): `shares` lists those of
    every part but the last, which reads the rest (a file system the summary does not know included)."""
    fs_size: dict[str, dict[str, int]] = {}
    for db in ("main", "ref") if kb.reference else ("main",):
        for system, fs, n in kb_guide.runs_per_fs(kb, db):
            sizes = fs_size.setdefault(system, {})
            sizes[fs] = sizes.get(fs, 0) + (n or 0)
    total = sum(sum(f.values()) for f in fs_size.values())
    items: list[tuple[int, str, int, tuple]] = []
    for n in names:
        sizes = fs_size.get(n.lower(), {})
        size = sum(sizes.values())
        m = min(workers, len(sizes))
        if m < 2 or size * workers <= total:
            items.append((size, n, 0, ()))
            continue
        shares: list[list[str]] = [[] for _ in range(m)]
        load = [0] * m
        for fs in sorted(sizes, key=lambda f: (-sizes[f], f)):
            k = load.index(min(load))
            shares[k].append(fs)
            load[k] += sizes[fs]
        items += [(load[k], n, k, tuple(tuple(sorted(s)) for s in shares[:-1])) for k in range(m)]
    return [(n, k, shares) for _, n, k, shares in sorted(items, key=lambda i: (-i[0], i[1].lower(), i[1], i[2]))]


def system_names(kb: KB, centers: list[Center], only: bool) -> list[str]:
    """Systems to document: the given centers only (only=True), else every system with runs, comparisons or a
    center description."""
    names = {c.name for c in centers}
    if not only:
        # a system whose only runs are production jobs' has no measurement
        names |= {n for n in kb.systems() if kb_guide.has_measurements(kb, n)}
        names |= {c["system"] for c in kb.comparisons()}
    # the KB matches system names without regard to case: "HA8000" and "ha8000" are one system, one page
    one: dict[str, str] = {}
    for n in sorted(names):
        one.setdefault(n.lower(), n)
    return sorted(one.values(), key=str.lower)


def median(values: list[float]) -> float:
    return statistics.median(values)
