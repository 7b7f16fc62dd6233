"""The one renderer: a configuration in, the shell commands that apply it out. Pure: values in, text out.

`advise` prints these commands, `wrap`/`submit` put the same lines into the job script, `docs build` shows them
as recipes and `diagnose` quotes the `lfs` line. The rules that make them safe live here, once:

* striping is set on a job-specific directory the commands create (`$IOADVISE_DIR`, a new
  `ioadvise-JOBID` directory below the persistent output directory), never on a top-level or home directory;
* the ROMIO hints file is `$IOADVISE_DIR/romio-hints`, an absolute, job-private path;
* stripe counts and sizes are those Lustre accepts, written as it parses them (`lustre.Setstripe`);
* a read job gets no `lfs setstripe` and no striping hints (both act only when a file is created);
* staging is real commands, the stage-out reporting its byte count and exit status.
"""
from __future__ import annotations

import re
import shlex
from types import MappingProxyType

from ..errors import UsageError
from ..frozen import NamedTuple, field, frozen
from ..lustre import Setstripe, check_stripe_count, check_stripe_size, pattern_vars
from .flavours import FlavourRule, rule_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Mapping

STRIPING_HINTS = ("striping_factor", "striping_unit", "start_iodevice", "romio_lustre_start_iodevice")
HINTS_NAME = "romio-hints"
DIR_VAR = "IOADVISE_DIR"
SCRATCH_VAR = "IOADVISE_SCRATCH"
JOB_ID = "${SLURM_JOB_ID:-$$}"
# variables a tier mount may expand (a center file's tier mount is checked against these): the job's and the
# user's, which every job has
MOUNT_VARS = frozenset({"SLURM_JOB_ID", "SLURM_JOBID", "USER", "SLURM_JOB_USER", "HOME", "TMPDIR"})
# variables a directory pattern (a file system mount, a job's data directory) may expand: also where the job was
# submitted and runs, and the site's own scratch and work directories
PATH_VARS = MOUNT_VARS | {"PWD", "SLURM_SUBMIT_DIR", "SCRATCH", "WORK"}
# ROMIO hint -> Open MPI OMPIO MCA parameter (the 'width' of fs_lustre is the stripe count)
OMPIO_MCA = {
    "cb_buffer_size": "io_ompio_bytes_per_agg",
    "cb_nodes": "io_ompio_num_aggregators",
    "striping_unit": "fs_lustre_stripe_size",
    "striping_factor": "fs_lustre_stripe_width",
}
_HINT_KEY = re.compile(r"^[A-Za-z0-9_]+$")
_HINT_VALUE = re.compile(r"^[^\s'\"\\`$;&|<>(){}]+$")


def check_hints(hints: Mapping[str, object]) -> dict[str, str]:
    """Hints as strings; UsageError for a key or value that could not be written safely into a script."""
    out: dict[str, str] = {}
    for k, v in hints.items():
        k, v = str(k), str(v)
        if not _HINT_KEY.match(k):
            raise UsageError(f"hint name {k[:40]!r}: letters, digits and _ only")
        if not _HINT_VALUE.match(v):
            raise UsageError(f"hint {k}={v[:40]!r}: no spaces, quotes or shell characters in values")
        out[k] = v
    return out


def path_fragment(pattern: str, extra_vars: frozenset[str] = frozenset()) -> str:
    """A directory pattern as text for inside double quotes: allowed $VARS stay, everything else is literal.
    UsageError for another variable or a relative path."""
    allowed = PATH_VARS | extra_vars
    out: list[str] = []
    pos = 0
    for name, start, end in pattern_vars(pattern):
        if name not in allowed:
            raise UsageError(f"directory {pattern!r}: ${name} is not allowed (use {', '.join(sorted(PATH_VARS))})")
        out.append(re.sub(r'([\\"`$])', r"\\\1", pattern[pos:start]))
        out.append("${" + name + "}")
        pos = end
    out.append(re.sub(r'([\\"`$])', r"\\\1", pattern[pos:]))
    text = "".join(out).rstrip("/") or "/"
    if not (pattern.startswith("/") or pattern.startswith("$")):
        raise UsageError(f"directory {pattern!r} must be an absolute path")
    return text


