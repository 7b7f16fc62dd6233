"""`ioadvise wrap` and `ioadvise submit`: apply I/O settings to a Slurm batch script (and submit it)."""
# no `from __future__ import annotations`: typer reads each option from the command's signature, and
# annotations kept as text would be compiled and evaluated at every start (about 6 ms for advise's)

import difflib
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from . import command_app
from .common import (AccessSize, ApiOpt, BytesPerRank, CollectiveOpt, FilesOpt, JsonOption, KBOption, LayoutOpt,
                     LifetimeOpt, OpOpt, RandomOpt, RanksPerNode, TotalBytes, cli_errors, console, err_console,
                     print_json, printable, warn)

app = command_app()

StripeCount = Annotated[Optional[int], typer.Option("--stripe-count", help="Lustre stripe count for the output "
                                                     "directory (applied only when it is on Lustre).")]
StripeSize = Annotated[Optional[str], typer.Option("--stripe-size", help="Lustre stripe size, e.g. 4MiB.")]
Hints = Annotated[Optional[str], typer.Option("--hints", help="MPI-IO hints KEY=VALUE,KEY=VALUE "
                                               "(written to a ROMIO hints file and the MPI's variables).")]
TierOpt = Annotated[Optional[str], typer.Option("--tier", help="Scratch tier of the center (e.g. beeond): "
                                                 "requested, staged in and out.")]
CenterOpt = Annotated[Optional[str], typer.Option("--center", help="Center config: a .toml file or a shipped "
                                                   "center's name.")]
MpiOpt = Annotated[Optional[str], typer.Option("--mpi", help="MPI: mpich, openmpi, cray, intel or mvapich2, "
                                                "optionally @VERSION, e.g. openmpi@4.1.4 (default: the center's, "
                                                "else mpich).")]
StageIn = Annotated[Optional[list[str]], typer.Option("--stage-in", help="File or directory (relative to the "
                                                       "job's start directory) copied to the tier; repeatable.")]
DiffOpt = Annotated[bool, typer.Option("--diff", help="Also print the change to the script as a unified diff.")]
OutDir = Annotated[Optional[str], typer.Option("--outdir", help="Persistent directory for results (default: "
                                                "#IOADVISE outdir=, else the job's start directory).")]


def _workload(**given) -> dict:
    """The workload options given (as given: `describe` reads them), each value checked as `advise` checks it
    (UsageError naming the option)."""
    from ..errors import ImportFormatError
    from ..job import read_value
    out = {}
    for k, v in given.items():
        if v is None:
            continue
        try:
            read_value(k, v)
        except ImportFormatError as e:
            raise UsageError(f"--{k.replace('_', '-')}: {e.reason}") from None
        out[k] = v
    return out


def _explicit(stripe_count, stripe_size, hints, tier, mpi, outdir, stage_in):
    from ..model.units import parse_size
    from ..slurm.submit import Explicit
    from .advise import parse_hints
    from ..mpiio import parse_mpi
    flavour, version = parse_mpi(mpi) if mpi is not None else (None, None)
    return Explicit(stripe_count=stripe_count, stripe_size=parse_size(stripe_size) if stripe_size else None,
                    hints=parse_hints(hints), tier=tier, mpi=flavour, mpi_version=version, outdir=outdir, stage_in=tuple(stage_in or ()))


def _center(spec: str | None, kb: Path | None = None):
    """The center `spec` names: a center file or name, else a system the KB at `kb` (None: the default one, or
    the center's published snapshot) knows from its runs, as `ioadvise advise --system NAME` finds it."""
    if not spec:
        return None
    from ..center import is_center_file, load_center
    try:
        return load_center(spec)
    except UsageError:
        derived = None if is_center_file(spec) else _center_of_runs(spec, kb)
        if derived is None:
            raise
        return derived


def _center_of_runs(name: str, kb: Path | None):
    """The center derived from the runs of system `name` in the KB at `kb`; None where it holds none (or no KB
    can be opened)."""
    from ..center import resolve_center
    from ..errors import IOAdvisorError
    from ..kb import KB
    try:
        with KB.open(kb, create=False) as store:
            return resolve_center(name, None, store)
    except IOAdvisorError:
        return None


