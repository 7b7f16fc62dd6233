"""Sweeps: a TOML file names fixed settings and settings to vary; the cartesian product, validated as a
whole before anything runs, becomes a plan of configs. A plan runs config by config under a launcher in the
current allocation, or as one Slurm job array whose tasks read their config from the plan JSON.

```toml
name = "api-layout"
kind = "data"                      # data (bench run) or md (bench md)
[base]                             # settings every config shares; `ranks` is the launcher's -n
transfer_size = "1MiB"
block_size = "16MiB"
ranks = 4
dir = "/scratch/me/bench"
[vary]                             # every combination of these values is one config
api = ["posix", "mpiio"]
layout = ["fpp", "shared"]
collective = [false, true]
[[exclude]]                        # combinations to leave out
api = "posix"
collective = true
[[include]]                        # extra keys for the matching configs (or a new config if none matches)
api = "mpiio"
hints = "romio_cb_write=enable"
[[config]]                         # one more config, as it stands (over [base]); `nodes` spreads its ranks
api = "mpiio"
layout = "shared"
ranks = 8
nodes = 2
[slurm]                            # --mode array only
partition = "debug"
time = "00:30:00"
options = ["--constraint=nvme"]
```
"""
from __future__ import annotations

import datetime as _dt
import itertools
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import ConfigError, UsageError
from ..frozen import asdict, field as record_field, frozen
from ..tomlschema import Field, Problem, Table, first_problem
from ..util import atomic_write, check_line_value, loads_toml
from .params import DATA_KEYS, MD_KEYS, data_params, md_params

TOP_KEYS = ("name", "kind", "launcher", "base", "vary", "exclude", "include", "config", "slurm")
SLURM_KEYS = ("partition", "time", "account", "qos", "nodes", "ntasks_per_node", "constraint", "options")
EXTRA_KEYS = ("ranks", "nodes")
PLAN_MARKER = "ioadvisor_bench_plan"
# plan, script and job logs start with a dot so that `ioadvise kb import RESULTS` reads only the results
PLAN_FILE, SCRIPT_FILE, LOG_PATTERN = ".plan.json", ".sweep.sbatch", ".slurm-{job}_{task}.out"


