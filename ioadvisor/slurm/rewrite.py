"""Rewrite a batch script so it applies I/O settings. Pure: (script text, settings) -> new script text.

The inserted block sits between `# >>> ioadvise wrap` and `# <<< ioadvise wrap` at the end of the #SBATCH
block (sbatch keeps reading directives through comment lines, so `#SBATCH` lines inside the block still count).
Rewrapping replaces the block, so wrap(wrap(s)) == wrap(s). The user's commands follow unchanged and run in
a child shell; the batch shell's EXIT trap stages results back, writes the record and exits with the user's
exit code.

Every value from settings or the script is shell-quoted; the only shell variables the block expands are
the ones it sets itself and the few allowed in a tier mount pattern ($SLURM_JOB_ID, $USER, ...).
"""
from __future__ import annotations

import json
import re
import shlex
from typing import Mapping

from ..errors import UsageError
from ..frozen import field, frozen
from ..lustre import constraint_of, has_feature, pattern_vars
from ..mpiio.render import MOUNT_VARS, Commands, Plan, check_hints, render
from ..mpiio.flavours import FLAVOURS as MPI_FLAVOURS, parse_version
from ..util import check_line_value
from .jobscript import parse_jobscript, script_lines

BEGIN = "# >>> ioadvise wrap: generated block, rerun `ioadvise wrap` to change it"
BEGIN_PREFIX = "# >>> ioadvise wrap"
END = "# <<< ioadvise wrap"
SHELLS = {"sh", "bash", "dash", "ksh", "zsh", "ash"}


@frozen(kw_only=True)
class TierSpec:
    """How a job asks for a scratch tier and where it is mounted (a `Tier` reduced to what the script needs)."""

    name: str
    request: str | None = None          # sbatch option, e.g. --constraint=BEEOND
    mount: str                          # e.g. /mnt/odfs/$SLURM_JOB_ID
    stage: bool = True


@frozen(kw_only=True)
class WrapSettings:
    """What the wrapped job applies."""

    stripe_count: int | None = None
    stripe_size: int | None = None
    hints: Mapping[str, str] = field(default_factory=dict)
    mpi: str = "mpich"
    mpi_version: str | None = None
    tier: TierSpec | None = None
    outdir: str | None = None            # persistent directory for results (default: the job's start dir)
    stage_in: tuple[str, ...] = ()       # files/dirs (relative to the start dir) copied to the tier
    allow_striping: bool = True          # center policy: users may run lfs setstripe
    op: str = "write"                    # a read job gets no striping (it cannot change existing files)
    lifetime: str = "after-job"
    directives: tuple[str, ...] = ()     # sbatch options written as #SBATCH lines (e.g. --nodes=8 from wrap -N 8)
    stripe_base: str | None = None       # where $IOADVISE_DIR goes, as the advice names it (/lustre/$USER);
                                         # None: below the output directory
    api: str = "MPIIO"                   # the job's I/O interface: hints reach MPI-IO and HDF5 only
    fs_type: str | None = "lustre"       # the type of the file system the job writes to, as the center says

    def to_plain(self) -> dict:
        """What the job's record holds (api and fs_type are facts of the job and center, not applied settings)."""
        return {
            "stripe_count": self.stripe_count, "stripe_size": self.stripe_size, "hints": dict(self.hints),
            "mpi": self.mpi, "mpi_version": self.mpi_version, "tier": None if self.tier is None else {
                "name": self.tier.name, "request": self.tier.request, "mount": self.tier.mount,
                "stage": self.tier.stage},
            "outdir": self.outdir, "stage_in": list(self.stage_in), "allow_striping": self.allow_striping,
            "op": self.op, "lifetime": self.lifetime, "directives": list(self.directives),
            "stripe_base": self.stripe_base,
        }

    def plan(self) -> Plan:
        """The configuration for the one renderer; `$IOADVISE_DIR` goes below the directory the advice names,
        else below the wrapper's output directory."""
        return Plan(op=self.op, api=self.api, stripe_count=self.stripe_count, stripe_size=self.stripe_size,
                    striping_allowed=self.allow_striping, fs_type=self.fs_type, hints=dict(self.hints), mpi=self.mpi,
                    mpi_version=self.mpi_version, base=self.stripe_base or "$_ioadv_out",
                    base_vars=frozenset({"_ioadv_out"}),
                    lifetime=self.lifetime)