class CenterNotFound(UsageError):
    """`submit --center NAME` named no center: the job still goes (fail open), with a warning that says so."""


def _submit_center(spec: str | None, kb: Path | None = None):
    """The center `submit` wraps for; a name or file that is no center (nor a system of the KB) raises
    CenterNotFound, whose message names it, the known centers and how to list them."""
    from ..center import available_centers, load_center_file
    try:
        return _center(spec, kb)
    except UsageError:
        if Path(spec).exists():
            raise                                   # a center file that is there but broken says what is wrong
        known = ", ".join(load_center_file(p).name for p in available_centers()) or "none"
        raise CenterNotFound(f"--center {spec!r} names no center (known: {known}; `ioadvise systems` lists them "
                             f"with their files): NO I/O settings are applied to this job") from None


def _diff(old: str, new: str, name: str, width: int = 300) -> str:
    """Unified diff for display, lines split as bash splits them; very long lines are shortened (the files
    themselves are not)."""
    from ..slurm.jobscript import script_lines

    def short(text: str) -> list[str]:
        return [printable(line.removesuffix("\n")[:width]) + (" [...]" if len(line) > width else "") + "\n"
                for line in script_lines(text)]
    return "".join(difflib.unified_diff(short(old), short(new), fromfile=name, tofile=f"{name} (wrapped)"))


def _print_diff(old: str, new: str, name: str) -> None:
    """The diff on the terminal, each line made printable (a script's CR or ESC shows as \\r, \\x1b)."""
    from ..slurm.jobscript import script_lines
    shown = "".join(printable(line.removesuffix("\n")) + "\n" for line in script_lines(_diff(old, new, name)))
    console.print(shown, markup=False, highlight=False, end="", soft_wrap=True)


def uncovered(script: str) -> list[str]:
    """What the striping does not reach: the paths the script's commands name outside $IOADVISE_DIR, and
    whether they use $IOADVISE_DIR at all."""
    import re
    from ..slurm.rewrite import command_paths, strip_wrap
    paths = command_paths(script)
    outside = [f"{p} (line {n})" for n, p in paths if not re.match(r"^\$\{?IOADVISE_DIR\b", p)]
    out = []
    if outside:
        out.append("striping for paths your commands name outside $IOADVISE_DIR (lfs setstripe acts only on files "
                   "created below it): " + ", ".join(outside))
    if not re.search(r"\$\{?IOADVISE_DIR\b", strip_wrap(script)):
        out.append("your commands do not use $IOADVISE_DIR: the striping reaches no file unless the application "
                   "writes below it (e.g. srun ./app --out \"$IOADVISE_DIR/out\")")
    return out


def _job_line(spec, st) -> str:
    """The job as the summary names it; without an api in its description, the one its settings were rendered
    for (hints reach MPI-IO), marked assumed."""
    api = spec.api or (f"{st.api} (assumed)" if st is not None else "posix")
    return (f"{spec.nodes} node(s) x {spec.ranks_per_node or '?'} rank(s) per node"
            f" ({spec.sources.get('nodes', 'default')}), {spec.op or 'write'}, {api}")