# the job's data directory's parent where no mount of the file system is known: the job's current directory
CWD = "$PWD"


@frozen(kw_only=True)
class Plan:
    """A configuration to apply, with where the job keeps its data."""

    op: str = "write"                           # write | read
    api: str = "POSIX"
    layout: str | None = None
    stripe_count: int | None = None
    stripe_size: int | None = None
    striping_allowed: bool = True               # the file system is Lustre and the center lets users stripe
    fs_type: str | None = None
    hints: Mapping[str, str] = field(default_factory=dict)
    mpi: str = "mpich"
    mpi_version: str | None = None
    base: str = CWD                             # persistent parent directory (absolute, or $VAR-rooted)
    base_vars: frozenset[str] = frozenset()     # extra variables `base` may use (the wrapper's own)
    tier: str | None = None
    tier_mount: str | None = None
    tier_request: str | None = None
    stage: bool = True
    lifetime: str = "after-job"
    stage_in: tuple[str, ...] = ()
    hdf5_alignment: int | None = None
    collective: bool | None = None              # collective MPI-IO (HDF5: the collective transfer property)

    def __post_init__(self) -> None:
        # the one check of a stripe count and size to apply (wrap's flags, advise's pins, a center's defaults)
        check_stripe_count(self.stripe_count)
        check_stripe_size(self.stripe_size)


class Commands(NamedTuple):
    """The rendered commands. `lines()` is what a user pastes into a job script, in order."""

    request: str | None = None                  # `#SBATCH --constraint=BEEOND`
    directory: tuple[str, ...] = ()             # export IOADVISE_DIR=...; mkdir -p
    setstripe: Setstripe | None = None         # the `lfs setstripe` line, as data
    hints: Mapping[str, str] = MappingProxyType({})
    hints_file: str = ""                        # text of the ROMIO hints file
    hints_write: str | None = None              # the line writing it
    env: tuple[str, ...] = ()                   # exports for the MPI flavour
    scratch: tuple[str, ...] = ()               # export IOADVISE_SCRATCH=...
    stage_in: tuple[str, ...] = ()
    stage_out: tuple[str, ...] = ()
    h5py: Mapping[str, int] = MappingProxyType({})
    h5py_collective: bool = False               # h5py: dataset I/O inside `with dset.collective:`
    hdf5_c: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    mpi: str = "mpich"
    mpi_label: str = ""
    mpi_source: str = ""

    @property
    def lfs(self) -> str | None:
        """The `lfs setstripe` line as text."""
        return self.setstripe.render() if self.setstripe else None

    def lines(self) -> list[str]:
        """Shell lines for the top of the job script (after its #SBATCH lines)."""
        out = [self.request] if self.request else []
        out += [*self.directory, *([self.lfs] if self.lfs else []), *([self.hints_write] if self.hints_write else []),
                *self.env, *self.scratch, *self.stage_in]
        return out

    def text(self) -> str:
        """Everything as one paste-able block; stage-out, HDF5 and notes as marked sections and comments."""
        out = self.lines()
        out += [f"# hint {k} {v}: {explain_hint(k, v)}" for k, v in self.hints.items()]
        if self.stage_out:
            out += ["# at the end of the job, before the tier is removed:", *self.stage_out]
        if self.h5py:
            kw = ", ".join(f"{k}={v}" for k, v in self.h5py.items())
            out.append(f"# h5py: h5py.File(path, 'w', driver='mpio', comm=comm, {kw})")
        if self.h5py_collective:
            out.append("# h5py: with dset.collective: dset[start:end] = data   (collective transfer)")
        out += [f"# {c}" for c in self.hdf5_c]
        out += [f"# note: {n}" for n in self.notes]
        return "\n".join(out) + ("\n" if out else "")