@frozen
class SweepConfig:
    """One point of the sweep: validated kernel settings, the number of ranks to launch and the nodes to spread
    them over (None: as the launcher places them)."""

    index: int
    ranks: int
    settings: dict[str, Any]
    label: str
    nodes: int | None = None

    @property
    def ranks_per_node(self) -> int | None:
        return None if self.nodes is None else -(-self.ranks // self.nodes)


@frozen
class Plan:
    name: str
    kind: str
    source: str
    configs: tuple[SweepConfig, ...]
    slurm: dict[str, Any] = record_field(default_factory=dict)
    launcher: str = "mpiexec"
    results: str = ""

    def to_json(self) -> str:
        d = asdict(self)
        d["configs"] = [asdict(c) for c in self.configs]
        return json.dumps({PLAN_MARKER: 1, **d}, indent=2) + "\n"

    def result_path(self, index: int) -> Path:
        return Path(self.results) / f"{self.name}-{index:03d}.json"


def load_plan(path: str | Path) -> Plan:
    """A plan JSON written by `Plan.to_json`."""
    from ..inputs import PLAN, read_input
    try:
        d = json.loads(read_input(path, PLAN))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:    # also a 5,000-digit integer, deep nesting
        raise UsageError(f"{path}: not a readable sweep plan ({e})") from None
    if not isinstance(d, dict) or d.pop(PLAN_MARKER, None) != 1:
        raise UsageError(f"{path}: not a sweep plan")
    d["configs"] = tuple(SweepConfig(**c) for c in d["configs"])
    return Plan(**d)


def _values(where: str, v: Any) -> list[Any]:
    if isinstance(v, list):
        if not v:
            raise ConfigError(f"{where}: an empty list gives no configs")
        return v
    return [v]


def _label(values: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={'on' if v is True else 'off' if v is False else v}" for k, v in values.items())


def plan_sweep(path: str | Path, results: str | Path | None = None, *, default_results: Path | None = None,
               text: str | None = None) -> Plan:
    """Read and validate a sweep TOML into a Plan; ConfigError names the file and the key at fault.

    Every config is validated before the plan is returned, so nothing runs when any config is impossible.
    """
    from ..inputs import TOML
    from ..util import read_text
    src = str(path)
    try:
        doc = loads_toml(text if text is not None else read_text(path, TOML))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{src}: {e}") from None
    kind = _check_shape(src, doc)
    slurm = doc.get("slurm", {})
    _check_slurm(src, slurm)
    launcher = doc.get("launcher", "mpiexec")
    if _launcher_words(launcher) is None:
        raise ConfigError(f"{src}: launcher: {launcher!r} is not mpiexec, srun or srun with options "
                          f"(e.g. \"srun --mpi=pmi2\")")
    combos = _combinations(src, doc)
    name = doc.get("name") or Path(src).stem
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ConfigError(f"{src}: name: {name!r} may hold only letters, digits, - and _")
    configs = _configs(src, name, kind, doc.get("base", {}), combos, varied=bool(doc.get("vary")))
    if any(c.nodes for c in configs) and (slurm.get("nodes") or slurm.get("ntasks_per_node")):
        raise ConfigError(f"{src}: [slurm] nodes/ntasks_per_node conflict with configs that set nodes (the array "
                          f"asks for the most nodes and ranks per node any config needs)")
    if results is None:
        stamp = _dt.datetime.now().strftime("%Y%m%dT%H%M%S")
        results = (default_results or Path("."))/ f"{name}-{stamp}"
    return Plan(name=name, kind=kind, source=os.path.abspath(src), configs=tuple(configs), slurm=dict(slurm),
                launcher=launcher, results=os.path.abspath(str(results)))


SLURM = Table(tuple(Field(k, "list" if k == "options" else "text") for k in SLURM_KEYS))


def sweep_shape(kind: str) -> Table:
    """The shape of a sweep file of this kind: its settings are the kind's benchmark keys plus ranks and nodes,
    in [base] and [vary] (a value or a list of values) and in each [[exclude]], [[include]] and [[config]]."""
    settings = Table(tuple(Field(k) for k in (DATA_KEYS if kind == "data" else MD_KEYS) + EXTRA_KEYS))
    tables = {"base": Field("base", "table", table=settings), "vary": Field("vary", "table", table=settings),
              "slurm": Field("slurm", "table", table=SLURM), "name": Field("name", "str")}
    for key in ("exclude", "include", "config"):
        tables[key] = Field(key, "tables", table=settings)
    return Table(tuple(tables.get(k, Field(k)) for k in TOP_KEYS))


def _check_shape(src: str, doc: dict[str, Any]) -> str:
    """The sweep's kind, once the document has the shape of a sweep of that kind; ConfigError otherwise."""
    kind = doc.get("kind", "data")
    if kind not in ("data", "md"):
        raise ConfigError(f"{src}: kind: {kind!r} is not data or md")
    p = first_problem(doc, sweep_shape(kind))
    if p is not None:
        raise ConfigError(f"{src}: {_shape_message(p, kind)}")
    return kind


def _shape_message(p: Problem, kind: str) -> str:
    """A shape problem worded as users of sweep files know it: tables by their TOML header."""
    table, keys = p.path[0] if p.path else "", ", ".join(p.keys)
    if p.code == "unknown":
        return {"": f"unknown key(s) {keys} (known: {', '.join(p.allowed)})",
                "base": f"[base] unknown key(s) {keys} for kind {kind} (known: {', '.join(p.allowed)})",
                "vary": f"[vary] unknown key(s) {keys} for kind {kind} (known: {', '.join(p.allowed)})",
                "slurm": f"[slurm] unknown key(s) {keys} (known: {', '.join(p.allowed)})",
                }.get(str(table), f"[[{table}]] unknown key(s) {keys}")
    if table in ("exclude", "include", "config"):
        return f"{table} must be an array of tables ([[{table}]])"
    if len(p.path) == 1:
        return f"name: {p.value!r} is not a string" if table == "name" else f"[{table}] must be a table"
    key = p.path[1]
    if key == "options":
        return "[slurm] options must be a list of strings"
    return f"[slurm] {key}: {p.value!r} is not text or a number"


def _check_slurm(src: str, slurm: dict[str, Any]) -> None:
    """Every [slurm] value fits on one #SBATCH line (the shape has made each text or a number)."""
    for key, v in slurm.items():
        for item in (v if key == "options" else [v]):
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                raise ConfigError(f"{src}: [slurm] {key}: {item!r} is not text or a number"
                                  + (" (options is a list of strings)" if key == "options" else ""))
            try:
                check_line_value(item, f"[slurm] {key}")
            except UsageError as e:
                raise ConfigError(f"{src}: {e}") from None
            if '"' in str(item) and key != "options":
                raise ConfigError(f"{src}: [slurm] {key}: {str(item)[:40]!r}: no double quotes in #SBATCH values")


def _combinations(src: str, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The settings of each config over [base]: the product of [vary] without [[exclude]], with [[include]]
    added, then the [[config]] entries (alone when nothing varies)."""
    base, vary = doc.get("base", {}), doc.get("vary", {})
    both = sorted(set(base) & set(vary))
    if both:
        raise ConfigError(f"{src}: {', '.join(both)} in both [base] and [vary]")
    keys = list(vary)
    explicit = [dict(c) for c in doc.get("config", [])]
    for c in explicit:
        both = sorted(set(c) & set(keys))
        if both:
            raise ConfigError(f"{src}: [[config]] sets {', '.join(both)}, which [vary] varies")
    combos = [dict(zip(keys, vals)) for vals in itertools.product(*(_values(f"{src}: vary.{k}", vary[k]) for k in keys))]
    if explicit and not keys:
        combos = []            # a list of configs alone: exactly those
    matches = lambda combo, entry, only: all(combo.get(k) == v for k, v in entry.items() if k in only)  # noqa: E731
    combos = [c for c in combos if not any(matches(c, e, set(e)) for e in doc.get("exclude", []))]
    for inc in doc.get("include", []):
        hit = [c for c in combos if matches(c, inc, set(vary))] if set(inc) & set(vary) else combos
        if hit:
            for c in hit:
                c.update({k: v for k, v in inc.items() if k not in vary})
        else:
            combos.append(dict(inc))
    combos += explicit
    if not combos:
        raise ConfigError(f"{src}: the sweep has no configs left")
    return combos


def _configs(src: str, name: str, kind: str, base: dict[str, Any], combos: list[dict[str, Any]], *,
             varied: bool) -> list[SweepConfig]:
    """Each combination over [base], validated as the benchmark of `kind` validates its settings."""
    configs = []
    for i, combo in enumerate(combos):
        merged = {**base, **combo}
        ranks = merged.pop("ranks", 1)
        if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
            raise ConfigError(f"{src}: config {i} ({_label(combo)}): ranks: must be a whole number >= 1")
        nodes = merged.pop("nodes", None)
        if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= ranks):
            raise ConfigError(f"{src}: config {i} ({_label(combo)}): nodes: must be a whole number from 1 to "
                              f"ranks ({ranks})")
        merged.setdefault("dir", ".")
        merged["dir"] = os.path.join(os.path.abspath(str(merged["dir"])), f"{name}-{i:03d}")
        try:
            p = data_params(merged) if kind == "data" else md_params(merged)
        except UsageError as e:
            hint = " (leave such combinations out with [[exclude]])" if varied else ""
            raise ConfigError(f"{src}: config {i} ({_label(combo)}): {e}{hint}") from None
        configs.append(SweepConfig(index=i, ranks=ranks, settings=p.to_dict(), label=_label(combo) or "base",
                                   nodes=nodes))
    return configs


# ---- running ------------------------------------------------------------------------------------------------
def _launcher_words(launcher: Any) -> list[str] | None:
    """The launcher setting as words: `mpiexec`, `srun`, or `srun` followed by its options in --opt=value form
    (None when it is none of these)."""
    try:
        words = shlex.split(launcher) if isinstance(launcher, str) else []
    except ValueError:
        return None
    if not words or words[0] not in ("mpiexec", "srun") or (words[0] == "mpiexec" and len(words) > 1):
        return None
    return words if all(w.startswith("-") for w in words[1:]) else None


#: how a config's worker is started: `-P` keeps the current directory off sys.path, so a folder named
#: `ioadvisor` where the sweep was started (a clone's parent directory) cannot shadow the installed package
WORKER = (sys.executable, "-P", "-m", "ioadvisor.bench.worker")


def launcher_command(plan: Plan, cfg: SweepConfig, plan_path: str | Path) -> list[str]:
    """The command that runs one config under the plan's launcher."""
    worker = [*WORKER, "run", str(plan_path), str(cfg.index)]
    words = _launcher_words(plan.launcher) or ["mpiexec"]
    if words[0] == "srun":
        spread = [] if cfg.nodes is None else ["-N", str(cfg.nodes), f"--ntasks-per-node={cfg.ranks_per_node}"]
        return ["srun", *words[1:], "-n", str(cfg.ranks), *spread, *worker]
    mpiexec = mpiexec_path()
    return [mpiexec, "-n", str(cfg.ranks), *_mpiexec_spread(mpiexec, cfg), *worker]


def _mpiexec_spread(mpiexec: str, cfg: SweepConfig) -> list[str]:
    """mpiexec's options that place `ranks_per_node` ranks on each node (MPICH's Hydra: -ppn; Open MPI:
    --map-by ppr:N:node), so a config's ranks span its nodes inside a larger allocation."""
    if cfg.nodes is None:
        return []
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    if "Open MPI" in out or "OpenRTE" in out:
        return ["--map-by", f"ppr:{cfg.ranks_per_node}:node"]
    return ["-ppn", str(cfg.ranks_per_node)]


def mpiexec_path() -> str:
    """The mpiexec that belongs to this Python's MPI (the venv's), else the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    found = shutil.which("mpiexec")
    if not found:
        raise UsageError("no mpiexec found: install ioadvisor[mpi] or load an MPI module")
    return found


def slurm_mpi_default() -> str | None:
    """slurm.conf's MpiDefault as `scontrol show config` reports it ("none" when the line is absent); None when
    scontrol cannot be asked."""
    try:
        p = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    found = [ln.split("=", 1)[1].strip() for ln in p.stdout.splitlines()
             if ln.split("=", 1)[0].strip() == "MpiDefault" and "=" in ln]
    return found[0] if found else "none"


def srun_without_mpi(plan: Plan) -> str | None:
    """Why srun would start a config's ranks as separate one-rank programs instead of one MPI job: srun with no
    MPI plugin (no --mpi= in the launcher, no $SLURM_MPI_TYPE, slurm.conf's MpiDefault none or absent), or
    --mpi=none. None when the launcher is not srun, no config has two ranks, or scontrol cannot tell; the ranks
    each result reports are checked in any case."""
    words = _launcher_words(plan.launcher) or ["mpiexec"]
    ranks = max(c.ranks for c in plan.configs)
    if words[0] != "srun" or ranks < 2:
        return None
    given = [w.split("=", 1)[1] for w in words[1:] if w.startswith("--mpi=")]
    if given:
        mpi, source = given[-1], "the launcher's --mpi"
    elif os.environ.get("SLURM_MPI_TYPE"):
        mpi, source = os.environ["SLURM_MPI_TYPE"], "$SLURM_MPI_TYPE"
    else:
        mpi, source = slurm_mpi_default(), "MpiDefault in slurm.conf (scontrol show config)"
        if mpi is None:
            return None
    if mpi.strip().lower() not in ("none", "(null)", ""):
        return None
    return (f"launcher {plan.launcher!r} would start {ranks} ranks as {ranks} separate one-rank programs: srun has "
            f"no MPI plugin ({source} is {mpi or 'empty'}). Set launcher = \"srun --mpi=pmi2\" in the sweep file "
            f"(`srun --mpi=list` shows the plugins; pmix for Open MPI), or launcher = \"mpiexec\"")


def verify_result(plan: Plan, cfg: SweepConfig, path: Path, job_id: str | None = None) -> str | None:
    """Why the result file at `path` is not a measurement of `cfg` as asked (None when it is): the ranks and
    nodes it reports, the file system it is filed under, and in an array the job and task that wrote it."""
    try:
        doc = json.loads(path.read_text())
        eff = doc["effective"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"{path}: not a readable result ({e})"
    where = doc.get("sweep") or {}
    if where.get("index") != cfg.index:
        return f"{path.name} holds config {where.get('index')}, not config {cfg.index}"
    if job_id is not None and (str(eff.get("slurm_array_job_id")), str(eff.get("slurm_array_task_id"))) != \
            (job_id, str(cfg.index)):
        return (f"{path.name} was written by job {eff.get('slurm_array_job_id')} task "
                f"{eff.get('slurm_array_task_id')}, not by task {cfg.index} of array job {job_id}")
    if eff.get("ranks") != cfg.ranks:
        return f"the result reports {eff.get('ranks')} rank(s), the config asked for {cfg.ranks}"
    if cfg.nodes is not None and eff.get("nodes") != cfg.nodes:
        return f"the result reports {eff.get('nodes')} node(s), the config asked for {cfg.nodes}"
    asked = cfg.settings.get("filesystem")
    if asked and doc.get("filesystem") != asked:
        return f"the result is filed under file system {doc.get('filesystem')!r}, the config asked for {asked!r}"
    return None


def write_plan(plan: Plan) -> Path:
    path = Path(plan.results) / PLAN_FILE
    atomic_write(path, plan.to_json())
    return path


Progress = Callable[[str, int, int, str], None]   # (event, done, total, message)


@dataclass
class SweepOutcome:
    plan: Plan
    results: list[str] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)
    kb_runs: int = 0
    job_id: str | None = None


def _ingest(kb_path: str | Path | None, path: Path) -> int:
    if kb_path is False:
        return 0
    from ..ingest import import_file
    from ..kb import KB
    try:
        center = json.loads(path.read_text()).get("params", {}).get("center")
    except (OSError, ValueError, AttributeError):
        center = None      # the import names what is wrong with the file
    with KB.open(kb_path) as store:
        # flagged against the center the benchmark ran under, as `kb import --center` would
        res = import_file(store, path, "bench", center=center)
    return 0 if res.skipped else res.runs


def run_allocation(plan: Plan, *, kb: str | Path | None | bool = None, progress: Progress | None = None,
                   timeout: float = 3600) -> SweepOutcome:
    """Run every config one after the other with the launcher in this allocation (or on this machine);
    `timeout` bounds the whole sweep."""
    plan_path = write_plan(plan)
    out = SweepOutcome(plan)
    total = len(plan.configs)
    deadline = time.monotonic() + timeout
    for n, cfg in enumerate(plan.configs):
        if progress:
            progress("start", n, total, cfg.label)
        cmd = launcher_command(plan, cfg, plan_path)
        left = deadline - time.monotonic()
        if left <= 0:
            out.failed.append((cfg.index, f"not run: the sweep's {timeout:.0f}s were used up"))
            continue
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
            ok, why = p.returncode == 0, _last_error(p.stderr) or f"exit code {p.returncode}"
        except subprocess.TimeoutExpired:
            ok, why = False, f"did not finish within {timeout:.0f}s"
        except OSError as e:
            raise UsageError(f"{cmd[0]}: cannot start: {e.strerror}") from None
        target = plan.result_path(cfg.index)
        wrong = verify_result(plan, cfg, target) if ok and target.exists() else None
        if ok and target.exists() and wrong is None:
            out.results.append(str(target))
            out.kb_runs += _ingest(kb, target)
        else:
            out.failed.append((cfg.index, why if not ok else wrong or "no result file written"))
        if progress:
            progress("done", n + 1, total, cfg.label)
    return out


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("Error")]
    return (errs or lines or [""])[-1]


# ---- Slurm job array ---------------------------------------------------------------------------------------
def render_array_script(plan: Plan, plan_path: str | Path) -> str:
    """The job-array script: one task per config, each reading its config from the plan JSON. Pure."""
    from ..slurm.array import render
    s = plan.slurm
    if any(c.nodes is not None for c in plan.configs):
        # every task asks for what the largest config needs: its nodes, and the most ranks any config puts on one
        size = [f"--nodes={max(c.nodes or 1 for c in plan.configs)}",
                f"--ntasks-per-node={max(c.ranks_per_node or c.ranks for c in plan.configs)}"]
    else:
        size = [f"--ntasks={max(c.ranks for c in plan.configs)}"]
    options = {"--nodes": s.get("nodes"), "--ntasks-per-node": s.get("ntasks_per_node"),
               "--partition": s.get("partition"), "--time": s.get("time"), "--account": s.get("account"),
               "--qos": s.get("qos"), "--constraint": s.get("constraint")}
    return render(name=f"ioadvise-{plan.name}", tasks=len(plan.configs), size=size,
                  output=str(Path(plan.results) / LOG_PATTERN.format(job="%A", task="%a")), options=options,
                  raw=[check_line_value(opt, "[slurm] options") for opt in s.get("options", [])],
                  comment="each task runs the config whose index is its array task id (see .plan.json)",
                  command=f"exec {shlex.join(WORKER)} launch "
                          f"{shlex.quote(str(plan_path))} \"$SLURM_ARRAY_TASK_ID\"")


def submit_array(plan: Plan) -> tuple[str, Path]:
    """Write plan and script, submit the script; returns (job id, script path)."""
    from ..slurm.array import submit
    plan_path = write_plan(plan)
    script = Path(plan.results) / SCRIPT_FILE
    atomic_write(script, render_array_script(plan, plan_path), mode=0o755)
    return submit(script), script


def wait_and_ingest(plan: Plan, job_id: str, *, kb: str | Path | None | bool = None,
                    progress: Progress | None = None, timeout: float = 3600, poll: float = 1.0) -> SweepOutcome:
    """Wait for the array's result files and add each to the KB as it arrives (a file is added once)."""
    from ..slurm.array import wait
    out = SweepOutcome(plan, job_id=job_id)
    pending = {c.index: plan.result_path(c.index) for c in plan.configs}
    total = len(pending)

    def task_error(idx: int) -> str:
        log = Path(plan.results) / LOG_PATTERN.format(job=job_id, task=idx)
        return _last_error(log.read_text(errors="replace")) if log.exists() else ""

    def collect() -> int:
        for idx, path in sorted(pending.items()):
            if path.exists():
                del pending[idx]
                wrong = verify_result(plan, plan.configs[idx], path, job_id)
                if wrong is None:
                    out.results.append(str(path))
                    out.kb_runs += _ingest(kb, path)
                else:   # not added to the KB: it would be filed as what was asked, not what ran
                    err = task_error(idx)
                    out.failed.append((idx, wrong + (f"; task {idx} said: {err}" if err else "")))
                if progress:
                    progress("done", total - len(pending), total, plan.configs[idx].label)
        return total - len(pending)

    wait(job_id, collect, total, timeout=timeout, poll=poll)
    for idx in sorted(pending):
        out.failed.append((idx, task_error(idx) or "no output and no result file written"))
    out.failed.sort()
    return out