def summary(w) -> dict:
    """What was decided, for people: the job, the settings, the prediction, why, and what was left alone."""
    from ..mpiio import render
    from ..mpiio.render import explain_hint
    spec, st = w.spec, w.settings
    out: dict = {"job": None, "settings": [], "prediction": None, "why": [], "not_changed": []}
    if spec is not None and spec.nodes:
        out["job"] = _job_line(spec, st)
    if st is None:
        out["not_changed"].append("the script is unchanged: " + "; ".join(w.warnings[-1:]))
        return out
    cmds = render(st.plan())
    below = st.stripe_base or st.outdir or "the output directory"
    if cmds.setstripe:
        out["settings"].append(f"striping: {cmds.setstripe.flags()} on a new directory "
                               f"ioadvise-JOBID below {below} ($IOADVISE_DIR), if it is on Lustre")
    if cmds.hints:
        how = ", ".join(line[len("export "):] for line in cmds.env)
        out["settings"].append(f"MPI-IO hints: {','.join(f'{k}={v}' for k, v in cmds.hints.items())} "
                               f"for {cmds.mpi_label} ({how})")
        out["settings"] += [f"hint {k}={v}: {explain_hint(k, v)}" for k, v in cmds.hints.items()]
    if st.tier is not None:
        staged = (f"stage-in {', '.join(st.stage_in)}; " if st.stage_in else "") + (
            "new files staged out at the end" if st.tier.stage else "not staged")
        out["settings"].append(f"tier {st.tier.name}: {st.tier.request or 'no request'}, {staged}")
    if st.directives:
        out["settings"].append("#SBATCH " + " ".join(st.directives))
    if st.stage_in and (st.tier is None or not st.tier.stage):
        why = "the job uses no scratch tier" if st.tier is None else f"tier {st.tier.name} is not staged"
        out["not_changed"].append(f"stage-in {', '.join(st.stage_in)}: {why}, so nothing is copied in; the job "
                                  f"reads them where they are")
    out["not_changed"] += list(cmds.notes)
    a = w.advice
    if a is not None:
        rec, base = a.recommendation, a.baseline
        p = rec.prediction
        if p.value is not None:
            gain = f", {p.value / base.prediction.value:.1f}x the default" if base.prediction.value else ""
            from ..model.units import format_range, format_rate
            out["prediction"] = (f"{format_rate(p.value, p.unit)} (interval {format_range(p.low, p.high, p.unit)}"
                                 f"{', capped' if p.capped else ''}){gain}")
        else:
            out["prediction"] = "not predicted (no measured runs for this configuration)"
        out["why"] = list(rec.reasons[:4])
        c = rec.config
        if not cmds.lfs and not cmds.hints and st.tier is None:
            out["not_changed"].append(
                f"no striping, hints or tier: the recommendation for this job is {c.filesystem} with "
                f"{'its default striping' if c.stripe_count is None else f'{c.stripe_count} stripe(s)'}, "
                f"{c.layout}, {c.api}; see the reasons above")
        if c.stripe_count is not None and not cmds.lfs and (spec is None or spec.op != "read"):
            out["not_changed"].append("striping: the center does not let users stripe this file system")
    if cmds.lfs:
        out["not_changed"] += uncovered(w.original)
    out["not_changed"].append("your commands, paths and #SBATCH lines (they run unchanged after the block)")
    if not out["settings"]:
        out["settings"].append("none")
    return out


def _print_summary(sm: dict, name: str) -> None:
    from rich.text import Text
    console.print(Text.assemble((printable(name), "bold"), f": {sm['job']}" if sm["job"] else ""), highlight=False)
    for k, title in (("settings", "Settings"), ("prediction", "Predicted"), ("why", "Why"),
                     ("not_changed", "Not changed")):
        v = sm[k]
        if not v:
            continue
        if isinstance(v, str):
            console.print(Text.assemble((f"{title}:", "bold"), f" {printable(v)}"), highlight=False)
            continue
        console.print(Text(f"{title}:", style="bold"), highlight=False)
        for item in v:
            console.print(f"  - {printable(item)}", highlight=False, markup=False)


def _report(w, name: str) -> dict:
    return {"script": name, "changed": w.changed, "source": w.source,
            "settings": w.settings.to_plain() if w.settings else None, "warnings": list(w.warnings),
            "workload": None if w.spec is None or w.spec.nodes is None else {
                "nodes": w.spec.nodes, "ranks_per_node": w.spec.ranks_per_node, "sources": dict(w.spec.sources)},
            "summary": summary(w), "diff": _diff(w.original, w.text, name)}