# what each MPI-IO hint asks of the library, in each language of the guide (`explain_hint`): per hint, `{value}`
# its value; the two-phase (`cb`) and sieving (`ds`) switches of ROMIO with their operation and setting
_HINT_TEXT: dict[str, dict[str, Any]] = {
    "cb": {"en": "two-phase collective buffering for collective {op}: {switch}",
           "ja": "集団{op}の二段階集団バッファリング（two-phase collective buffering）: {switch}"},
    "ds": {"en": "data sieving (one large access instead of many small ones) for independent {op}: {switch}",
           "ja": "独立{op}のデータシービング（小さなアクセスを 1 回の大きなアクセスにまとめる）: {switch}"},
    "other": {"en": "passed to the MPI library as given (see its MPI-IO hints documentation)",
              "ja": "そのまま MPI ライブラリに渡す（ライブラリの MPI-IO ヒントの説明を参照）"},
    "ops": {"en": {"write": "writes", "read": "reads"}, "ja": {"write": "書き込み", "read": "読み込み"}},
    "switch": {"en": {"enable": "always", "disable": "never", "automatic": "when the library judges it useful"},
               "ja": {"enable": "常に使う", "disable": "使わない", "automatic": "ライブラリが有効と判断したときに使う"}},
    "keys": {
        "cb_nodes": {"en": "{value} process(es) act as aggregators that do all file access of a collective operation",
                    "ja": "{value} 個のプロセスが集約役（aggregator）となり、集団操作のファイルアクセスをすべて行う"},
        "cb_buffer_size": {"en": "each aggregator collects {value} bytes per round of a collective operation",
                          "ja": "各集約役は集団操作の 1 ラウンドで {value} バイトを集める"},
        "cb_config_list": {"en": "which nodes host aggregators ({value})",
                          "ja": "集約役を置くノード（{value}）"},
        "striping_factor": {"en": "a file MPI-IO creates gets {value} stripe(s) (OSTs); an existing file keeps its own",
                           "ja": "MPI-IO が作成するファイルのストライプ数を {value}（OST 数）にする。既存のファイルは元のまま"},
        "striping_unit": {"en": "a file MPI-IO creates gets {value}-byte stripes; an existing file keeps its own",
                         "ja": "MPI-IO が作成するファイルのストライプサイズを {value} バイトにする。既存のファイルは元のまま"},
        "romio_no_indep_rw": {"en": "{value}: only collective I/O, so non-aggregator processes never open the file",
                             "ja": "{value}: 集団 I/O だけを使い、集約役以外のプロセスはファイルを開かない"},
        "romio_lustre_co_ratio": {"en": "at most {value} aggregator(s) write to one OST",
                                 "ja": "1 つの OST に書き込む集約役は最大 {value} 個"},
        "romio_lustre_coll_threshold": {"en": "requests larger than {value} bytes bypass collective buffering",
                                       "ja": "{value} バイトを超える要求は集団バッファリングを経由しない"},
        "ind_wr_buffer_size": {"en": "independent writes are sieved through a {value}-byte buffer",
                              "ja": "独立書き込みを {value} バイトのバッファでまとめる"},
        "ind_rd_buffer_size": {"en": "independent reads are sieved through a {value}-byte buffer",
                              "ja": "独立読み込みを {value} バイトのバッファでまとめる"},
        "direct_io": {"en": "{value}: direct I/O, bypassing the client's page cache",
                     "ja": "{value}: ダイレクト I/O（クライアントのページキャッシュを経由しない）"},
    },
}


def explain_hint(key: str, value: str, lang: str = "en") -> str:
    """What one MPI-IO hint asks of the MPI library, in one line (`cb_nodes 30: ...`): in English (the commands'
    comments), or in another language of the guide."""
    t = _HINT_TEXT
    for switch, prefix in (("cb", "romio_cb_"), ("ds", "romio_ds_")):
        op = key[len(prefix):] if key.startswith(prefix) else None
        if op in t["ops"][lang]:
            return t[switch][lang].format(op=t["ops"][lang][op], switch=t["switch"][lang].get(value, value))
    return (t["keys"][key][lang] if key in t["keys"] else t["other"][lang]).format(value=value)


