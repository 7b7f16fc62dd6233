"""`ioadvise kb ...`: import, list, show, stats, export, publish, delete, relabel, check."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..kb import KB, RunFilter
from ..model.units import format_size
from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, print_json, printable, printable_table, progress_bar

app = command_app()

kb_app = typer.Typer(help="The knowledge base of measured runs.", no_args_is_help=True)
app.add_typer(kb_app, name="kb")


def _files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file()
                              and not any(part.startswith(".") for part in f.relative_to(p).parts)))
        else:
            out.append(p)
    return out


@kb_app.command("import")
def import_(
    files: Annotated[list[Path], typer.Argument(help="Result files or directories of result files.")],
    fmt: Annotated[str, typer.Option("--format", "-f",
                                     help="auto|ior|mdtest|fio|iozone|csv|darshan|bench|jobrecord")] = "auto",
    system: Annotated[Optional[str], typer.Option(help="System the runs were measured on (default for IOR, mdtest, "
                                                       "fio, IOzone outputs and Darshan logs: the name of --center)."
                                                  )] = None,
    filesystem: Annotated[Optional[str], typer.Option(help=(
        "File system or tier name (default for IOR, mdtest and fio outputs: the center's file system whose mount "
        "holds the test path; a warning where none does)."))] = None,
    center: Annotated[Optional[str], typer.Option(
        help="Center file or name ($IOADVISE_CENTERS, shipped) whose node_memory and rated bandwidths flag runs that measured a "
             "cache or exceed the peak, whose mounts must hold a Darshan log's files for it to add runs, and "
             "whose mounts place IOR, mdtest and fio runs (default: the center named like the system).")] = None,
    kb: KBOption = None,
    json_out: JsonOption = False,
) -> None:
    """Import benchmark outputs; each file is one transaction, and a file imported before adds nothing."""
    with cli_errors():
        from ..ingest import import_file
        results = []
        if center is not None:
            from ..center import load_center
            center = load_center(center)           # a bad center file stops the import before anything is read
        paths = _files(files)
        # what can be refused before reading is refused before the KB is made or a file imported
        if fmt != "auto":
            from ..importers import get
            get(fmt)
        missing = next((p for p in paths if not os.path.lexists(p)), None)
        if missing is not None:
            from ..errors import UsageError
            raise UsageError(f"{missing}: no such file")
        try:
            with KB.open(kb) as store:
                sizes = [_size(p) for p in paths]
                with progress_bar(json_out, unit="bytes") as prog:
                    task = prog.add_task("importing", total=sum(sizes) or None)
                    done = 0
                    for p, size in zip(paths, sizes):
                        prog.update(task, description=f"importing {p.name}")

                        def step(read: int, _total: int, base: int = done) -> None:
                            prog.update(task, completed=base + min(read, size))
                        results.append(import_file(store, p, fmt, system=system, filesystem=filesystem,
                                                   center=center, progress=step))
                        done += size
                        prog.update(task, completed=done)
        finally:
            # the files imported before a bad one stay imported (each is its own transaction): they are reported
            # before the error, so that a stopped import does not look like one that added nothing
            if results or not sys.exc_info()[0]:
                _report_imports(results, center, json_out)


def _report_imports(results: list, center: Any, json_out: bool) -> None:
    """One line per file (or the JSON list); each file's warnings on stderr after its line, with --json too:
    its runs were added, but not as the user may think."""
    from .common import warn
    if json_out:
        for r in results:
            for w in r.warnings:
                warn(f"{r.path}: {w}")
        print_json([r.__dict__ for r in results])
        return
    for r in results:
        state = "already in the KB" if r.skipped and not r.note else f"{r.runs} run(s) added"
        if r.skipped and center is not None:
            state += f" (`ioadvise kb check --center {center.name}` judges their flags again)"
        console.print(printable(f"{r.path}: {r.format}, {state}" + (f"; {r.note}" if r.note else "")),
                      highlight=False, markup=False)
        for w in r.warnings:
            warn(f"{r.path}: {w}")


def _size(p: Path) -> int:
    try:
        return p.stat().st_size if p.is_file() else 0
    except OSError:
        return 0


def _filter(system, filesystem, op, api, layout, kind, origin, source, limit=None) -> RunFilter:
    return RunFilter(system=system, filesystem=filesystem, op=op, api=api, layout=layout, kind=kind,
                     origin=origin, source=source, limit=limit)


SystemOpt = Annotated[Optional[str], typer.Option(help="Only this system.")]
FsOpt = Annotated[Optional[str], typer.Option(help="Only this file system.")]
OpOpt = Annotated[Optional[str], typer.Option(help="Only this operation (write, read, file_create, ...).")]
ApiOpt = Annotated[Optional[str], typer.Option(help="Only this API (POSIX, MPIIO, HDF5).")]
LayoutOpt = Annotated[Optional[str], typer.Option(help="Only shared or fpp.")]
KindOpt = Annotated[Optional[str], typer.Option(help="Only benchmark, reference or production runs.")]
OriginOpt = Annotated[Optional[str], typer.Option(help="Only user or reference runs.")]
SourceOpt = Annotated[Optional[str], typer.Option(help="Only runs whose source contains this text.")]


def _fmt_value(v: float | None) -> str:
    return "-" if v is None else (f"{v:,.1f}" if v < 1e6 else f"{v:,.0f}")


@kb_app.command("list")
def list_(
    system: SystemOpt = None, filesystem: FsOpt = None, op: OpOpt = None, api: ApiOpt = None,
    layout: LayoutOpt = None, kind: KindOpt = None, origin: OriginOpt = None, source: SourceOpt = None,
    limit: Annotated[int, typer.Option(help="Rows shown in the terminal (JSON is always complete).")] = 50,
    kb: KBOption = None, json_out: JsonOption = False,
) -> None:
    """List measured runs. `--json` prints every matching run; the table shows the first `--limit`."""
    with cli_errors():
        with KB.open(kb, create=False) as store:
            flt = _filter(system, filesystem, op, api, layout, kind, origin, source)
            if json_out:
                print_json(store.records(flt))
                return
            total = store.count(flt)
            shown = store.runs(RunFilter(**{**flt.__dict__, "limit": limit}))
        cols = ("id", "system", "fs", "op", "api", "layout", "coll", "nodes", "ranks", "xfer", "stripes",
                "value", "flags", "citation")
        rows = []
        for r in shown:
            coll = "-" if r.collective is None else ("yes" if r.collective else "no")
            value = _fmt_value(r.value_given if r.value_given is not None else r.value)
            rows.append((r.id, r.system, r.filesystem or "-", r.op, r.api or "-", r.layout or "-", coll,
                         str(r.nodes or "-"), str(r.ranks or "-"), format_size(r.transfer_size),
                         str(r.stripe_count if r.stripe_count is not None else "-"),
                         f"{value} {r.unit_given or r.unit}", ",".join(r.flags) or "-",
                         r.provenance.citation or Path(r.provenance.source).name))
        # a column with one value in every shown row is said once above the table, so the table fits a terminal
        always = {"id", "op", "value", "citation"}
        # (with one row, only its empty columns: a lone run is shown in full)
        common = {i: rows[0][i] for i, c in enumerate(cols)
                  if rows and c not in always and len({row[i] for row in rows}) == 1
                  and (len(rows) > 1 or rows[0][i] == "-")}
        keep = [i for i in range(len(cols)) if i not in common]
        same = ", ".join(f"{cols[i]} {v}" for i, v in common.items() if v != "-")
        head = (f"{total} run(s)" + (f", first {len(shown)} shown" if total > len(shown) else "")
                + (f"; in every row shown: {same}" if same else ""))
        # plain text, not a rich table: rich's import and layout would be a third of this command's time.
        # Every column keeps its full width; only the citation gives way (`kb show` has it in full).
        from .text import echo, table, terminal_width, wrap
        width = terminal_width()
        echo(wrap(head, width))
        if rows:
            echo(table([cols[i] for i in keep], [[row[i] for i in keep] for row in rows], width=width,
                       right=("nodes", "ranks", "value", "stripes"), shrink="citation"))
        flagged = sorted({f for r in shown for f in r.flags})
        if flagged:
            from ..center.evidence import explain
            echo(wrap("flags (left out of fits): " + "; ".join(f"{f}: {explain(f)}" for f in flagged), width))


@kb_app.command("show")
def show(run_id: Annotated[str, typer.Argument(help="Run id (a unique prefix is enough).")],
         kb: KBOption = None, json_out: JsonOption = False) -> None:
    """Show one run with all its settings and provenance."""
    with cli_errors():
        with KB.open(kb, create=False) as store:
            data = store.get_record(run_id)
        if json_out:
            print_json(data)
            return
        from ..center.evidence import explain
        table = printable_table(show_header=False, title=f"run {data['id']}")
        for k, v in data.items():
            if k == "flags":
                v = "; ".join(f"{f} ({explain(f)})" for f in v) + "; left out of fits" if v else None
            elif isinstance(v, dict):
                v = ", ".join(f"{a}={b}" for a, b in v.items() if b not in (None, "")) or "-"
            table.add_row(k, "-" if v is None else str(v))
        console.print(table)


@kb_app.command("stats")
def stats(kb: KBOption = None, json_out: JsonOption = False) -> None:
    """Counts of runs per origin, system, operation and kind."""
    with cli_errors():
        with KB.open(kb, create=False) as store:
            s = store.stats()
        if json_out:
            print_json(s)
            return
        pub = s["published"]
        ref = s["reference"] + (f" (published snapshot {pub['snapshot']}, {pub['published_at']})" if pub else "")
        made = "" if s["exists"] else " (not made yet: the first import or bench run makes it)"
        console.print(f"KB: {printable(str(s['path']))}{made}\nreference: {printable(str(ref))}\n"
                      f"runs: {s['runs']} from {s['sources']} imported source(s); comparisons: {s['comparisons']}",
                      highlight=False)
        for key in ("by_origin", "by_system", "by_op", "by_kind"):
            console.print(f"{key[3:]}: " + ", ".join(f"{k} {v}" for k, v in s[key].items()), highlight=False)
        if s["quarantined"]:
            console.print(f"quarantined: {s['quarantined']} run(s) that fail validation, set aside at an upgrade "
                          "(`ioadvise kb delete --quarantined` lists them)", highlight=False)


@kb_app.command("export")
def export(
    fmt: Annotated[str, typer.Option("--format", "-f", help="csv (canonical) or json")] = "csv",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="File to write (default stdout).")] = None,
    system: SystemOpt = None, op: OpOpt = None, origin: OriginOpt = None,
    kb: KBOption = None,
) -> None:
    """Export runs as the canonical CSV (re-importable) or JSON."""
    with cli_errors():
        from ..errors import UsageError
        from ..importers.csv import export_csv
        from ..util import atomic_write, to_json
        if fmt not in ("csv", "json"):
            raise UsageError(f"unknown export format {fmt!r} (use csv or json)")
        with KB.open(kb, create=False) as store:
            flt = RunFilter(system=system, op=op, origin=origin)
            text = export_csv(store.runs(flt)) if fmt == "csv" else to_json(store.records(flt), indent=2) + "\n"
        if output:
            atomic_write(output, text)
        else:
            typer.echo(text, nl=False)


@kb_app.command("publish")
def publish_cmd(
    target: Annotated[Path, typer.Argument(help="File to write, or a directory (kb.sqlite in it), on the file "
                                                "system users read; users name it in IOADVISE_CENTER_KB.")],
    kb: KBOption = None, json_out: JsonOption = False,
) -> None:
    """Publish this KB with the reference data as one read-only file for every user (replaced atomically)."""
    with cli_errors():
        from ..advise.fits import store_published
        from ..center import resolve_center
        from ..kb import default_kb_path
        from ..kb.publish import publish
        # the fits every user's advice needs, made once here and stored in the snapshot
        res = publish(kb if kb is not None else default_kb_path(), target,
                      derive=lambda store: store_published(store, lambda k, s: resolve_center(s, None, k)))
        if json_out:
            print_json(res)
            return
        console.print(f"{res['path']}: published snapshot {res['snapshot']}, {res['runs']} run(s) "
                      f"({res['center_runs']} of this KB, {res['reference_runs']} reference); users read it "
                      f"with IOADVISE_CENTER_KB={res['path']}", highlight=False, markup=False, soft_wrap=True)


@kb_app.command("validate")
def validate_cmd(
    system: Annotated[Optional[str], typer.Option(help="Only this system (its figures are the same as in a full run).")] = None,
    sweeps: Annotated[bool, typer.Option("--sweeps", help="Sweep-out mode: hide each group of runs that differ only in "
                                         "stripe count, layout or collective mode, refit, and score the advice "
                                         "against the baselines always-1-stripe, all-OSTs and the size table.")] = False,
    kb: KBOption = None,
    json_out: JsonOption = False,
) -> None:
    """Check the performance model on held-out runs: prediction error, interval coverage, advice regret."""
    with cli_errors():

        from ..advise.validate import FOLDS, LOO_MAX, SAMPLE_ABOVE, format_sweep_table, sweep_validate, validate
        with KB.open(kb, create=False) as store:
            rep = sweep_validate(store, system) if sweeps else validate(store, system)
        if json_out:
            print_json(rep)
            return
        if sweeps:
            console.print(format_sweep_table(rep), highlight=False, markup=False)
            return
        t = printable_table(title=f"Held-out validation (leave-one-out; {FOLDS}-fold above {LOO_MAX} runs per system; "
                                  f"a sample above {SAMPLE_ABOVE:,})", title_justify="left")
        for col in ("system", "runs", "median |err|", "p90 |err|", "within clients", "extrapolated",
                    "90% coverage", "not predictable", "regret cases", "median regret"):
            # system names are never cut ("Dell-EE-Lustre-…" names no system): the figures wrap instead
            t.add_column(col, justify="left" if col == "system" else "right", no_wrap=col == "system",
                         min_width=max(len(n) for n in (*rep["systems"], "overall")) if col == "system" else None)

        def pct(v: float | None) -> str:
            return "-" if v is None else f"{100 * v:.1f}%"

        def part(d: dict) -> str:
            return f"{pct(d['median_abs_error'])} ({d['n']})"

        rows = list(rep["systems"].items()) + [("overall", rep["overall"])]
        for name, s in rows:
            t.add_row(name, str(s["n"]), pct(s["median_abs_error"]), pct(s["p90_abs_error"]),
                      part(s["within_measured_clients"]), part(s["extrapolated_clients"]), pct(s["coverage_90"]),
                      str(s.get("not_predictable", 0)), str(s["regret_cases"]),
                      "-" if s["median_regret"] is None else f"{s['median_regret']:.3f}")
        console.print(t)
        for name, s in rows:
            console.print(f"{name}: {s['verdict']}", highlight=False, markup=False)
        console.print("within clients / extrapolated: median |err| (runs) of held-out runs whose client count lies "
                      "inside / outside the client counts of the runs the model was fitted on; not predictable: "
                      "runs that are the only one of their operation (no model once held out, the advice gives no "
                      "number), not in the error figures; regret: best measured / measured at the advised stripe "
                      "count, each stripe sweep hidden from the fit (--sweeps for all factors and the baselines)",
                      highlight=False)



IdsArg = Annotated[Optional[list[str]], typer.Argument(help="Run ids (unique prefixes are enough).", show_default=False)]
YesOpt = Annotated[bool, typer.Option("--yes", help="Do it (without --yes only say what would change).")]


def _repair_report(rows: list[dict], action: str, done: dict | None, json_out: bool, listed: bool = False) -> None:
    new_ids = (done or {}).get("ids") or {}      # relabelling changes ids (they follow the content): old -> new
    if json_out:
        print_json({"action": action, "dry_run": done is None, "runs": len(rows),
                    "selected": [{"id": r["id"], "system": r["system"], "filesystem": r["filesystem"], "op": r["op"],
                                  "value": r["value"], "unit": r["unit"], "source": r["source"],
                                  **({"reason": r["reason"]} if "reason" in r else {}),
                                  **({"new_id": new_ids[r["id"]]} if r["id"] in new_ids else {})} for r in rows],
                    **(done or {})})
        return
    for r in ([] if listed else rows[:50]):
        rid = f"{r['id']} -> {new_ids[r['id']]}" if r["id"] in new_ids else r["id"]
        console.print(printable(f"  {rid}  {r['system']}  {r['filesystem'] or '-'}  {r['op']}  "
                                f"{_fmt_value(r['value'])} {r['unit']}  {r['source'] or '-'}"), highlight=False,
                      markup=False)
    if len(rows) > 50:
        console.print(f"  ... and {len(rows) - 50} more", highlight=False, markup=False)
    if done is None:
        past = {"delete": "deleted", "relabel": "relabelled"}[action]
        console.print(f"{len(rows)} run(s) would be {past}; add --yes to do it", highlight=False, markup=False)
    else:
        extra = {k: v for k, v in done.items() if k != "ids" and isinstance(v, int) and v}
        console.print(", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in extra.items()) or "nothing changed",
                      highlight=False, markup=False)


@kb_app.command("delete")
def delete(
    ids: IdsArg = None,
    system: SystemOpt = None, filesystem: FsOpt = None, op: OpOpt = None, api: ApiOpt = None,
    layout: LayoutOpt = None, kind: KindOpt = None, source: SourceOpt = None,
    quarantined: Annotated[bool, typer.Option("--quarantined", help="The runs set aside at an upgrade because "
                                              "they fail validation (see `kb stats`).")] = False,
    yes: YesOpt = False, kb: KBOption = None, json_out: JsonOption = False,
) -> None:
    """Remove runs you imported, by id prefix, source or filter (a dry run unless --yes)."""
    with cli_errors():
        with KB.open(kb, create=False) as store:
            if quarantined:
                rows = store.quarantined()
                done = {"deleted": store.delete_quarantined()} if yes else None
                if not json_out:
                    for r in rows[:50]:
                        console.print(printable(f"  {r['id']}  {r['system']}  {r['op']}  {r['reason']}"),
                                      highlight=False, markup=False)
                _repair_report(rows, "delete", done, json_out, listed=True)
                return
            rows = store.select(ids or (), _filter(system, filesystem, op, api, layout, kind, None, source))
            done = store.delete(rows) if yes and rows else ({"deleted": 0} if yes else None)
        _repair_report(rows, "delete", done, json_out)


@kb_app.command("relabel")
def relabel(
    ids: IdsArg = None,
    to_system: Annotated[Optional[str], typer.Option("--to-system", help="New system name.")] = None,
    to_filesystem: Annotated[Optional[str], typer.Option("--to-filesystem", help="New file system name.")] = None,
    system: SystemOpt = None, filesystem: FsOpt = None, op: OpOpt = None, api: ApiOpt = None,
    layout: LayoutOpt = None, kind: KindOpt = None, source: SourceOpt = None,
    yes: YesOpt = False, kb: KBOption = None, json_out: JsonOption = False,
) -> None:
    """Rename the system or file system of runs you imported (a dry run unless --yes). Their evidence flags are
    judged again by the center of their new name, where there is one."""
    with cli_errors():
        from ..errors import UsageError
        if to_system is None and to_filesystem is None:
            raise UsageError("say what to change: --to-system and/or --to-filesystem")
        with KB.open(kb, create=False) as store:
            rows = store.select(ids or (), _filter(system, filesystem, op, api, layout, kind, None, source))
            # the flags judged as an import without --center judges them: by the center named like the system
            from ..ingest import run_flagger
            done = store.relabel(rows, system=to_system, filesystem=to_filesystem,
                                 flags_of=run_flagger()) if yes else None
        _repair_report(rows, "relabel", done, json_out)


@kb_app.command("check")
def check(
    center: Annotated[str, typer.Option(help="Center file or name (shipped, or in IOADVISE_CENTERS) whose "
                                             "node_memory and rated bandwidths judge the runs.")],
    system: Annotated[Optional[str], typer.Option(help="The system whose runs are judged (default: the "
                                                       "center's name).")] = None,
    yes: YesOpt = False, kb: KBOption = None, json_out: JsonOption = False,
) -> None:
    """Judge the evidence flags of your runs against a center file again: flags added and removed (a dry run
    unless --yes). Runs imported before the center file said node_memory or a rated peak gain their flags."""
    with cli_errors():
        from ..center import load_center
        from ..ingest import run_flagger
        c = load_center(center)
        with KB.open(kb, create=False) as store:
            # judged as an import with --center judges them (an IOR write synced before close is not cache-sized)
            changes = store.check_flags(run_flagger(c), system=system or c.name, apply=yes)
        if json_out:
            print_json({"center": c.name, "system": system or c.name, "dry_run": not yes, "changed": changes})
            return
        for ch in changes[:50]:
            what = ", ".join([f"+{f}" for f in ch["added"]] + [f"-{f}" for f in ch["removed"]])
            console.print(printable(f"  {ch['id']}  {ch['system']}  {ch['filesystem'] or '-'}  {ch['op']}  "
                                    f"{_fmt_value(ch['value'])} {ch['unit']}  {what}"),
                          highlight=False, markup=False, soft_wrap=True)
        if len(changes) > 50:
            console.print(f"  ... and {len(changes) - 50} more", highlight=False, markup=False)
        added = sum(len(ch["added"]) for ch in changes)
        removed = sum(len(ch["removed"]) for ch in changes)
        verb = "changed" if yes else "would change"
        console.print(printable(f"{len(changes)} run(s) of {system or c.name} {verb}: {added} flag(s) added, "
                                f"{removed} removed" + ("" if yes or not changes else "; add --yes to do it")),
                      highlight=False, markup=False, soft_wrap=True)