def q(value: object) -> str:
    """Shell-quote one value."""
    return shlex.quote(str(value))


def strip_wrap(text: str) -> str:
    """Remove a block inserted by an earlier wrap (the script as the user wrote it). A line that merely starts
    like the block's first line, with no end line after it, is the user's and stays."""
    lines = script_lines(text)
    ends = [i for i, line in enumerate(lines) if line.removesuffix("\n") == END]
    out: list[str] = []
    skipping = False
    for i, line in enumerate(lines):
        if not skipping and line.startswith(BEGIN_PREFIX) and ends and ends[-1] > i:
            skipping = True
            continue
        if skipping:
            if line.removesuffix("\n") == END:
                skipping = False
            continue
        out.append(line)
    return "".join(out)


_SYSTEM_DIRS = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/", "/etc/", "/opt/", "/dev/", "/proc/", "/sys/")
_PATH_WORD = re.compile(r"^(?:/|~/|\$\{?\w+\}?/)")
_CONTROL = {";", "&&", "||", "|", "&", "(", ")", "do", "then", "else", "elif", "time", "!", "{", "}"}
_LAUNCHERS = {"srun", "mpirun", "mpiexec", "aprun", "exec", "env", "nohup"}


def command_paths(text: str) -> list[tuple[int, str]]:
    """(line, path) for each absolute or variable-rooted path the script's commands name (`$SCRATCH/out`,
    `/lustre/proj/in.h5`), except programs (a command's first word) and system directories: the places the
    job may read or write that `$IOADVISE_DIR` may or may not cover. The wrapper's block is not looked at."""
    base = strip_wrap(text)
    js = parse_jobscript(base)
    out: list[tuple[int, str]] = []
    for n, line in enumerate(script_lines(base), 1):
        if n <= js.block_end or line.lstrip().startswith("#"):
            continue
        try:
            lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
            lex.whitespace_split, lex.commentors = True, "#"
            words = list(lex)
        except ValueError:
            words = line.split()
        command_word, launcher = True, False
        for w in words:
            if w in _CONTROL:
                command_word, launcher = True, False
                continue
            if command_word:
                if launcher and (w.startswith("-") or w.isdigit()):
                    continue                    # the launcher's own options: srun -n 4 PROGRAM
                launcher = w in _LAUNCHERS
                command_word = launcher or bool(re.match(r"^\w+=", w))   # VAR=value before the program
                continue
            w = re.sub(r"^\d*>+|^<", "", w)
            w = w.split("=", 1)[1] if w.startswith("-") and "=" in w else w
            if _PATH_WORD.match(w) and not w.startswith(_SYSTEM_DIRS) and w not in (p for _, p in out):
                out.append((n, w))
    return out


def validate(settings: WrapSettings) -> None:
    """Reject settings that cannot be rendered safely (UsageError names the value)."""
    if settings.mpi not in MPI_FLAVOURS:
        raise UsageError(f"unknown MPI flavour {settings.mpi!r}; choose one of {', '.join(MPI_FLAVOURS)}")
    check_hints(settings.hints)
    parse_version(settings.mpi_version)
    if settings.op not in ("write", "read"):
        raise UsageError(f"op {settings.op!r}: write or read")
    settings.plan()         # checks the stripe count and size
    if settings.tier is not None:
        t = settings.tier
        for v, what in ((t.name, "tier name"), (t.request, "tier request"), (t.mount, "tier mount")):
            if v is not None:
                check_line_value(v, what)
        mount_expr(settings.tier.mount)
    if settings.outdir is not None:
        check_line_value(settings.outdir, "outdir")
    if settings.stripe_base is not None:
        check_line_value(settings.stripe_base, "striping directory")
    for item in settings.stage_in:
        check_line_value(item, "stage-in")
    for k, v in settings.hints.items():
        check_line_value(v, f"hint {k}")