def _flavour_env(rule: FlavourRule, hints: Mapping[str, str], fs_type: str | None,
                 notes: list[str]) -> tuple[list[str], bool]:
    """Exports for one flavour; returns (lines, whether a ROMIO hints file is needed)."""
    lines: list[str] = []
    if rule.ompio:
        rest = []
        for k, v in hints.items():
            if k in OMPIO_MCA:
                lines.append(f"export OMPI_MCA_{OMPIO_MCA[k]}={shlex.quote(v)}")
            else:
                rest.append(k)
        if rest:
            notes.append(f"{rule.label} has no ROMIO; OMPIO has no parameter for {', '.join(rest)}, "
                         f"so {'it is' if len(rest) == 1 else 'they are'} not applied.")
        return lines, False
    if rule.hints_env:
        kept = {k: v for k, v in hints.items() if ":" not in v and "," not in v}
        dropped = sorted(set(hints) - set(kept))
        if dropped:
            notes.append(f"{', '.join(dropped)}: values with ':' or ',' cannot be written into {rule.hints_env}; "
                         f"not applied.")
        if kept:
            body = ":".join(f"{k}={v}" for k, v in kept.items())
            lines.append(f"export {rule.hints_env}={shlex.quote('*:' + body)}")
        return lines, False
    lines.append(f'export ROMIO_HINTS="${DIR_VAR}/{HINTS_NAME}"')
    for name, value in rule.env:
        if rule.fs_env and fs_type not in ("lustre", "gpfs", "panfs"):
            continue
        lines.append(f"export {name}={shlex.quote(value.format(fs=fs_type or ''))}")
    return lines, True


def _drop_striping_for_read(plan: Plan, hints: dict[str, str], striping: bool, notes: list[str]) -> None:
    """A read job: the striping hints leave `hints`, and a note says how to restripe the input instead."""
    dropped = [k for k in hints if k in STRIPING_HINTS]
    for k in dropped:
        hints.pop(k)
    if striping or dropped:
        how = Setstripe("FILE", plan.stripe_count, plan.stripe_size).render("migrate")
        notes.append(f"A read job cannot change the layout of files that already exist (striping is fixed when "
                     f"a file is created), so no lfs setstripe{' and no ' + ', '.join(dropped) if dropped else ''}"
                     f". If the input's layout is the problem, restripe it once before the job: `{how}`, or copy "
                     f"it into a directory set with `lfs setstripe`.")


