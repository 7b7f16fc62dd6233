"""Thin layer around the pure parts: choose the settings, wrap, and submit through the Slurm command-line tools."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from ..errors import ImportFormatError, SlurmError, UsageError
from ..frozen import field, frozen, replace
from ..lustre import constraint_of, has_feature
from ..model.run import norm_api
from ..model.types import Center, FileSystem
from .jobscript import parse_jobscript, parse_sbatch_args
from .rewrite import TierSpec, WrapSettings, wrap

# SBATCH_* variables override directives in the script; only these site-wide ones are kept
SBATCH_ENV_KEEP = {"SBATCH_ACCOUNT", "SBATCH_PARTITION", "SBATCH_QOS", "SBATCH_RESERVATION", "SBATCH_CLUSTERS"}
TRANSIENT = re.compile(r"Socket timed out|Resource temporarily unavailable|Unable to contact slurm controller"
                       r"|Zero Bytes were transmitted")


@frozen(kw_only=True)
class Explicit:
    """Settings given on the command line (None = not given)."""

    stripe_count: int | None = None
    stripe_size: int | None = None
    hints: Mapping[str, str] = field(default_factory=dict)
    tier: str | None = None
    mpi: str | None = None
    mpi_version: str | None = None
    outdir: str | None = None
    stage_in: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.stripe_count or self.stripe_size or self.hints or self.tier)


@frozen(kw_only=True)
class Wrapped:
    """The result of wrapping: new text (or the original when advice failed open), and what happened."""

    original: str
    text: str
    settings: WrapSettings | None
    source: str                    # explicit | advice | none (unchanged)
    warnings: tuple[str, ...] = ()
    spec: Any = None               # the job description (ioadvisor.job.JobSpec)
    advice: Any = None             # the Advice the settings came from (source == "advice")
    center: Center | None = None

    @property
    def changed(self) -> bool:
        return self.text != self.original


def read_script(path: Path) -> str:
    """The script's text; ImportFormatError (exit 2) naming the file when it cannot be read."""
    from ..inputs import SCRIPT, read_input
    return read_input(path, SCRIPT, ImportFormatError).decode("utf-8", errors="surrogateescape")


def tier_spec(center: Center | None, name: str) -> TierSpec:
    """The named tier of the center, as the rewrite needs it."""
    if center is None:
        raise UsageError(f"--tier {name} needs --center FILE|NAME describing the tier")
    t = center.tier(name)
    if t is None:
        known = ", ".join(x.name for x in center.tiers) or "none"
        raise UsageError(f"center {center.name} has no tier {name!r} (tiers: {known})")
    if not t.mount:
        raise UsageError(f"tier {name} of {center.name} has no mount pattern")
    return TierSpec(name=t.name, request=t.request, mount=t.mount, stage=t.stage)


def _filesystem(center: Center | None, spec: Any) -> FileSystem | None:
    """The center's file system the job writes to when no advice chose one: the one the job description pins
    (tier=NAME), else the one striping is for, else the first persistent one (None without a center)."""
    if center is None or not center.filesystems:
        return None
    pinned = center.filesystem(spec.tier) if spec.tier else None
    return pinned or next((f for f in center.filesystems if f.stripable), None) or next(
        (f for f in center.filesystems if f.persistent), center.filesystems[0])


def explicit_settings(ex: Explicit, center: Center | None, spec: Any = None) -> WrapSettings:
    """Settings given on the command line, with the job's own facts (op, lifetime, output directory, stage-in)
    from its description (none when it could not be read)."""
    if spec is None:
        from ..job import JobSpec
        spec = JobSpec()
    fs = _filesystem(center, spec)
    return WrapSettings(
        stripe_count=ex.stripe_count, stripe_size=ex.stripe_size, hints=dict(ex.hints),
        mpi=ex.mpi or (center.mpi if center else "mpich"),
        mpi_version=ex.mpi_version if ex.mpi else (center.mpi_version if center else None),
        tier=tier_spec(center, ex.tier) if ex.tier else None,
        outdir=ex.outdir or spec.outdir, stage_in=ex.stage_in or tuple(spec.stage_in),
        allow_striping=fs.stripable if fs else True, op=spec.op or "write", lifetime=spec.lifetime or "after-job",
        # hints given to wrap are MPI-IO hints: only a job that says it uses POSIX goes without them
        api=norm_api(spec.api) or "MPIIO", fs_type=fs.type if fs else "lustre")