def mount_expr(pattern: str) -> str:
    """A tier mount pattern as a shell word: literal parts quoted, allowed $VARS expanded, nothing else."""
    parts: list[str] = []
    pos = 0
    for name, start, end in pattern_vars(pattern):
        if name not in MOUNT_VARS:
            raise UsageError(f"tier mount {pattern!r}: ${name} is not allowed (use {', '.join(sorted(MOUNT_VARS))})")
        if start > pos:
            parts.append(q(pattern[pos:start]))
        parts.append(f'"${{{name}}}"')
        pos = end
    if pos < len(pattern):
        parts.append(q(pattern[pos:]))
    if not parts:
        raise UsageError("tier mount pattern is empty")
    return "".join(parts)


def _request_directive(request: str, current_constraint: str | None) -> str | None:
    """`#SBATCH` line asking for the tier; merges with the user's --constraint (the last directive wins)."""
    feature = constraint_of(request)
    if feature:
        if current_constraint and has_feature(current_constraint, feature):
            return None
        value = f"{current_constraint}&{feature}" if current_constraint else feature
        return f"#SBATCH --constraint={_directive_quote(value)}"
    return "#SBATCH " + " ".join(_directive_quote(t) for t in shlex.split(request))


def _directive_quote(value: str) -> str:
    """sbatch reads directive values with double quotes only (no shell quoting rules)."""
    check_line_value(value, "#SBATCH value")
    if value and not re.search(r"[\s\"'#]", value):
        return value
    if '"' in value:
        raise UsageError(f"cannot put {value[:40]!r} in an #SBATCH line (double quote)")
    return f'"{value}"'


def preamble(settings: WrapSettings, recdir: str | None = None) -> list[str]:
    """The shell lines of the inserted block (after any #SBATCH lines); the record goes to `recdir` (the directory
    of the script's --output), else to the output directory."""
    cmds = render(settings.plan())
    tier, finish = _tier_lines(settings)
    return [
        *_record_lines(settings, cmds, recdir),
        # the trap is set before anything that may fail, so the record and stage-out happen on every exit
        *_trap_lines(finish),
        *_directory_lines(settings, cmds),
        *_striping_lines(cmds),
        *_hint_lines(settings, cmds),
        *tier,
    ]


def _record_lines(s: WrapSettings, cmds: Commands, recdir: str | None) -> list[str]:
    """The job's start, its directories and the record of what is applied, written once now (no end time) and
    again at exit by `_ioadv_record`."""
    # the record holds what is applied: a read job's striping and striping hints are dropped by the renderer
    applied = {**s.to_plain(), "hints": dict(cmds.hints)}
    if cmds.lfs is None:
        applied.update(stripe_count=None, stripe_size=None)
    record = json.dumps(applied, sort_keys=True, separators=(",", ":"))
    return [
        "_ioadv_start=$(date +%s)",
        'case "$0" in /*) _ioadv_self="$0";; *) _ioadv_self="$PWD/$0";; esac',
        '_ioadv_job="${SLURM_JOB_ID:-$$}"',
        '_ioadv_cwd="$PWD"',
        f"_ioadv_out={q(s.outdir)}" if s.outdir else '_ioadv_out="$PWD"',
        'case "$_ioadv_out" in /*) ;; *) _ioadv_out="$PWD/$_ioadv_out";; esac',
        'mkdir -p -- "$_ioadv_out"',
        f"_ioadv_rec_dir={q(recdir)}" if recdir else '_ioadv_rec_dir="$_ioadv_out"',
        'case "$_ioadv_rec_dir" in /*) ;; *) _ioadv_rec_dir="$PWD/$_ioadv_rec_dir";; esac',
        '_ioadv_rec="$_ioadv_rec_dir/ioadvise-$_ioadv_job.json"',
        f"_ioadv_settings={q(record)}",
        # the cluster and the user tie the record to its job (`jobs collect` checks both against Slurm or the
        # file's owner); only name characters reach the JSON
        "_ioadv_cluster=$(printf %s \"${SLURM_CLUSTER_NAME:-}\" | tr -cd 'A-Za-z0-9._-')",
        "_ioadv_user=$(id -un 2>/dev/null | tr -cd 'A-Za-z0-9._@-')",
        "_ioadv_record() {",
        '  printf \'{"job_id":"%s","cluster":"%s","user":"%s","host":"%s","start":%s,"end":%s,"exit_code":%s,'
        '"staged_out_bytes":%s,"stage_out_seconds":%s,"stage_out_status":%s,"settings":%s}\\n\' '
        '"$_ioadv_job" "$_ioadv_cluster" "$_ioadv_user" "$(hostname 2>/dev/null)" "$_ioadv_start" "${1:-null}" '
        '"${2:-null}" "${3:-null}" "${4:-null}" "${5:-null}" "$_ioadv_settings" > "$_ioadv_rec.tmp" && '
        'mv -f -- "$_ioadv_rec.tmp" "$_ioadv_rec"',
        "}",
        "_ioadv_record",
    ]