def _tier_lines(plan: Plan, notes: list[str]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The scratch tier's lines: its variable, the copies in before the job's work and out after it."""
    scratch: tuple[str, ...] = ()
    stage_in: tuple[str, ...] = ()
    stage_out: tuple[str, ...] = ()
    if plan.tier and plan.tier_mount:
        scratch = (f'export {SCRATCH_VAR}="{path_fragment(plan.tier_mount)}"',)
        if plan.stage:
            stage_in = tuple(f'cp -R -- {shlex.quote(i)} "${SCRATCH_VAR}"/' for i in plan.stage_in)
            if plan.lifetime == "after-job":
                dest = path_fragment(plan.base, plan.base_vars)
                stage_out = ('_ioadv_rc=0; cp -R -- "$IOADVISE_SCRATCH"/. "' + dest + '"/ || _ioadv_rc=$?',
                             'echo "ioadvise: staged out $(du -sb -- "$IOADVISE_SCRATCH" | cut -f1) bytes to '
                             + dest.replace('"', '\\"') + ', exit $_ioadv_rc"')
        elif plan.lifetime == "after-job":
            notes.append(f"The tier {plan.tier} is not staged: copy results to persistent storage yourself.")
    return scratch, stage_in, stage_out


def _hdf5_settings(plan: Plan, reading: bool) -> tuple[dict[str, int], tuple[str, ...], bool]:
    """HDF5's alignment (h5py's keywords and the C call) and whether each transfer must be made collective."""
    h5py: dict[str, int] = {}
    hdf5_c: tuple[str, ...] = ()
    hdf5 = plan.api.upper() == "HDF5"
    if plan.hdf5_alignment and hdf5 and not reading:
        thr = min(plan.hdf5_alignment, 1 << 20)
        h5py = {"alignment_threshold": thr, "alignment_interval": int(plan.hdf5_alignment)}
        hdf5_c = (f"HDF5 C: H5Pset_alignment(fapl, {thr}, {int(plan.hdf5_alignment)});",)
    h5py_collective = bool(hdf5 and plan.collective)
    if h5py_collective:
        # collective HDF5 is a property of each transfer: without it every H5Dwrite/H5Dread is independent
        hdf5_c += ("HDF5 C: dxpl = H5Pcreate(H5P_DATASET_XFER); H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE); "
                   "pass dxpl to H5Dwrite/H5Dread",)
    return h5py, hdf5_c, h5py_collective


def render(plan: Plan) -> Commands:
    """The commands that apply `plan`. UsageError for values that cannot be rendered safely."""
    notes: list[str] = []
    rule, assumed = rule_for(plan.mpi, plan.mpi_version)
    hints = check_hints(plan.hints) if plan.api.upper() in ("MPIIO", "MPI-IO", "HDF5") else {}
    if plan.hints and not hints:
        notes.append(f"MPI-IO hints are not applied: the job uses {plan.api}, which does not read them.")
    striping = plan.stripe_count is not None or bool(plan.stripe_size)
    reading = plan.op == "read"
    if reading:
        _drop_striping_for_read(plan, hints, striping, notes)
    lfs = None
    if striping and not reading:
        if plan.striping_allowed:
            lfs = Setstripe(f"${DIR_VAR}", plan.stripe_count, plan.stripe_size)
            if plan.base == CWD:
                notes.append(f"The center file states no mount for the {plan.fs_type or 'striped'} file system: the "
                             f"directory is made under the current one, which must lie on that file system (lfs "
                             f"setstripe fails elsewhere).")
        else:
            notes.append("Striping is not set: the center does not let users stripe this file system.")
    env: list[str] = []
    needs_file = False
    if hints:
        env, needs_file = _flavour_env(rule, hints, plan.fs_type, notes)
        if assumed:
            notes.append(assumed)
    hints_file = "".join(f"{k} {v}\n" for k, v in hints.items())
    hints_write = None
    if needs_file:
        hints_write = ("printf '%s\\n' " + " ".join(shlex.quote(f"{k} {v}") for k, v in hints.items())
                       + f' > "${DIR_VAR}/{HINTS_NAME}"')
    directory: tuple[str, ...] = ()
    if lfs or needs_file:
        base = path_fragment(plan.base, plan.base_vars)
        directory = (f'export {DIR_VAR}="{base}/ioadvise-{JOB_ID}"', f'mkdir -p -- "${DIR_VAR}"')
    scratch, stage_in, stage_out = _tier_lines(plan, notes)
    h5py, hdf5_c, h5py_collective = _hdf5_settings(plan, reading)
    return Commands(request=f"#SBATCH {plan.tier_request}" if plan.tier and plan.tier_request else None,
                    directory=directory, setstripe=lfs, hints=hints, hints_file=hints_file, hints_write=hints_write,
                    env=tuple(env), scratch=scratch, stage_in=stage_in, stage_out=stage_out, h5py=h5py,
                    h5py_collective=h5py_collective, hdf5_c=hdf5_c, notes=tuple(notes), mpi=plan.mpi, mpi_label=rule.label, mpi_source=rule.source)


def render_flavours(plan: Plan, flavours: tuple[str, ...]) -> dict[str, Commands]:
    """The same plan rendered for several MPI flavours (the version applies to the plan's own flavour only)."""
    from ..frozen import replace
    return {f: render(replace(plan, mpi=f, mpi_version=plan.mpi_version if f == plan.mpi else None))
            for f in flavours}