@app.command("wrap")
def wrap_cmd(
    script: Annotated[Path, typer.Argument(help="The batch script (never modified).", show_default=False)],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the wrapped script.",
                                         show_default=False)],
    stripe_count: StripeCount = None, stripe_size: StripeSize = None, hints: Hints = None,
    tier: TierOpt = None, center: CenterOpt = None, mpi: MpiOpt = None,
    stage_in: StageIn = None, outdir: OutDir = None, kb: KBOption = None, json: JsonOption = False,
    diff: DiffOpt = False,
    nodes: Annotated[Optional[int], typer.Option("-N", "--nodes", help="Nodes (as sbatch -N): advised for, and "
                                                 "written as #SBATCH into the copy.")] = None,
    ntasks: Annotated[Optional[int], typer.Option("-n", "--ntasks", help="Tasks (as sbatch -n), likewise.")] = None,
    ntasks_per_node: Annotated[Optional[int], typer.Option("--ntasks-per-node", help="As sbatch, likewise.")] = None,
    ranks_per_node: RanksPerNode = None, bytes_per_rank: BytesPerRank = None, total_bytes: TotalBytes = None,
    api: ApiOpt = None, layout: LayoutOpt = None, op: OpOpt = None, access_size: AccessSize = None,
    random: RandomOpt = None, files: FilesOpt = None, lifetime: LifetimeOpt = None,
    collective: CollectiveOpt = None,
) -> None:
    """Write a copy of SCRIPT that applies I/O settings: scratch tier with staging, Lustre striping,
    MPI-IO hints, and a JSON record of what was applied next to the job output.

    Without explicit settings and with --center, the settings come from `ioadvise advise` for the
    workload in the script's `#IOADVISE` lines, or given as options (--bytes-per-rank, --api, ...: they win).
    """
    with cli_errors():
        from ..slurm.submit import read_script, wrap_script
        from ..util import atomic_write
        if output.resolve() == script.resolve():
            raise UsageError(f"{output}: the output must not be the script itself (the script is never modified)")
        text = read_script(script)
        ex = _explicit(stripe_count, stripe_size, hints, tier, mpi, outdir, stage_in)
        sb = [f"--{k}={v}" for k, v in (("nodes", nodes), ("ntasks", ntasks), ("ntasks-per-node", ntasks_per_node))
              if v is not None]
        if any(v is not None and v < 1 for v in (nodes, ntasks, ntasks_per_node)):
            raise UsageError("-N, -n and --ntasks-per-node must be at least 1")
        wl = _workload(ranks_per_node=ranks_per_node, bytes_per_rank=bytes_per_rank, total_bytes=total_bytes,
                       api=api, layout=layout, op=op, access_size=access_size, random=random, files=files,
                       lifetime=lifetime, collective=collective)
        w = wrap_script(text, ex, center=_center(center, kb), kb_path=kb, path=str(script), strict=True,
                        sbatch_args=sb, directives=tuple(sb), workload=wl)
        atomic_write(output, w.text, mode=0o755)
        if json:
            print_json({**_report(w, str(script)), "output": str(output)})
            return
        for msg in w.warnings:
            warn(msg)
        _print_summary(summary(w), str(script))
        if diff:
            _print_diff(text, w.text, str(script))
        err_console.print(f"wrote {printable(str(output))}", highlight=False, markup=False, soft_wrap=True)