def _trap_lines(finish: list[str]) -> list[str]:
    """The EXIT trap: `finish` (the stage-out), then the record with the end time and the user's exit code.

    A cancelled job's SIGTERM reaches every process of the job at once: the batch shell may see its child die of
    it and start the EXIT trap, and then take its own SIGTERM inside it, whose `exit 143` left the trap with
    nothing staged out and no end record. So the signals call the same function, which ignores further signals
    before it does anything and does the work once, whichever call gets there first."""
    return [
        "_ioadv_finish() {",
        "  _ioadv_rc=$?",
        '  [ -z "${1:-}" ] || _ioadv_rc=$1',
        "  trap '' TERM INT HUP",
        '  if [ -z "${_ioadv_ended:-}" ]; then',
        "  _ioadv_ended=1",
        "  set +eu",
        '  cd -- "$_ioadv_out" 2>/dev/null',
        *finish,
        '  _ioadv_record "$(date +%s)" "$_ioadv_rc" "${_ioadv_bytes:-}" "${_ioadv_secs:-}" "${_ioadv_sorc:-}"',
        "  fi",
        '  exit "$_ioadv_rc"',
        "}",
        "trap _ioadv_finish EXIT",
        # a cancelled or timed-out job gets SIGTERM: exit through the trap so results are still staged out
        "trap '_ioadv_finish 143' TERM",
        "trap '_ioadv_finish 130' INT",
        "trap '_ioadv_finish 129' HUP",
    ]


def _directory_lines(s: WrapSettings, cmds: Commands) -> list[str]:
    """`$IOADVISE_DIR` made, falling back to the output directory when the advised one cannot be used."""
    lines = list(cmds.directory)
    if cmds.directory and s.stripe_base:
        # the advised directory may not exist for this user or on this node: the output directory instead
        lines += [
            'if [ ! -d "$IOADVISE_DIR" ] || [ ! -w "$IOADVISE_DIR" ]; then',
            '  echo "ioadvise: cannot create $IOADVISE_DIR; using $_ioadv_out/ioadvise-$_ioadv_job instead" >&2',
            '  export IOADVISE_DIR="$_ioadv_out/ioadvise-$_ioadv_job"',
            '  mkdir -p -- "$IOADVISE_DIR"',
            "fi",
        ]
    return lines


def _striping_lines(cmds: Commands) -> list[str]:
    """`lfs setstripe` on `$IOADVISE_DIR` when it is on Lustre, with a line on stderr saying what happened."""
    if not cmds.setstripe:
        why = next((n for n in cmds.notes if "layout" in n or "stripe" in n.lower()), "none advised")
        return [f"echo {q('ioadvise: striping: ' + why)} >&2"]
    flags = cmds.setstripe.flags()
    return [
        '_ioadv_fs=$(stat -f -c %T "$IOADVISE_DIR" 2>/dev/null)',
        'if [ "$_ioadv_fs" = lustre ] || { command -v lfs >/dev/null 2>&1 && '
        'lfs getstripe -d "$IOADVISE_DIR" >/dev/null 2>&1; }; then',
        f"  if {cmds.lfs}; then",
        f'    echo "ioadvise: striping: {flags} set on $IOADVISE_DIR (write large files there)" >&2',
        "  else",
        '    echo "ioadvise: striping: lfs setstripe failed on $IOADVISE_DIR" >&2',
        "  fi",
        "else",
        '  echo "ioadvise: striping: not set, $IOADVISE_DIR is not on Lustre" >&2',
        "fi",
    ]