def advised_settings(ex: Explicit, center: Center, kb_path: Path | None, path: str,
                     spec: Any) -> tuple[WrapSettings, Any]:
    """Settings from `ioadvisor.advise.advise` for the job the description says, and the advice itself."""
    from ..advise import advise
    from ..kb import KB

    if spec.bytes_per_rank is None and spec.total_bytes is None:
        raise UsageError(f"{path}: no '#IOADVISE bytes_per_rank=SIZE' line or --bytes-per-rank to advise from")
    w = spec.workload()
    with KB.open(kb_path, create=False) as kb:
        advice = advise(w, kb, center, pins=spec.pins())
    from ..advise.explain import plan_for
    from ..mpiio.render import CWD
    cfg = advice.recommendation.config
    base = explicit_settings(ex, center, spec)
    tier = tier_spec(center, cfg.tier) if cfg.tier and center.tier(cfg.tier) and center.tier(cfg.tier).mount else None
    # the interface, file system and striping policy are the ones `advise` renders its commands with, and
    # striping goes where it puts it for this job (the file system's mount), not below the start directory
    plan = plan_for(cfg, center, w)
    return replace(base, stripe_count=cfg.stripe_count, stripe_size=cfg.stripe_size,
                   hints={str(k): str(v) for k, v in cfg.hints.items()}, tier=tier,
                   stripe_base=None if plan.base == CWD else plan.base, api=plan.api, fs_type=plan.fs_type,
                   allow_striping=plan.striping_allowed), advice


def wrap_script(text: str, ex: Explicit, *, center: Center | None = None, kb_path: Path | None = None,
                path: str = "<script>", strict: bool = False, sbatch_args: tuple[str, ...] | list[str] = (),
                directives: tuple[str, ...] = (), workload: Mapping[str, Any] | None = None) -> Wrapped:
    """Wrap with explicit settings, else with advice (needs a center) for the job the script describes, with
    sbatch-style options (-N, -n, --ntasks-per-node) over its #SBATCH lines and `workload` (the options
    `advise` takes: bytes_per_rank, api, layout, ...) over its #IOADVISE lines. Advice that fails leaves the
    script unchanged with a warning, or raises when `strict`. Unusable explicit settings always raise."""
    from ..job import describe, sbatch_sizes
    js = parse_jobscript(text)
    # an --output given to sbatch replaces the script's: the record goes next to the output sbatch writes
    output = next((d.value for d in reversed(parse_sbatch_args(list(sbatch_args))) if d.option == "output"), None)
    try:
        spec = describe(script=text, script_path=path, sbatch=sbatch_sizes(sbatch_args), explicit=workload,
                        strict=False)
        warnings = list(spec.warnings)
        problem = None
    except (ImportFormatError, UsageError) as e:
        if strict and not ex.any and center is not None:
            raise
        spec, problem = None, e
        warnings = list(js.warnings) + [f"the job description is not used: {e}"]
    if ex.any or center is None:
        if center is None and not ex.any:
            warnings.append("no center given (--center FILE|NAME): nothing was advised, and no striping, hints or "
                            "scratch tier are set")
        s = replace(explicit_settings(ex, center, spec), directives=directives)
        try:
            return Wrapped(original=text, text=wrap(text, s, output), settings=s, source="explicit",
                           warnings=tuple(warnings), spec=spec)
        except UsageError as e:
            raise UsageError(f"{path}: {e}") from None
    try:
        if problem is not None:
            raise problem
        s, advice = advised_settings(ex, center, kb_path, path, spec)
        s = replace(s, directives=directives)
        # every caveat of the advice (extrapolation, caps, unmeasured modes) travels with the wrapped job
        warnings += [x for x in (advice.warnings if advice is not None else ()) if x not in warnings]
        return Wrapped(original=text, text=wrap(text, s, output), settings=s, source="advice", warnings=tuple(warnings),
                       spec=spec, advice=advice, center=center)
    except Exception as e:  # fail open: a broken advisor must not stop a job
        if strict:
            if isinstance(e, (UsageError, ImportFormatError)):
                raise
            raise UsageError(f"advice failed: {e}") from None
        warnings.append(f"advice failed, the script is submitted unchanged: {str(e)[:200]}")
        return Wrapped(original=text, text=text, settings=None, source="none", warnings=tuple(warnings), spec=spec)