@app.command("submit", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def submit_cmd(
    ctx: typer.Context,
    script: Annotated[Path, typer.Argument(help="The batch script; further arguments are sbatch options.",
                                           show_default=False)],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the change, do not submit.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Fail when advice fails (default: submit the "
                                         "script unchanged with a warning).")] = False,
    stripe_count: StripeCount = None, stripe_size: StripeSize = None, hints: Hints = None,
    tier: TierOpt = None, center: CenterOpt = None, mpi: MpiOpt = None,
    stage_in: StageIn = None, outdir: OutDir = None, kb: KBOption = None, json: JsonOption = False,
    diff: DiffOpt = False,
    ranks_per_node: RanksPerNode = None, bytes_per_rank: BytesPerRank = None, total_bytes: TotalBytes = None,
    api: ApiOpt = None, layout: LayoutOpt = None, op: OpOpt = None, access_size: AccessSize = None,
    random: RandomOpt = None, files: FilesOpt = None, lifetime: LifetimeOpt = None,
    collective: CollectiveOpt = None,
) -> None:
    """Wrap SCRIPT (as `ioadvise wrap` does), say what was decided (--diff: the change) and submit it with sbatch.

    Options this command does not know are passed to sbatch, e.g.
    `ioadvise submit job.sh --center site.toml -N 2 --time=10`.
    """
    with cli_errors():
        from ..errors import IOAdvisorError
        from ..slurm.submit import merge_cli_constraint, read_script, unchanged, wrap_script
        sbatch_opts = [a for a in ctx.args if a != "--"]
        text = read_script(script)   # unreadable: nothing to submit (exit 2, as sbatch itself would fail)
        try:
            # fail open: a bad option value, center file or KB, or advice that fails, must not stop the job
            ex = _explicit(stripe_count, stripe_size, hints, tier, mpi, outdir, stage_in)
            wl = _workload(ranks_per_node=ranks_per_node, bytes_per_rank=bytes_per_rank, total_bytes=total_bytes,
                           api=api, layout=layout, op=op, access_size=access_size, random=random, files=files,
                           lifetime=lifetime, collective=collective)
            w = wrap_script(text, ex, center=_submit_center(center, kb), kb_path=kb, path=str(script),
                            strict=strict, sbatch_args=sbatch_opts, workload=wl)
        except Exception as e:  # noqa: BLE001 - the promise is that the advisor never stops a job
            if strict:
                if isinstance(e, IOAdvisorError):
                    raise
                raise UsageError(f"advice failed: {e}") from None
            w = unchanged(text, str(e) if isinstance(e, CenterNotFound) else str(e)[:300] or type(e).__name__)
        if w.settings and w.settings.tier and w.changed:
            # a --constraint on the command line replaces the script's; keep the tier's feature in it
            sbatch_opts, _ = merge_cli_constraint(sbatch_opts, w.settings.tier.request)
        report = {**_report(w, str(script)), "sbatch_options": sbatch_opts, "dry_run": dry_run, "job_id": None}
        _submit_and_say(w, report, text, str(script), sbatch_opts, center=center, json=json, diff=diff,
                        dry_run=dry_run)


def _submit_and_say(w, report: dict, text: str, name: str, sbatch_opts: list[str], *, center: str | None,
                    json: bool, diff: bool, dry_run: bool) -> None:
    """Say what was decided, submit (unless dry_run) and report the job id."""
    from ..slurm.submit import sbatch
    # warnings go to stderr with --json too: they say why a job went unchanged; a center that is not there
    # is most likely a typo, so it is said in red, and again once the job is submitted
    loud = [m for m in w.warnings if m.startswith("--center ") and "NO I/O settings" in m]
    for msg in w.warnings:
        _loud(msg) if msg in loud else warn(msg)
    if not json:
        _print_summary(summary(w), name)
        if diff:
            _print_diff(text, w.text, name)
    if not dry_run:
        try:
            report["job_id"] = sbatch(w.text, sbatch_opts, name=Path(name).name)
        except KeyboardInterrupt as e:
            _say_interrupted_sbatch(e, json=json, report=report)
            raise
    if json:
        print_json(report)
    elif report["job_id"]:
        console.print(f"Submitted batch job {report['job_id']}", highlight=False)
    if loud and report["job_id"]:
        _loud(f"job {report['job_id']} was submitted without I/O settings: --center {center!r} is no center")


def _say_interrupted_sbatch(e: KeyboardInterrupt, *, json: bool, report: dict) -> None:
    """What sbatch did before the signal that stopped `submit` (slurm.submit.sbatch waited for it), so that
    the user knows whether the job exists before submitting it again."""
    jid = getattr(e, "sbatch_job_id", None)
    if jid:
        _loud(f"interrupted, but sbatch had already submitted the job: job {jid} is queued (do not submit it "
              f"again; `scancel {jid}` removes it)")
        if json:
            print_json({**report, "job_id": jid})
    elif getattr(e, "sbatch_unknown", False):
        _loud("interrupted while sbatch ran; it was stopped without an answer, so a job may have been submitted: "
              "check `squeue --me` before submitting again")
    else:
        warn("interrupted: sbatch submitted no job")


def _loud(message: str) -> None:
    from rich.text import Text
    err_console.print(Text("warning: " + printable(message), style="bold red"), highlight=False, soft_wrap=True)