def _hint_lines(s: WrapSettings, cmds: Commands) -> list[str]:
    """The MPI-IO hints file and environment, with a line on stderr saying which hints apply."""
    lines = [cmds.hints_write] if cmds.hints_write else []
    lines += cmds.env
    if cmds.hints:
        listed = ",".join(f"{k}={v}" for k, v in cmds.hints.items())
        shown = " ".join(f"{v}=${v}" for v in re.findall(r"^export (\w+)=", "\n".join(cmds.env), re.M))
        lines += [f"export IOADVISE_HINTS={q(listed)}",
                  f'echo "ioadvise: hints: {listed} for {cmds.mpi_label}: {shown}" >&2']
    elif s.hints:
        lines.append(f"echo {q('ioadvise: hints: not applied (' + '; '.join(cmds.notes) + ')')} >&2")
    else:
        lines.append("echo 'ioadvise: hints: none advised' >&2")
    return lines


def _tier_lines(s: WrapSettings) -> tuple[list[str], list[str]]:
    """The block's lines for the scratch tier (stage-in, `cd` there) and the exit trap's lines (stage-out)."""
    if s.tier is None:
        return ['export IOADVISE_OUTDIR="$_ioadv_out"', "echo 'ioadvise: staging: none (no scratch tier)' >&2"], []
    lines = [
        f"_ioadv_scratch={mount_expr(s.tier.mount)}",
        'if [ -d "$_ioadv_scratch" ] && [ -w "$_ioadv_scratch" ]; then',
        '  export IOADVISE_SCRATCH="$_ioadv_scratch"',
    ]
    if s.tier.stage:
        lines += _stage_in_lines(s.stage_in)
    else:
        lines.append(f'  echo "ioadvise: staging: none (tier {s.tier.name} is not staged; copy results out '
                     f'yourself)" >&2')
    lines += [
        '  export IOADVISE_OUTDIR="$_ioadv_scratch"',
        '  cd -- "$_ioadv_scratch" || exit 1',
        "else",
        f'  echo {q("ioadvise: tier " + s.tier.name + " is not mounted; writing to the persistent directory")} >&2',
        '  export IOADVISE_OUTDIR="$_ioadv_out"',
        "fi",
    ]
    return lines, _stage_out_lines(s.stage_in) if s.tier.stage else []


def _stage_in_lines(stage_in: tuple[str, ...]) -> list[str]:
    """Copy each item (relative to the start directory, or absolute) to the scratch tier."""
    lines = []
    for item in stage_in:
        source = q(item) if item.startswith("/") else f'"$_ioadv_cwd"/{q(item)}'
        failed = q("ioadvise: stage-in of " + item + " failed")
        lines.append(f'  cp -R -- {source} "$_ioadv_scratch"/ || echo {failed} >&2')
    lines += [
        "  _ioadv_staged=1",
        f'  echo "ioadvise: staging: {len(stage_in)} item(s) copied in to $_ioadv_scratch; new files are '
        f'copied back to $_ioadv_out at the end" >&2',
    ]
    return lines