def scrubbed_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for sbatch without SBATCH_* overrides (except a few site-wide ones)."""
    src = os.environ if env is None else env
    return {k: v for k, v in src.items() if not k.startswith("SBATCH_") or k in SBATCH_ENV_KEEP}


def unchanged(text: str, why: str, warnings: tuple[str, ...] = ()) -> Wrapped:
    """The script as it is, with the reason it was not wrapped (fail-open)."""
    return Wrapped(original=text, text=text, settings=None, source="none",
                   warnings=(*warnings, f"{why}; the script is submitted unchanged"))


#: how long sbatch may run, and how long it is still waited for once a signal has stopped ioadvise
SBATCH_TIMEOUT = 120
SBATCH_GRACE = 60


def sbatch(text: str, options: list[str] | tuple[str, ...] = (), *, name: str = "job.sh",
           env: Mapping[str, str] | None = None, cwd: str | Path | None = None, retries: int = 2) -> str:
    """Submit a script text with `sbatch --parsable`; return the job id. The script goes through a private
    temporary file named like the user's (the job name defaults to it); sbatch copies it at submission, and
    the file and its directory are removed however this ends.

    A signal (KeyboardInterrupt) that arrives while sbatch runs does not kill it: sbatch may have handed the
    job to slurmctld already, and a killed sbatch leaves the user not knowing whether to submit again. It is
    waited for (SBATCH_GRACE seconds at most), and the interrupt is raised again carrying `sbatch_job_id` (the
    job it submitted, or None) and `sbatch_unknown` (True when sbatch had to be killed without an answer)."""
    exe = shutil.which("sbatch", path=(env or os.environ).get("PATH"))
    if exe is None:
        raise SlurmError("sbatch not found on PATH")
    tmpdir = None
    try:
        tmpdir = tempfile.mkdtemp(prefix="ioadvise-")
        script = Path(tmpdir) / (Path(name).name or "job.sh")
        script.write_bytes(text.encode("utf-8", errors="surrogateescape"))   # every byte as given
        script.chmod(0o700)
        args = [exe, "--parsable", *options, str(script)]
        for attempt in range(retries + 1):
            code, out, err = _run_sbatch(args, env, cwd)
            if code == 0:
                m = re.match(r"^\s*(\d+(?:_\d+)?)", out)
                if not m:
                    raise SlurmError(f"sbatch printed no job id: {out.strip()[:200]}")
                return m.group(1)
            if attempt < retries and TRANSIENT.search(err):
                time.sleep(attempt + 1)
                continue
            raise SlurmError(f"sbatch failed (exit {code}): {err.strip()[:500]}", exit_code=code)
        raise SlurmError("sbatch failed")  # not reached
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _run_sbatch(args: list[str], env: Mapping[str, str] | None, cwd: str | Path | None) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one sbatch run. sbatch runs in its own session, so a Ctrl-C at the
    terminal reaches ioadvise only, which then waits for sbatch to finish (see `sbatch`)."""
    p = subprocess.Popen(args, env=scrubbed_env(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=SBATCH_TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise SlurmError(f"sbatch did not finish in {SBATCH_TIMEOUT} s (is slurmctld answering?); check "
                         f"`squeue --me` before submitting again") from None
    except BaseException as e:          # a signal: sbatch finishes (or is stopped), then the interrupt goes on
        e.sbatch_job_id, e.sbatch_unknown = None, False      # type: ignore[attr-defined]
        try:
            out, _ = p.communicate(timeout=SBATCH_GRACE)
        except BaseException:
            p.kill()
            p.wait()
            e.sbatch_unknown = True                          # type: ignore[attr-defined]
            raise e from None
        m = re.match(r"^\s*(\d+(?:_\d+)?)", out or "") if p.returncode == 0 else None
        e.sbatch_job_id = m.group(1) if m else None          # type: ignore[attr-defined]
        raise
    return p.returncode, out, err


def sbatch_value(value: str) -> str:
    """A #SBATCH value as a script line may hold it: one line, double-quoted when it has spaces (sbatch rejects
    an unquoted value with spaces)."""
    from ..util import check_line_value
    check_line_value(value, "#SBATCH value")
    return f'"{value}"' if any(c.isspace() for c in value) else value


def in_queue(job_id: str, env: Mapping[str, str] | None = None) -> bool | None:
    """Whether any task of the job (an array's too) is still pending or running; None if squeue cannot tell.
    squeue's own job filter is not relied on: the tasks are matched here."""
    try:
        p = subprocess.run(["squeue", "-h", "-r", "-o", "%A %i %T"], capture_output=True, text=True, timeout=30,
                           env=scrubbed_env(env))
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    return any(ln.split()[0] == job_id or ln.split()[1].split("_")[0] == job_id
               for ln in p.stdout.splitlines() if len(ln.split()) >= 2)


def merge_cli_constraint(options: list[str], request: str | None) -> tuple[list[str], bool]:
    """sbatch options with the tier's feature added to a --constraint/-C given on the command line (which
    would otherwise replace the script's, tier included). Returns (options, changed)."""
    feature = constraint_of(request)
    if not feature:
        return list(options), False
    opts = list(options)
    spots = []
    i = 0
    while i < len(opts):
        o = opts[i]
        if o.startswith("--constraint="):
            spots.append((i, "--constraint=", o[len("--constraint="):]))
        elif o in ("--constraint", "-C") and i + 1 < len(opts):
            spots.append((i + 1, "", opts[i + 1]))
            i += 1
        elif o.startswith("-C") and len(o) > 2:
            spots.append((i, "-C", o[2:]))
        i += 1
    if not spots:
        return opts, False
    idx, prefix, value = spots[-1]
    if has_feature(value, feature):
        return opts, False
    opts[idx] = f"{prefix}{value}&{feature}"
    return opts, True
