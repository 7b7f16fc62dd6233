"""`ioadvise wrap` and `ioadvise submit`: apply I/O settings to a Slurm batch script (and submit it)."""
from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from . import command_app
from .common import JsonOption, KBOption, cli_errors, console, err_console, print_json

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
OutDir = Annotated[Optional[str], typer.Option("--outdir", help="Persistent directory for results (default: "
                                                "#IOADVISE outdir=, else the job's start directory).")]


def _explicit(stripe_count, stripe_size, hints, tier, mpi, outdir, stage_in):
    from ..model.units import parse_size
    from ..slurm.submit import Explicit
    from .advise import parse_hints
    from ..mpiio import parse_mpi
    flavour, version = parse_mpi(mpi) if mpi is not None else (None, None)
    if stripe_count is not None and (stripe_count == 0 or stripe_count < -1):
        raise UsageError("--stripe-count must be positive (or -1 for all targets)")
    return Explicit(stripe_count=stripe_count, stripe_size=parse_size(stripe_size) if stripe_size else None,
                    hints=parse_hints(hints), tier=tier, mpi=flavour, mpi_version=version, outdir=outdir, stage_in=tuple(stage_in or ()))


def _center(spec: str | None):
    if not spec:
        return None
    from ..center import load_center
    return load_center(spec)


def _diff(old: str, new: str, name: str, width: int = 300) -> str:
    """Unified diff for display; very long lines are shortened (the files themselves are not)."""
    def short(text: str) -> list[str]:
        return [line if len(line) <= width else line[:width] + " [...]\n" for line in text.splitlines(keepends=True)]
    return "".join(difflib.unified_diff(short(old), short(new), fromfile=name, tofile=f"{name} (wrapped)"))


def _report(w, name: str) -> dict:
    return {"script": name, "changed": w.changed, "source": w.source,
            "settings": w.settings.to_plain() if w.settings else None, "warnings": list(w.warnings)}


@app.command("wrap")
def wrap_cmd(
    script: Annotated[Path, typer.Argument(help="The batch script (never modified).", show_default=False)],
    output: Annotated[Path, typer.Option("-o", "--output", help="Where to write the wrapped script.",
                                         show_default=False)],
    stripe_count: StripeCount = None, stripe_size: StripeSize = None, hints: Hints = None,
    tier: TierOpt = None, center: CenterOpt = None, mpi: MpiOpt = None,
    stage_in: StageIn = None, outdir: OutDir = None, kb: KBOption = None, json: JsonOption = False,
) -> None:
    """Write a copy of SCRIPT that applies I/O settings: scratch tier with staging, Lustre striping,
    MPI-IO hints, and a JSON record of what was applied next to the job output.

    Without explicit settings and with --center, the settings come from `ioadvise advise` for the
    workload in the script's `#IOADVISE` lines.
    """
    with cli_errors():
        from ..slurm.submit import read_script, wrap_script
        from ..util import atomic_write
        if output.resolve() == script.resolve():
            raise UsageError(f"{output}: the output must not be the script itself (the script is never modified)")
        text = read_script(script)
        ex = _explicit(stripe_count, stripe_size, hints, tier, mpi, outdir, stage_in)
        w = wrap_script(text, ex, center=_center(center), kb_path=kb, path=str(script), strict=True)
        atomic_write(output, w.text, mode=0o755)
        if json:
            print_json({**_report(w, str(script)), "output": str(output)})
            return
        for msg in w.warnings:
            err_console.print(f"[yellow]warning:[/] {msg}", highlight=False)
        console.print(_diff(text, w.text, str(script)), markup=False, highlight=False, end="", soft_wrap=True)
        err_console.print(f"wrote {output}", highlight=False)


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
) -> None:
    """Wrap SCRIPT (as `ioadvise wrap` does), show the change and submit it with sbatch.

    Options this command does not know are passed to sbatch, e.g.
    `ioadvise submit job.sh --center site.toml -N 2 --time=10`.
    """
    with cli_errors():
        from ..slurm.submit import merge_cli_constraint, read_script, sbatch, wrap_script
        sbatch_opts = [a for a in ctx.args if a != "--"]
        text = read_script(script)
        ex = _explicit(stripe_count, stripe_size, hints, tier, mpi, outdir, stage_in)
        w = wrap_script(text, ex, center=_center(center), kb_path=kb, path=str(script), strict=strict)
        if w.settings and w.settings.tier and w.changed:
            # a --constraint on the command line replaces the script's; keep the tier's feature in it
            sbatch_opts, _ = merge_cli_constraint(sbatch_opts, w.settings.tier.request)
        report = {**_report(w, str(script)), "sbatch_options": sbatch_opts, "dry_run": dry_run, "job_id": None}
        if not json:
            for msg in w.warnings:
                err_console.print(f"[yellow]warning:[/] {msg}", highlight=False)
            console.print(_diff(text, w.text, str(script)), markup=False, highlight=False, end="", soft_wrap=True)
        if not dry_run:
            report["job_id"] = sbatch(w.text, sbatch_opts, name=script.name)
        if json:
            print_json(report)
        elif report["job_id"]:
            console.print(f"Submitted batch job {report['job_id']}", highlight=False)