def _stage_out_lines(stage_in: tuple[str, ...]) -> list[str]:
    """The exit trap's copy of the tier's files (except those staged in) to the output directory, counting bytes."""
    names = [q(i.rstrip("/").rsplit("/", 1)[-1]) for i in stage_in]
    skip_line = (f'      case "${{_ioadv_f##*/}}" in {"|".join(names)}) continue;; esac' if names
                 else "      :")
    return [
        '  if [ -n "${_ioadv_staged:-}" ]; then',
        '    _ioadv_bytes=0',
        '    _ioadv_sorc=0',
        '    _ioadv_t0=$(date +%s)',
        '    for _ioadv_f in "$_ioadv_scratch"/* "$_ioadv_scratch"/.[!.]*; do',
        '      [ -e "$_ioadv_f" ] || continue',
        skip_line,
        '      cp -R -- "$_ioadv_f" "$_ioadv_out"/ || { _ioadv_sorc=1; echo "ioadvise: stage-out of $_ioadv_f failed" >&2; }',
        # apparent size with GNU du; anything else makes the total unknown rather than wrong
        '      _ioadv_n=$(du -sb -- "$_ioadv_f" 2>/dev/null | cut -f1)',
        '      case "$_ioadv_n" in',
        "        ''|*[!0-9]*) _ioadv_bytes=null;;",
        '        *) [ "$_ioadv_bytes" = null ] || _ioadv_bytes=$((_ioadv_bytes + _ioadv_n));;',
        '      esac',
        "    done",
        '    _ioadv_secs=$(( $(date +%s) - _ioadv_t0 ))',
        '    echo "ioadvise: staging: $_ioadv_bytes bytes staged out to $_ioadv_out in ${_ioadv_secs}s, '
        'exit status $_ioadv_sorc" >&2',
        "  fi",
    ]


def wrap(text: str, settings: WrapSettings, output: str | None = None) -> str:
    """The script with the settings applied (`output`: an --output given to sbatch, over the script's own).
    Raises UsageError for scripts it cannot wrap."""
    validate(settings)
    base = strip_wrap(text)
    js = parse_jobscript(base)
    if js.shebang is None:
        raise UsageError("the script has no #! line (sbatch needs one, e.g. #!/bin/bash)")
    if js.interpreter not in SHELLS:
        raise UsageError(f"only shell scripts can be wrapped (the script runs {js.interpreter!r})")
    directives: list[str] = []
    for opt in settings.directives:
        if not re.fullmatch(r"--(nodes|ntasks|ntasks-per-node)=\d+", opt):
            raise UsageError(f"cannot write {opt[:40]!r} as an #SBATCH line")
        directives.append(f"#SBATCH {opt}")
    if settings.tier is not None and settings.tier.request:
        line = _request_directive(settings.tier.request, js.option("constraint"))
        if line:
            directives.append(line)
    # sbatch writes the job's output where its command line says (`output`), else where the script's #SBATCH says
    output = output or js.option("output")
    # output to a device (-o /dev/null) names no results directory: the record goes to the outdir then
    head = output.rsplit("/", 1)[0] if output and "/" in output and not output.startswith("/dev/") else None
    recdir = (head or "/") if head is not None and "%" not in head else None
    if recdir is not None:
        check_line_value(recdir, "--output directory")
    # The block sets everything up in the batch shell, then runs the script again in a child shell of the same
    # interpreter (as the kernel reads the #! line: the program and at most one argument), which skips the
    # block and runs the user's commands. Their traps, `exec` or `exit` end only the child; the batch shell's
    # EXIT trap then stages results out and records the child's exit code. If $0 is not this script (it came on
    # stdin), the commands run in the batch shell as before.
    prog, _, arg = js.shebang[2:].strip().partition(" ")
    child = " ".join([q(prog)] + ([q(arg.strip())] if arg.strip() else []))
    block = [BEGIN, *directives,
             'if [ "${_ioadv_parent:-}" != "$PPID" ]; then',
             *(f"  {line}" for line in preamble(settings, recdir)),
             f'  if grep -qF {q(BEGIN_PREFIX)} "$_ioadv_self" 2>/dev/null; then',
             f'    _ioadv_parent=$$ {child} "$_ioadv_self" "$@"',
             "    exit $?",
             "  fi",
             "fi",
             "unset _ioadv_parent",
             END]
    lines = script_lines(base)
    at = js.block_end
    head = lines[:at]
    if head and not head[-1].endswith("\n"):
        head[-1] += "\n"
    return "".join(head) + "".join(l + "\n" for l in block) + "".join(lines[at:])
