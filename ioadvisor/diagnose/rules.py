"""Diagnosis rules: small classes named by a stable ID, each turning a `LogSummary` into at most one `Finding`.

A rule's class docstring is its title. Thresholds come from data/thresholds.toml (a user file may override keys).
Rules only read the summary, the thresholds and a `Context` (the center's OST count; the KB's measured runs and
published comparisons, which the caller reads for them: rules never open the KB).

Every finding states the run time it puts at stake, in seconds per rank, and its severity follows from that time and
its share of the run ([SEVERITY] in the thresholds): below `min_seconds` a rule stays silent, so nothing that costs a
fraction of a second is ever reported, let alone rated high. The evidence of each finding holds the counters it read
and the arithmetic, so a reader can check it against the log.
"""
from __future__ import annotations

import functools
import math
import operator
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from ..errors import ConfigError
from ..frozen import field, frozen
from ..lustre import Setstripe, shell_word, stripe_size_problem
from ..model.run import Run
from ..model.types import Finding
from ..model.units import format_size
from ..tomlschema import Field, Table, first_problem, key_line
from ..darshanlog.summary import FileSummary, LogSummary, RankSpread

SCALE_FACTOR = 2              # a measured client count within this factor of the job's ranks is the job's scale
COLLECTIVE_SHARE = 0.9        # a file direction whose MPI-IO bytes may be this collective gets no collective advice


# ----------------------------------------------------------------------------------------------------
# thresholds

def _default_path() -> Path:
    from ..resources import data_dir
    return data_dir() / "thresholds.toml"


#: a thresholds file: [RULE_ID] tables only
RULE_TABLES = Table(other=Field("", "table"))


@functools.lru_cache(maxsize=4)
def _load_toml(path: str) -> dict[str, dict[str, Any]]:
    from ..util import read_toml
    data = read_toml(path, ConfigError)
    if first_problem(data, RULE_TABLES) is not None:
        raise ConfigError(f"{path}: every top-level entry must be a [RULE_ID] table")
    return data


def _shape(base: Mapping[str, Mapping[str, Any]]) -> Table:
    """What a user's thresholds file may hold: the shipped rules and keys, each of its shipped value's type (a
    number for a number)."""
    def kind(v: Any) -> str:
        if isinstance(v, bool):
            return "bool"
        return "number" if isinstance(v, (int, float)) else "list" if isinstance(v, list) else "str"
    return Table(tuple(Field(rid, "table", table=Table(tuple(Field(k, kind(v)) for k, v in t.items())))
                       for rid, t in base.items()))


def _where(user: str | Path, path: tuple[str, ...]) -> str:
    """`FILE:LINE` of the key at `path` in a user's thresholds file (`FILE` where the line is not found)."""
    from ..inputs import TOML
    from ..util import read_text
    line = key_line(read_text(user, TOML, ConfigError), path)
    return f"{user}:{line}" if line else str(user)


def load_thresholds(user: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The shipped thresholds, with the keys of `user` (a TOML file of [RULE_ID] tables) laid over them."""
    base = {k: dict(v) for k, v in _load_toml(str(_default_path())).items()}
    if user is None:
        return base
    over = _load_toml(str(Path(user).resolve()))
    p = first_problem(over, _shape(base))
    if p is not None and p.code == "unknown" and not p.path:
        raise ConfigError(f"{_where(user, p.keys[:1])}: unknown rule {p.keys[0]!r} (known: {', '.join(sorted(base))})")
    if p is not None and p.code == "unknown":
        rid = p.path[0]
        raise ConfigError(f"{_where(user, (rid, p.keys[0]))}: [{rid}] has no threshold {p.keys[0]!r} "
                          f"(known: {', '.join(base[rid])})")
    if p is not None:
        rid, key = p.path
        raise ConfigError(f"{_where(user, p.path)}: [{rid}] {key} must be a {type(base[rid][key]).__name__}")
    for rid, table in over.items():
        base[rid].update(table)
    return base


# ----------------------------------------------------------------------------------------------------
# context, severity, the rule base

class KBFacts(Protocol):
    """What rules ask of the KB (diagnose.facts answers from a KB file)."""

    def write_runs(self, system: str) -> list[Run]:
        """The KB's write runs (user and reference) of `system`, its name matched case-insensitively."""
        ...

    def comparisons(self, system: str) -> list[Mapping[str, Any]]:
        """The published comparisons measured on `system`."""
        ...


@frozen
class AdvisedStripes:
    """The stripe count `ioadvise advise` decides for a shared file's workload (LUS001 advises it, not the size
    table): `command` is the advise command line that gives it, `advice` its Advice."""

    count: int
    command: str
    advice: Any = None
    measured: bool = True      # decided from measured runs (else from the center file and published comparisons)


@frozen(kw_only=True)
class Context:
    """Optional knowledge beyond the log: the KB's facts (measured striping gains, published comparisons; None:
    no KB), the center's OST count, and `stripes`: the advice's decision for a shared file of the job (the caller
    asks `ioadvise advise` for it; a str says why there is none; None: no center and KB to ask)."""

    kb: KBFacts | None = None
    center_ost_count: int | None = None
    center_name: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    stripes: Callable[[FileSummary], AdvisedStripes | str] | None = None


def rate(at_stake: float, run_time: float, sev: Mapping[str, Any]) -> str | None:
    """Severity of `at_stake` seconds per rank in a run of `run_time` s; None below the floor (no finding)."""
    if at_stake < sev["min_seconds"]:
        return None
    share = at_stake / run_time if run_time > 0 else 1.0
    if at_stake >= sev["high_seconds"] and share >= sev["high_share"]:
        return "high"
    if at_stake >= sev["warn_seconds"] and share >= sev["warn_share"]:
        return "warn"
    return "info"


class Rule:
    """Base class; subclasses implement `check`. `max_severity` caps what `rate` gives (causes outside the job)."""

    id = ""
    max_severity = "high"

    @property
    def title(self) -> str:
        return (self.__doc__ or self.id).strip().splitlines()[0]

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        raise NotImplementedError

    def finding(self, s: LogSummary, t: Mapping[str, Any], message: str, evidence: Mapping[str, Any], *,
                at_stake: float | None, arithmetic: list[str], counters: Mapping[str, Any], advice: Any = None,
                severity: str | None = None, mean: float | None = None, who: str | None = None,
                saving: Mapping[str, Any] | None = None) -> Finding | None:
        """A Finding rated by the time at stake (None below the floor), with counters and arithmetic in evidence.
        `t` is the rule's thresholds as `run_rules` passes them, with the [SEVERITY] table under "severity".
        `who` names the ranks the time at stake is reckoned for (the aggregators, rank 0, the slowest rank) and
        `mean` is the same time averaged over all the job's ranks, shown beside it; `saving` is the expected gain
        of the advised change as a range with its basis (`gain`)."""
        if severity is None:
            severity = rate(at_stake or 0.0, s.run_time, t["severity"])
            if severity is None:
                return None
            order = ("info", "warn", "high")
            severity = order[min(order.index(severity), order.index(self.max_severity))]
        ev = dict(evidence)
        ev["counters"] = dict(counters)
        ev["arithmetic"] = list(arithmetic)
        if at_stake is not None:
            ev["time_at_stake_s"] = round(at_stake, 3)
            ev["run_time_s"] = s.run_time
            ev["share_of_run"] = round(at_stake / s.run_time, 4) if s.run_time else None
        if who is not None:
            ev["at_stake_for"] = who
        if mean is not None:
            ev["all_rank_mean_s"] = round(mean, 3)
        if saving is not None:
            ev["expected_saving"] = dict(saving)
        return Finding(id=self.id, title=self.title, severity=severity, message=message, evidence=ev,
                       advice=advice, time_at_stake_s=round(at_stake, 3) if at_stake is not None else None)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _pct1(x: float) -> str:
    return f"{100 * x:.1f}%"


def _short(path: str, n: int = 60) -> str:
    return path if len(path) <= n else "…" + path[-(n - 1):]


def _s(x: float) -> str:
    return f"{x:.3g} s" if x < 10 else f"{x:.0f} s"


def gain(low: float, high: float, basis: str) -> dict[str, Any]:
    """An expected saving in seconds per rank, as a range, with what it rests on."""
    low, high = max(0.0, low), max(0.0, high)
    return {"low_s": round(min(low, high), 1), "high_s": round(high, 1), "basis": basis}


def _gain_line(g: Mapping[str, Any]) -> str:
    return f"Expected saving: {g['low_s']:.0f} to {g['high_s']:.0f} s per rank ({g['basis']})."


def per_worker(s: LogSummary, items: list[tuple[FileSummary, float]]) -> tuple[float, float, str]:
    """(the busiest working rank, the mean over all ranks, who) of rank-seconds `secs` spent on each file: a shared
    file's time divides among the ranks that did its POSIX I/O (the aggregators under collective MPI-IO), a
    file of one rank adds to that rank; at most the run time."""
    shared = total = 0.0
    own: dict[int, float] = {}
    workers: set[int] = set()
    for f, secs in items:
        total += secs
        if f.rank is not None and not f.shared:
            own[f.rank] = own.get(f.rank, 0.0) + secs
        else:
            shared += secs / f.workers
            workers.add(f.workers)
    busiest = shared + max(own.values(), default=0.0)
    if own and not workers:
        who = f"rank {max(own, key=own.get)}"
    elif len(workers) == 1 and not own:
        n = next(iter(workers))
        who = f"each of the {n} ranks that did the POSIX I/O" if n < s.nprocs else "each rank"
    else:
        who = "the busiest rank"
    cap = s.run_time if s.run_time > 0 else math.inf
    return min(busiest, cap), min(total / max(1, s.nprocs), cap), who


def _may_be_collective(f: FileSummary, op: str) -> bool:
    """True if the file's MPI-IO bytes in direction `op` may be at least 90% collective (then no collective advice,
    and its POSIX requests are the aggregators' output rather than the application's own)."""
    d = f.mpiio(op)
    return bool(d and d.bytes and d.collective_share_max >= COLLECTIVE_SHARE)


# ----------------------------------------------------------------------------------------------------
# Lustre

def striped_dir(s: LogSummary, f: FileSummary) -> str:
    """The new directory LUS001 has the user stripe: `striped` beside the file, never in a file system's root
    (no directory of the user's, and one whose layout every later file there would inherit). For a file in the
    root of its mount: beside the file the job wrote most to below that mount, else under `$USER` there."""
    mnt = (f.mount or "").rstrip("/")

    def below(path: str) -> str | None:
        d = os.path.dirname(path).rstrip("/")
        return d if d and d != mnt and d.startswith(mnt + "/") else None

    home = below(f.path) or max(((g.bytes_written, d) for g in s.files if g.mount == f.mount and g.bytes_written
                                 and (d := below(g.path))), default=(0, f"{mnt}/$USER"))[1]
    return os.path.join(home, "striped")


def stripe_count_for(size: int, t: Mapping[str, Any]) -> int:
    """Stripe count the size table gives for a shared file of `size` bytes."""
    count = 1
    for step, c in zip(t["size_steps"], t["count_steps"]):
        if size >= step:
            count = int(c)
    return count


def measured_stripe_gain(kb: KBFacts | None, target: int, system: str | None, ranks: int) -> dict[str, Any] | None:
    """From the KB runs of the job's own `system`: the write gain of `<= target` stripes over 1 stripe measured
    with the same client count, the count closest to the job's `ranks`. Returns the system, both values, their
    run ids and the client count, or None when the system is unknown or no such pair was measured on it (a gain
    measured on another system says nothing about this one)."""
    if not system or kb is None:
        return None
    runs = [r for r in kb.write_runs(system) if r.stripe_count and r.is_bandwidth]
    groups: dict[tuple, list] = {}
    for r in runs:
        groups.setdefault((r.system, r.filesystem, r.api, r.nodes, r.ranks), []).append(r)
    pairs = []
    for key, rs in groups.items():
        ones = [r for r in rs if r.stripe_count == 1]
        more = [r for r in rs if 1 < r.stripe_count <= target]
        if ones and more and key[4]:
            pairs.append((key, max(ones, key=lambda r: r.value), max(more, key=lambda r: r.value)))
    if not pairs:
        return None
    # the job's own scale: the client count nearest the job's (by ratio), then the larger gain
    key, one, top = min(pairs, key=lambda p: (abs(math.log(p[0][4] / max(1, ranks))),
                                              -(p[2].value / p[1].value if p[1].value else 0.0)))
    gain = top.value / one.value if one.value else 0.0
    return {"system": key[0], "gain": round(gain, 2), "one_stripe_mib_s": round(one.value, 1),
            "stripes": top.stripe_count, "striped_mib_s": round(top.value, 1), "runs": [one.id, top.id],
            "clients": key[4], "job_ranks": ranks,
            "at_job_scale": key[4] / SCALE_FACTOR <= max(1, ranks) <= key[4] * SCALE_FACTOR}


def _file_rank_time(f: FileSummary) -> tuple[float, str]:
    """I/O time per rank on a file, at the layer that carried its bytes: the slowest rank's where the log has it,
    else the mean over its ranks."""
    if f.layer == "MPI-IO":
        t = sum(d.time for d in (f.mpiio_read, f.mpiio_write) if d)
        mean = t / max(1, f.ranks)
        sp = f.mpiio_spread
        if sp and sp.slowest_time > mean:
            return sp.slowest_time, (f"slowest rank {sp.slowest_rank} spent {sp.slowest_time:.3f} s in MPI-IO on "
                                     f"the file (MPIIO_F_SLOWEST_RANK_TIME)")
        return mean, f"{t:.3f} s MPI-IO read + write time / {f.ranks} ranks = {mean:.3f} s"
    mean = f.io_time / max(1, f.ranks)
    if f.spread and f.spread.slowest_time > mean:
        return f.spread.slowest_time, (f"slowest rank {f.spread.slowest_rank} spent {f.spread.slowest_time:.3f} s "
                                       f"on the file (POSIX_F_SLOWEST_RANK_TIME)")
    return mean, f"({f.read_time:.3f} + {f.write_time:.3f}) s read + write time / {f.ranks} ranks = {mean:.3f} s"


def _stripe_count_advice(f: FileSummary, s: LogSummary, t: Mapping[str, Any],
                         ctx: Context) -> tuple[int, list[str], AdvisedStripes | None]:
    """The stripe count to advise for shared file `f`, how it was reached, step by step, and the advice's decision
    where there is one: the count `ioadvise advise` decides for the file's workload from the center's measured
    runs; else the size table's, saying what the advice would need."""
    advised = ctx.stripes(f) if ctx.stripes is not None else None
    if isinstance(advised, AdvisedStripes):
        basis = "the measured runs" if advised.measured else "the center file (no measured run predicts it)"
        return advised.count, [f"{advised.count} as `{advised.command}` decides from {basis}"], advised
    want = stripe_count_for(f.layer_bytes, t)
    how = [f"{want} by the size table for a {format_size(f.layer_bytes)} shared file"]
    if ctx.center_ost_count and want > ctx.center_ost_count:
        want = ctx.center_ost_count
        how.append(f"capped at the file system's {want} OSTs (center config {ctx.center_name})")
    if f.ranks and want > f.ranks:
        want = f.ranks
        how.append(f"capped at the {f.ranks} ranks that access the file")
    want = max(want, 2)
    if not ctx.center_ost_count and s.fs_ost_count_at_least:
        how.append(f"the log shows at least {s.fs_ost_count_at_least} OSTs (a lower bound, not a limit)")
    if isinstance(advised, str):
        how.append(f"not the advice's count: {advised}")
    elif not ctx.center_name:
        how.append("not the advice's count: that needs --center naming the system the job ran on (and the "
                   "system's runs in the KB) to ask `ioadvise advise`")
    else:
        how.append(f"not the advice's count: that needs the KB's runs of {ctx.center_name}, which were not read")
    return want, how, None


def _gain_text(gain: Mapping[str, Any] | None, ctx: Context, ranks: int | None) -> str:
    """What striping is expected to gain: measured on this system at this job's scale, or why it is not known."""
    if gain and not gain["at_job_scale"]:
        return (f"Expected gain: no measurement for this system at this job's scale ({gain['system']}'s "
                f"1-stripe vs striped runs are at {gain['clients']} clients, this job has {ranks} ranks); "
                f"striping can give up to the stripe count times one OST's bandwidth, until the clients "
                f"become the limit.")
    if gain:
        return (f"Expected gain: about {gain['gain']:.1f}x, as measured on this system, {gain['system']} "
                f"(runs {', '.join(str(i) for i in gain['runs'])}: {gain['one_stripe_mib_s']} MiB/s on 1 stripe "
                f"vs {gain['striped_mib_s']} MiB/s on {gain['stripes']} stripes with {gain['clients']} "
                f"clients; this job has {ranks}).")
    where = f"the center {ctx.center_name}" if ctx.center_name else "the system this job ran on"
    return (f"Expected gain: no measurement for this system (the KB has no 1-stripe vs striped write "
            f"runs of {where}); striping can give up to the stripe count times one OST's bandwidth, "
            f"until the clients become the limit.")


def _striping_saving(hits: list[FileSummary], times: Mapping[int, float], want: int,
                     measured: Mapping[str, Any] | None) -> dict[str, Any]:
    """Time per rank striping the one-stripe files over `want` OSTs can save: with a gain measured on this system
    at this scale, each file's time less its time at that gain; else from nothing (the clients or the network
    are the limit) to each file's time less its time at `want` times the rate its one OST gave."""
    total = sum(times.values())
    if measured and measured["at_job_scale"] and measured["gain"] > 1:
        g = measured["gain"]
        return gain(total * (1 - 1 / g) * 0.5, total * (1 - 1 / g),
                    f"the KB's measured {g:.1f}x on {measured['system']} (runs "
                    f"{', '.join(str(i) for i in measured['runs'])}), from half that saving to all of it")
    rates = ", ".join(f"{g.layer_bytes / times[g.id] / 1e6:.0f} MB/s" for g in hits[:3] if times[g.id])
    return gain(0.0, total * (1 - 1 / want),
                f"the rate each file got from its one OST ({rates}) times {want} OSTs at best; nothing if the "
                f"clients or the network are the limit")


class LUS001(Rule):
    """Large shared file on a single stripe"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        # the bytes of the layer that carried them: a partial log may hold a file's MPI-IO records and few or none
        # of its POSIX ones
        hits = [f for f in s.shared_files if f.lustre and f.lustre.stripe_count
                and f.lustre.stripe_count <= t["max_stripe_count"] and f.layer_bytes >= t["min_file_bytes"]]
        if not hits:
            return None
        f = max(hits, key=lambda x: x.layer_bytes)
        size = f.layer_bytes
        want, how, advised = _stripe_count_advice(f, s, t, ctx)
        if advised is not None and want <= f.lustre.stripe_count:
            return None        # the advice keeps the file's stripe count: nothing to change
        ssize = f.lustre.stripe_size if f.lustre.stripe_size and not stripe_size_problem(f.lustre.stripe_size) \
            else (1 << 20)
        f_time, how_t = _file_rank_time(f)
        # every one-stripe file counts: the job waits for each in turn (at most the run time in all)
        times = {g.id: _file_rank_time(g)[0] for g in hits}
        at_stake = min(sum(times.values()), s.run_time if s.run_time > 0 else math.inf)
        # a new directory beside the file, never the file's own directory (that may be a top-level $USER
        # directory whose layout every later file would inherit)
        sdir = striped_dir(s, f)
        cmd = Setstripe(sdir, want, ssize).render()
        evidence: dict[str, Any] = {
            "file": f.path, "bytes": size, "layer": f.layer, "ranks": f.ranks, "stripe_count": f.lustre.stripe_count,
            "stripe_size": f.lustre.stripe_size, "osts": list(f.lustre.osts), "files_affected": len(hits),
            "recommended_stripe_count": want, "stripe_count_from": "advise" if advised else "size table",
            "fs_ost_count": ctx.center_ost_count, "fs_ost_count_at_least": s.fs_ost_count_at_least,
            "stripe_count_reasoning": "; ".join(how), "command": cmd}
        gain = measured_stripe_gain(ctx.kb, want, ctx.center_name, f.ranks)
        evidence["expected_gain"] = gain["gain"] if gain and gain["at_job_scale"] else None
        evidence["gain_basis"] = gain or None
        gtext = _gain_text(gain, ctx, f.ranks)
        saving = _striping_saving(hits, times, want, gain)
        gtext += " " + _gain_line(saving)
        msg = (f"{_short(f.path)} ({format_size(size)} through {f.layer}, {f.ranks} ranks) lives on "
               f"{f.lustre.stripe_count} OST, so every rank's data goes through one server; {_s(f_time)} per rank "
               f"went to it ({size / f_time / 1e6 if f_time else 0:.0f} MB/s). Stripe it over "
               f"{want} OSTs ({'; '.join(how)}): `mkdir -p {shell_word(sdir)}`, `{cmd}`, then create the file in "
               f"that new directory, or the MPI-IO hints "
               f"striping_factor={want} striping_unit={ssize}. {gtext}")
        if len(hits) > 1:
            msg += (f" {len(hits) - 1} more shared file(s) of at least {format_size(t['min_file_bytes'])} have the "
                    f"same layout: {_s(at_stake)} per rank on all {len(hits)}.")
        evidence["files"] = [{"file": g.path, "bytes": g.layer_bytes, "time_s": round(times[g.id], 3)}
                             for g in sorted(hits, key=lambda g: -times[g.id])[:10]]
        mw = f.mpiio_write.bytes if f.mpiio_write else 0
        mr = f.mpiio_read.bytes if f.mpiio_read else 0
        mean = min(sum(g.app_time()[1] for g in hits), at_stake)
        return self.finding(s, t, msg, evidence, at_stake=at_stake, saving=saving, mean=mean,
                            advice=advised.advice if advised else None,
                            who="the slowest rank of each file", counters={
            "LUSTRE_COMP_STRIPE_COUNT": f.lustre.stripe_count, "LUSTRE_COMP_STRIPE_SIZE": f.lustre.stripe_size,
            "POSIX_BYTES_READ": f.bytes_read, "POSIX_BYTES_WRITTEN": f.bytes_written,
            "MPIIO_BYTES_READ": mr, "MPIIO_BYTES_WRITTEN": mw,
            "POSIX_F_READ_TIME": round(f.read_time, 3), "POSIX_F_WRITE_TIME": round(f.write_time, 3)},
            arithmetic=[f"{f.layer}: max(POSIX {f.bytes_read} + {f.bytes_written}, MPI-IO {mr} + {mw}) = {size} "
                        f"bytes >= {t['min_file_bytes']}",
                        f"stripe count {f.lustre.stripe_count} <= {t['max_stripe_count']}", how_t,
                        f"{len(hits)} such file(s): " + " + ".join(f"{x:.1f}" for x in times.values())
                        + f" = {sum(times.values()):.1f} s per rank (at most the run time)"])


class LUS002(Rule):
    """An OST much slower than the others"""
    # per file, the write time of its slowest rank: the ranks sharing a file write at once, so their sum is not
    # time on the OST

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        from ..darshanlog.summary import median_ost_time
        used = [o for o in s.osts if o.files]
        if len(used) < t["min_osts"]:
            return None
        med = median_ost_time(s) or 0.0
        slow = [o for o in used if o.files >= t["min_files"] and o.mean_slowest_write_time >= t["factor"] * med
                and o.mean_slowest_write_time - med >= t["min_excess_seconds"]]
        if not slow:
            return None
        slow.sort(key=lambda o: -o.mean_slowest_write_time)
        worst = slow[0]
        excess = worst.mean_slowest_write_time - med
        names = ", ".join(f"OST {o.ost}" for o in slow)
        msg = (f"{names}: the {worst.files} files on OST {worst.ost} averaged {worst.mean_slowest_write_time:.0f} s "
               f"of write time against a median of {med:.1f} s per OST ({worst.mean_slowest_write_time / med:.0f}x)."
               if med > 0 else f"{names} took far longer than the other OSTs.")
        if s.run_time:
            msg += (f" The job waits for its slowest files: had OST {worst.ost} performed like the median, the write "
                    f"phase could have been about {excess:.0f} s shorter ({_pct(min(1.0, excess / s.run_time))} of "
                    f"the {s.run_time:.0f} s run). Report the OST to the center; until it is fixed, place new files "
                    f"on other OSTs (a start index other than {worst.ost}, option -i of lfs setstripe, or a pool "
                    f"without it).")
        evidence = {"slow_osts": [o.ost for o in slow], "ost": worst.ost, "files_on_ost": worst.files,
                    "mean_write_time_s": round(worst.mean_slowest_write_time, 2),
                    "median_ost_write_time_s": round(med, 2),
                    "osts_used": len(used)}
        saving = gain(0.0, excess, f"OST {worst.ost}'s files at the median OST's time per file, at best; nothing "
                                   f"while the new files still land on it")
        msg += " " + _gain_line(saving)
        return self.finding(s, t, msg, evidence, at_stake=excess, saving=saving, counters={
            "files_on_ost": worst.files, "POSIX_F_WRITE_TIME_on_ost": round(worst.slowest_write_time, 2)},
            arithmetic=[f"{worst.slowest_write_time:.1f} s / {worst.files} files = "
                        f"{worst.mean_slowest_write_time:.1f} s per file on OST {worst.ost} (each file's slowest rank)",
                        f"median over {len(used)} OSTs of the same = {med:.2f} s",
                        f"{worst.mean_slowest_write_time:.1f} >= {t['factor']} x {med:.2f} and "
                        f"{worst.mean_slowest_write_time:.1f} - {med:.2f} = {excess:.1f} s >= "
                        f"{t['min_excess_seconds']} s"])


class LUS003(Rule):
    """Few of the file system's OSTs used"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        lus = [f for f in s.files if f.lustre and not f.special]
        moved = sum(f.bytes for f in lus)
        if not lus or moved < t["min_bytes"]:
            return None
        used = {o for f in lus for o in f.lustre.osts}
        exact = bool(ctx.center_ost_count)
        total = ctx.center_ost_count or s.fs_ost_count_at_least
        if not total:
            return None
        share = len(used) / total     # with a lower-bound total, an upper bound of the true share
        if share >= t["warn_share"]:
            return None
        src = (f"the center config ({ctx.center_name})" if exact
               else "the log: at least that many, so the share is at most this")
        at_stake = sum(f.io_time for f in lus) / s.nprocs
        msg = (f"The job moved {format_size(moved)} through {len(used)} of {'' if exact else 'at least '}{total} OSTs "
               f"({_pct(share)}{'' if exact else ' or less'}; OST count from {src}), with {_s(at_stake)} of I/O per "
               f"rank on them. Bandwidth is bounded by the OSTs a job touches: use more stripes on shared files or "
               f"spread file-per-process output over more OSTs (stripe count 1 with the default start index).")
        return self.finding(s, t, msg, {"osts_used": len(used), "fs_ost_count": total, "fs_ost_count_exact": exact,
                                     "share": round(share, 3), "bytes": moved}, at_stake=at_stake,
                            counters={"distinct_osts": len(used), "fs_osts": total},
                            arithmetic=[f"{len(used)} / {total} = {share:.3f} < {t['warn_share']}",
                                        f"{sum(f.io_time for f in lus):.1f} rank-s / {s.nprocs} ranks = "
                                        f"{at_stake:.2f} s per rank"])


# ----------------------------------------------------------------------------------------------------
# requests and MPI-IO

def _small_fix(files_hit: list[tuple[FileSummary, int, str]], ranked: list[list]) -> str:
    """What to do about small requests, by where most of them are."""
    on_shared = sum(n for f, n in ranked if f.shared)
    all_small = sum(n for _, n in ranked)
    # collective advice only where MPI-IO itself moved this direction's bytes (and, as the rule checks, provably
    # < 90% of them collectively)
    mpi_shared = sum(n for f, n, op in files_hit if f.shared and (d := f.mpiio(op)) is not None and d.bytes)
    if mpi_shared >= all_small / 2:
        return ("Most are on shared files opened with MPI-IO with mostly independent calls: collective calls "
                "(MPI_File_write_all / read_all) let ROMIO aggregate them into stripe-sized requests.")
    if on_shared >= all_small / 2:
        return ("Most are on shared files: gather data into larger contiguous blocks per rank, or write the "
                "file with MPI-IO collective calls, which aggregate small pieces into large requests.")
    return ("Buffer the data in memory and issue fewer, larger requests (at least 1 MiB, ideally a "
            "multiple of the stripe size).")


def _own_requests(s: LogSummary, op: str) -> tuple[list[FileSummary], list[tuple[FileSummary, Any]], int, int]:
    """The regular files whose POSIX requests in direction `op` are the application's own (not those on a file
    MPI-IO may have moved at least 90% collectively in that direction, `_may_be_collective`: they are the
    aggregators'), each with its Requests, and the small and the non-empty requests among them: one pass over the
    files (a file-per-process job has thousands)."""
    fs = [f for f in s.files if not f.special and not _may_be_collective(f, op)]
    reqs = list(zip(fs, map(operator.attrgetter("read_req" if op == "read" else "write_req"), fs)))
    small = nonzero = 0
    for _, r in reqs:
        small += r.small
        nonzero += r.ops - r.zero
    return fs, reqs, small, nonzero


class SIZE001(Rule):
    """Many small requests (1 byte to just under 1 MiB)"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        parts, ev, arith, counters = [], {}, [], {}
        per_file: list[tuple[FileSummary, float]] = []
        files_hit: list[tuple[FileSummary, int]] = []
        for op in ("read", "write"):
            # POSIX requests on files MPI-IO reads/writes collectively are the aggregators' output: left out
            fs, reqs, small, nonzero = _own_requests(s, op)
            if not nonzero or small < t["min_count"] or small / nonzero <= t["share"]:
                continue
            secs = sum(r.time * r.small / r.ops for _, r in reqs if r.ops)
            per_file += [(f, r.time * r.small / r.ops) for f, r in reqs if r.ops and r.small]
            parts.append(f"{small} of {nonzero} non-empty POSIX {op}s ({_pct(small / nonzero)}) were smaller than "
                         f"1 MiB")
            ev[f"small_{op}s"] = small
            ev[f"{op}s"] = nonzero
            counters[f"POSIX_{op.upper()}S"] = sum(r.ops for _, r in reqs)
            counters[f"zero_byte_{op}s"] = sum(r.zero for _, r in reqs)
            counters[f"exactly_1MiB_{op}s"] = sum(r.exactly_1mib for _, r in reqs)
            below = sum(r.in_bins_below_1mib for _, r in reqs)
            refined = sum(r.refined_out for _, r in reqs)
            counters[f"POSIX_SIZE_{op.upper()}_0_100..100K_1M"] = below
            moved = sum(f.bytes_read if op == "read" else f.bytes_written for f, _ in reqs)
            counters[f"POSIX_BYTES_{'READ' if op == 'read' else 'WRITTEN'}"] = moved
            left_out = len(s.files) - len(fs)
            arith.append(f"{op}s: {below} in the bins up to 1 MiB - {refined} the common access sizes or the bytes "
                         f"moved allow to be zero-byte or exactly 1 MiB (a {op} that moved data moved at least 1 byte: "
                         f"at most {moved} did) = {small} small; {small} / {nonzero} non-empty = "
                         f"{small / nonzero:.3f} > {t['share']}"
                         + (f" ({left_out} FIFO or collectively written file(s) left out)" if left_out else ""))
            arith.append(f"{op} time in them: {secs:.2f} rank-s (each file's {op} time x small/ops)")
            files_hit += [(f, r.small, op) for f, r in reqs if r.small]
        if not parts:
            return None
        top: dict[int, list] = {}
        for f, n, _ in files_hit:
            top.setdefault(f.id, [f, 0])[1] += n
        ranked = sorted(top.values(), key=lambda x: -x[1])
        ev["files"] = [{"file": f.path, "small_ops": n} for f, n in ranked[:3]]
        ev["files_affected"] = len(ranked)
        merged: dict[int, list] = {}
        for f, secs in per_file:
            merged.setdefault(f.id, [f, 0.0])[1] += secs
        at_stake, mean, who = per_worker(s, [(f, secs) for f, secs in merged.values()])
        arith.append(f"over {len(merged)} file(s): {sum(x[1] for x in merged.values()):.2f} rank-s; for {who} "
                     f"{at_stake:.3f} s, / {s.nprocs} ranks {mean:.3f} s")
        fix = _small_fix(files_hit, ranked)
        saving = gain(0.0, at_stake, "the small requests' measured time, which their per-request cost is at most; "
                                     "the bytes still move")
        msg = ("; ".join(parts) + f", on {len(ranked)} file(s); {_s(at_stake)} in them for {who} ({_s(mean)} "
               f"averaged over all {s.nprocs} ranks). " + fix + " " + _gain_line(saving))
        return self.finding(s, t, msg, ev, at_stake=at_stake, counters=counters, arithmetic=arith, mean=mean,
                            who=who, saving=saving)


class MPI001(Rule):
    """Independent MPI-IO on a shared file"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        if not s.has_mpiio:
            return None
        hits = []
        for f in s.shared_files:
            for op in ("read", "write"):
                d = f.mpiio(op)
                if (d and d.bytes and d.independent_ops >= t["min_ops"]
                        and d.independent_ops / (d.independent_ops + d.collective_ops) > t["indep_share"]
                        and d.collective_share_max < COLLECTIVE_SHARE):
                    hits.append((f, op, d))
        if not hits:
            return None
        f, op, d = max(hits, key=lambda x: x[2].independent_ops)
        ranks = max(1, f.ranks)
        indep_share_max = 1 - d.collective_share_min
        at_stake = d.time * indep_share_max / ranks
        ops = d.independent_ops + d.collective_ops
        small = f.small_reads if op == "read" else f.small_writes
        msg = (f"{_short(f.path)}: {d.independent_ops} of {ops} MPI-IO {op}s ({_pct(d.independent_ops / ops)}) are "
               f"independent, and at most {_pct(d.collective_share_max)} of its {format_size(d.bytes)} went through "
               f"collective calls; {_s(at_stake)} per rank at stake. Use collective calls (MPI_File_{op}_all, or "
               f"H5FD_MPIO_COLLECTIVE in HDF5) so aggregators combine the pieces"
               + (f"; with romio_cb_{op}=enable the {small} small POSIX {op}s become a few stripe-sized ones."
                  if small else "."))
        ev: dict[str, Any] = {"file": f.path, "op": op, "independent_ops": d.independent_ops,
                              "collective_ops": d.collective_ops, "collective_share_max": round(d.collective_share_max, 4),
                              "small_posix_requests": small, "files_affected": len({id(h[0]) for h in hits})}
        against = _two_phase_losses(ctx)
        if against:
            ev["contrary_comparisons"] = against
            c = against[0]
            msg += (f" Caution: on {c['system']} two-phase I/O measured slower than without it for {c['op']}s "
                    f"({c['citation']}); there, try collective calls with romio_cb_{c['op']}=disable as well "
                    f"and keep the faster.")
        saving = gain(0.0, at_stake, "the independent calls' share of the MPI-IO time, at most; collective "
                                     "calls move the same bytes through fewer, larger requests")
        msg += " " + _gain_line(saving)
        D = "READS" if op == "read" else "WRITES"
        return self.finding(s, t, msg, ev, at_stake=at_stake, saving=saving, counters={
            f"MPIIO_INDEP_{D}+MPIIO_NB_{D}": d.independent_ops, f"MPIIO_COLL_{D}+MPIIO_SPLIT_{D}": d.collective_ops,
            f"MPIIO_BYTES_{'READ' if op == 'read' else 'WRITTEN'}": d.bytes, f"MPIIO_F_{op.upper()}_TIME": round(d.time, 3)},
            arithmetic=[f"collective bytes at most {d.collective_bytes_max} (the {d.collective_ops} largest requests "
                        f"of the size histogram) / {d.bytes} = {d.collective_share_max:.3f} < {COLLECTIVE_SHARE}",
                        f"{d.time:.2f} rank-s x independent share <= {indep_share_max:.3f} / {ranks} ranks = "
                        f"{at_stake:.3f} s per rank"])


def _two_phase_losses(ctx: Context) -> list[dict[str, Any]]:
    """Published comparisons on the center's system in which disabling two-phase I/O won."""
    if not ctx.center_name or ctx.kb is None:
        return []
    rows = ctx.kb.comparisons(ctx.center_name)
    return [{"system": r["system"], "op": r["op"], "better": r["better"], "worse": r["worse"],
             "citation": r["citation"], "source": r["source"]}
            for r in rows if r["factor"] in ("cb_write", "cb_read") and str(r["better"]).lower() == "disable"]


def _posix_under(f: FileSummary) -> tuple[float, str]:
    """The POSIX time of the rank that spent longest in POSIX on the file, and how the log gives it."""
    if f.posix_ranks:
        return f.posix_rank_max_time, (f"the slowest of the {f.posix_ranks} ranks with POSIX I/O on the file: "
                                       f"{f.posix_rank_max_time:.1f} s of POSIX read + write + metadata time")
    if f.spread:
        return f.spread.slowest_time, (f"POSIX's slowest rank {f.spread.slowest_rank}: {f.spread.slowest_time:.1f} s"
                                       f" (POSIX_F_SLOWEST_RANK_TIME)")
    t = f.io_time / max(1, f.ranks)
    return t, f"POSIX read + write time {f.io_time:.1f} rank-s / {f.ranks} ranks = {t:.1f} s"


def _aggregator_advice(f: FileSummary, ctx: Context) -> tuple[str, int | None]:
    """What the hints in effect were (aggregators seen, the file's striping) and the aggregator count to try."""
    a, lus = f.posix_ranks, f.lustre
    have = []
    if a:
        have.append(f"{a} aggregators (ranks with POSIX I/O on the file: cb_nodes in effect), "
                    f"{f.ranks / a:.1f} ranks per aggregator")
    if lus and lus.stripe_count:
        have.append(f"striping_factor {lus.stripe_count}, striping_unit {format_size(lus.stripe_size)}")
    now = a or (lus.stripe_count if lus else None)
    if not now or now >= f.ranks:
        return "; ".join(have), None
    want = min(2 * now, f.ranks)
    if ctx.center_ost_count and lus and lus.stripe_count >= ctx.center_ost_count:
        text = (f"the file already spans all {ctx.center_ost_count} OSTs: raise cb_nodes to {want} "
                f"(several aggregators per OST) and keep the larger if it is faster")
    else:
        text = (f"with more aggregators each handles fewer ranks' data: set striping_factor={want} and "
                f"cb_nodes={want} when the file is created (ROMIO on Lustre uses one aggregator per stripe "
                f"unless cb_nodes says otherwise)")
    return "; ".join(have) + ". " + text[0].upper() + text[1:], want


class COLL001(Rule):
    """Collective MPI-IO time far above the POSIX time under it"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        hits = []
        for f in s.shared_files:
            dirs = [d for d in (f.mpiio_read, f.mpiio_write) if d]
            # the cause named (the two-phase exchange) needs collective calls to be most of the file's calls
            if not f.mpiio_spread or sum(d.collective_ops for d in dirs) <= sum(d.independent_ops for d in dirs):
                continue
            mpi_slow, mpi_mean = f.app_time()
            posix, how = _posix_under(f)
            if mpi_slow > 0 and (mpi_slow - posix) / mpi_slow >= t["share"] and mpi_slow - posix >= t["min_seconds"]:
                hits.append((f, mpi_slow, mpi_mean, posix, how))
        if not hits:
            return None
        cap = s.run_time if s.run_time > 0 else math.inf
        at_stake = min(cap, sum(h[1] - h[3] for h in hits))
        mean = min(cap, sum(max(0.0, h[2] - h[3]) for h in hits))
        f, mpi_slow, mpi_mean, posix, how = max(hits, key=lambda h: h[1] - h[3])
        hints, want = _aggregator_advice(f, ctx)
        msg = (f"{_short(f.path)}: the slowest rank spent {_s(mpi_slow)} in MPI-IO on the file ({_s(mpi_mean)} "
               f"on average over its {f.ranks} ranks), while {how.split(':')[0]} spent {_s(posix)} in POSIX: "
               f"{_s(mpi_slow - posix)} per rank went to ROMIO's two-phase exchange and to waiting for the "
               f"aggregators, not to the file system.")
        if len(hits) > 1:
            msg += f" {len(hits) - 1} more collectively written file(s) show the same; {_s(at_stake)} in all."
        if hints:
            msg += f" In effect: {hints}."
        if want is None and not f.posix_ranks:
            msg += (" The log holds one POSIX record for all ranks, so the aggregators in effect are not known: "
                    "compare a run with cb_nodes (and the stripe count) raised.")
        saving = None
        if want and f.posix_ranks:
            a = f.posix_ranks
            saving = gain(0.0, mpi_slow * (1 - a / want),
                          f"the slowest rank's {mpi_slow:.0f} s in MPI-IO scaled by {a}/{want} aggregators at best; "
                          f"nothing if the OSTs or the network are the limit")
            msg += " " + _gain_line(saving)
        D = "MPIIO_F_SLOWEST_RANK_TIME"
        return self.finding(s, t, msg, {"file": f.path, "mpiio_slowest_rank_s": round(mpi_slow, 3),
                                        "mpiio_mean_s": round(mpi_mean, 3), "posix_s": round(posix, 3),
                                        "aggregators": f.posix_ranks, "ranks": f.ranks,
                                        "stripe_count": f.lustre.stripe_count if f.lustre else None,
                                        "stripe_size": f.lustre.stripe_size if f.lustre else None,
                                        "recommended_cb_nodes": want, "files_affected": len(hits),
                                        "files": [h[0].path for h in hits[:5]]},
                            at_stake=at_stake, mean=mean, who="the slowest rank",
                            saving=saving,
                            counters={D: round(f.mpiio_spread.slowest_time, 3),
                                      "MPIIO_F_READ_TIME+WRITE_TIME": round(mpi_mean * f.ranks, 3),
                                      "POSIX_F_READ_TIME+WRITE_TIME (slowest POSIX rank)": round(posix, 3)},
                            arithmetic=[f"{h[0].path.rsplit('/', 1)[-1]}: MPI-IO {h[1]:.1f} s - POSIX {h[3]:.1f} s "
                                        f"({h[4]}) = {h[1] - h[3]:.1f} s, {(h[1] - h[3]) / h[1]:.2f} of the MPI-IO time "
                                        f">= {t['share']}" for h in hits[:5]]
                            + [f"sum over {len(hits)} file(s) = {at_stake:.1f} s for the slowest rank (at most the "
                               f"run time); with each file's mean MPI-IO time per rank instead {mean:.1f} s"])


def _extra_traffic(f: FileSummary) -> tuple[float, float]:
    """(write, read) rank-seconds of POSIX traffic beyond what MPI-IO was asked for on file `f`: the written bytes'
    excess share of the write time, and the read bytes' excess share of the read time; reads that returned 0 bytes
    where MPI-IO read nothing are all excess (ROMIO reading back holes), not nothing."""
    mw = f.mpiio_write.bytes if f.mpiio_write else 0
    mr = f.mpiio_read.bytes if f.mpiio_read else 0
    extra_w = f.write_time * (1 - mw / f.bytes_written) if f.bytes_written > mw else 0.0
    if f.bytes_read > mr:
        extra_r = f.read_time * (1 - mr / f.bytes_read)
    else:
        extra_r = f.read_time if mr == 0 and f.reads else 0.0
    return extra_w, extra_r


class RMW001(Rule):
    """POSIX wrote far more than MPI-IO was asked to (read-modify-write)"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        hits = [f for f in s.files if f.mpiio_write and f.mpiio_write.bytes >= t["min_mpiio_bytes"]
                and f.bytes_written >= t["factor"] * f.mpiio_write.bytes]
        if not hits:
            return None
        extra = {f.id: _extra_traffic(f) for f in hits}
        at_stake, mean, who = per_worker(s, [(g, sum(extra[g.id])) for g in hits])
        f = max(hits, key=lambda x: sum(extra[x.id]))
        extra_w, extra_r = extra[f.id]
        mw, mr = f.mpiio_write.bytes, (f.mpiio_read.bytes if f.mpiio_read else 0)
        ratio = f.bytes_written / mw
        coll = f.mpiio_write.collective_share_min >= COLLECTIVE_SHARE
        msg = (f"{_short(f.path)}: POSIX wrote {format_size(f.bytes_written)}, {ratio:.1f}x the "
               f"{format_size(mw)} MPI-IO was asked to write, and made {f.reads} reads of {format_size(f.bytes_read)}"
               f" where MPI-IO read {format_size(mr)}" + (f" ({f.read_req.zero} of them returned 0 bytes)"
                                                         if f.read_req.zero else "")
               + f"; {_s(at_stake)} went to the extra traffic for {who} ({_s(mean)} averaged over all "
               f"{s.nprocs} ranks)" + (f", over {len(hits)} files" if len(hits) > 1 else "")
               + ". ROMIO read the regions around the data and wrote them back whole: ")
        msg += ("two-phase collective writes over extents with holes. Make each collective write cover a "
                "contiguous region (HDF5: contiguous datasets aligned with H5Pset_alignment to the stripe size)."
                if coll else
                "data sieving for independent writes (and two-phase writes over extents with holes). Set "
                "romio_ds_write=disable, or make the writes contiguous.")
        reads_only = sum(extra[g.id][1] for g in hits)
        saving = gain(per_worker(s, [(g, extra[g.id][1]) for g in hits])[0], at_stake,
                      "the extra reads' measured time, which goes once nothing is read back, up to that and the "
                      "extra writes' share of the write time")
        msg += " " + _gain_line(saving)
        return self.finding(s, t, msg, {"file": f.path, "posix_bytes_written": f.bytes_written, "mpiio_bytes_written": mw,
                                     "posix_bytes_read": f.bytes_read, "mpiio_bytes_read": mr,
                                     "ratio": round(ratio, 2), "zero_byte_reads": f.read_req.zero,
                                     "posix_ranks": f.posix_ranks, "files_affected": len(hits)},
                            at_stake=at_stake, mean=mean, who=who, saving=saving, counters={
                                "POSIX_BYTES_WRITTEN": f.bytes_written, "MPIIO_BYTES_WRITTEN": mw,
                                "POSIX_BYTES_READ": f.bytes_read, "MPIIO_BYTES_READ": mr, "POSIX_READS": f.reads,
                                "POSIX_F_WRITE_TIME": round(f.write_time, 4), "POSIX_F_READ_TIME": round(f.read_time, 4)},
                            arithmetic=[f"{f.bytes_written} / {mw} = {ratio:.2f} >= {t['factor']}",
                                        f"extra writes: {f.write_time:.4f} s x (1 - {mw}/{f.bytes_written}) = "
                                        f"{extra_w:.4f} rank-s",
                                        f"extra reads: {f.read_time:.4f} s"
                                        + (f" x (1 - {mr}/{f.bytes_read})" if f.bytes_read > mr else
                                           f" (all {f.reads} reads: MPI-IO read {mr} bytes)" if extra_r else " x 0")
                                        + f" = {extra_r:.4f} rank-s",
                                        f"all {len(hits)} file(s): {sum(map(sum, extra.values())):.2f} rank-s "
                                        f"(reads {reads_only:.2f}); per working rank {at_stake:.2f} s, / "
                                        f"{s.nprocs} ranks {mean:.3f} s"])


def _file_api(s: LogSummary, f: FileSummary) -> str:
    """The interface the application wrote the file with, as far as the log shows: HDF5 or PnetCDF where the log
    holds that library's module (or, for HDF5, the file's name says so), MPI-IO where the file has MPI-IO
    records, else POSIX."""
    name = f.path.lower()
    if name.endswith((".h5", ".hdf5", ".he5", ".nc4")) or ("H5F" in s.modules and name.endswith(".h5")):
        return "HDF5"
    if "PNETCDF_FILE" in s.modules and name.endswith((".nc", ".cdf")) and f.mpiio_bytes:
        return "PnetCDF"
    return "MPI-IO" if f.mpiio_bytes else "POSIX"


ALIGN_FIX = {
    "HDF5": "HDF5: H5Pset_alignment(fapl, threshold, {unit}) on the file access property list, so every object "
            "above the threshold starts on a {kind} boundary",
    "PnetCDF": "PnetCDF: the hints nc_var_align_size={unit} and nc_header_align_size={unit}",
    "MPI-IO": "MPI-IO: a file view whose blocks are multiples of {unit} and the hint striping_unit={unit}",
    "POSIX": "POSIX: offsets and sizes of each rank's requests in multiples of {unit} (pad the records)",
}


class ALIGN001(Rule):
    """Requests not aligned to the file's stripes or blocks"""

    max_severity = "warn"     # the log holds the misaligned requests' time, not what alignment would save of it

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        hits = []
        for f in s.files:
            ops = f.reads + f.writes
            # under collective MPI-IO with known aggregators the requests are ROMIO's file domains, not the
            # application's (COLL001, RMW001 look at those)
            if f.special or not f.alignment or ops < t["min_ops"] or f.not_aligned / ops < t["share"] or (
                    f.posix_ranks and f.posix_ranks < f.ranks and f.mpiio_bytes):
                continue
            hits.append((f, min(1.0, f.not_aligned / ops)))
        if not hits:
            return None
        at_stake, mean, who = per_worker(s, [(f, f.io_time * share) for f, share in hits])
        f, share = max(hits, key=lambda h: h[0].io_time * h[1])
        stripe = bool(f.lustre and f.lustre.stripe_size and f.alignment == f.lustre.stripe_size)
        kind = "stripe" if stripe else "block"
        api = _file_api(s, f)
        per_ost = (f" {f.ranks} ranks share its {f.lustre.stripe_count} stripes, {f.ranks / f.lustre.stripe_count:.0f}"
                   f" per OST: a request across a stripe boundary takes locks on two OSTs."
                   if stripe and f.shared and f.lustre.stripe_count else "")
        fix = ALIGN_FIX[api].format(unit=f.alignment, kind=kind)
        if api in ("HDF5", "PnetCDF") and f.mpiio_bytes:
            fix += "; under it, " + ALIGN_FIX["MPI-IO"].format(unit=f.alignment, kind=kind)
        if f.mpiio_bytes and not (_may_be_collective(f, "write") or _may_be_collective(f, "read")):
            fix += ", or collective calls, whose file domains ROMIO aligns to the stripes"
        saving = gain(0.0, at_stake, "at most the time of the misaligned requests; how much of it alignment "
                                     "saves depends on the lock contention the log does not measure")
        msg = (f"{_short(f.path)}: {f.not_aligned} of {f.reads + f.writes} requests ({_pct1(share)}) are not "
               f"aligned to the file's {format_size(f.alignment)} {kind}s.{per_ost} {_s(at_stake)} went to the "
               f"misaligned requests for {who} ({_s(mean)} averaged over all {s.nprocs} ranks)"
               + (f", on {len(hits)} files" if len(hits) > 1 else "") + f". Align them ({fix}). "
               + _gain_line(saving))
        return self.finding(s, t, msg, {"file": f.path, "kind": kind, "alignment": f.alignment, "api": api,
                                        "not_aligned": f.not_aligned, "requests": f.reads + f.writes,
                                        "stripe_count": f.lustre.stripe_count if f.lustre else None,
                                        "ranks": f.ranks, "files_affected": len(hits)},
                            at_stake=at_stake, mean=mean, who=who, saving=saving,
                            counters={"POSIX_FILE_NOT_ALIGNED": f.not_aligned, "POSIX_FILE_ALIGNMENT": f.alignment,
                                      "POSIX_READS+WRITES": f.reads + f.writes,
                                      "LUSTRE_COMP_STRIPE_SIZE": f.lustre.stripe_size if f.lustre else None},
                            arithmetic=[f"{_short(g.path, 40)}: {g.not_aligned} / {g.reads + g.writes} = {sh:.3f} >= "
                                        f"{t['share']}; {g.io_time:.1f} rank-s x {sh:.3f}" for g, sh in hits[:5]]
                            + [f"for {who}: {at_stake:.2f} s; / {s.nprocs} ranks {mean:.3f} s"])


# ----------------------------------------------------------------------------------------------------
# metadata, balance, STDIO, coverage

class META001(Rule):
    """Much time in metadata operations"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        m = s.meta
        per_rank = m.per_rank_max
        if per_rank < t["min_seconds_per_rank"] or not s.run_time or per_rank / s.run_time < t["share"]:
            return None
        worst = max((f for f in s.files if not f.special), key=lambda f: f.meta_time / max(1, f.ranks), default=None)
        who = f"rank {m.busiest_rank}" if m.busiest_rank is not None else "every rank"
        msg = (f"{who[0].upper() + who[1:]} spent {per_rank:.1f} s in open/stat/seek/close on files in a {s.run_time:.0f} s "
               f"run ({_pct(per_rank / s.run_time)})")
        if worst is not None and worst.meta_time > 0:
            msg += f"; the file with most of it per rank is {_short(worst.path)}"
        msg += (". Open files once and keep them open, avoid stat/seek per request, and for many small files use "
                "fewer, larger files or node-local scratch.")
        if m.left_out_rank_seconds:
            msg += (f" Not counted: {m.left_out_rank_seconds:.1f} rank-s on {m.left_out_files} FIFOs, pipes or "
                    f"sockets, whose opens wait for the other end.")
        saving = gain(0.0, per_rank, "the busiest rank's metadata time, at most; each file still needs one open "
                                     "and close")
        msg += " " + _gain_line(saving)
        return self.finding(s, t, msg, {"meta_time_rank_s": round(m.rank_seconds, 2), "per_rank_s": round(per_rank, 3),
                                     "busiest_rank": m.busiest_rank, "file": worst.path if worst else None,
                                     "left_out_rank_s": round(m.left_out_rank_seconds, 2)},
                            at_stake=per_rank, saving=saving,
                            counters={"POSIX_F_META_TIME+STDIO_F_META_TIME": round(m.rank_seconds, 3),
                                                         "nprocs": s.nprocs},
                            arithmetic=[f"shared records' metadata time / {s.nprocs} processes + the busiest rank's "
                                        f"own records = {per_rank:.3f} s per rank >= {t['min_seconds_per_rank']} s",
                                        f"{per_rank:.3f} / {s.run_time:.0f} s run = {per_rank / s.run_time:.4f} >= "
                                        f"{t['share']}"])


def _spread_for(f: FileSummary) -> RankSpread | None:
    """The layer whose per-rank figures describe the application: MPI-IO where it drives the file collectively
    (POSIX then shows aggregators, and non-aggregators move 0 bytes), POSIX otherwise."""
    if f.mpiio_spread and (_may_be_collective(f, "write") or _may_be_collective(f, "read")):
        return f.mpiio_spread
    return f.spread


def _gaps(s: LogSummary, t: Mapping[str, Any]) -> list[tuple[FileSummary, RankSpread, float]]:
    out = []
    for f in s.shared_files:
        sp = _spread_for(f)
        if f.bytes < t["min_bytes"] or sp is None:
            continue
        gap = sp.slowest_time - sp.fastest_time
        if sp.slowest_time > 0 and gap >= t["min_seconds"] and gap / sp.slowest_time > t["share"]:
            out.append((f, sp, gap))
    return out


def _spread_arith(sp: RankSpread, tol: float) -> list[str]:
    a = [f"{sp.layer}: slowest rank {sp.slowest_rank} {sp.slowest_time:.2f} s with {sp.slowest_bytes} bytes, "
         f"fastest rank {sp.fastest_rank} {sp.fastest_time:.2f} s with {sp.fastest_bytes} bytes, mean "
         f"{sp.mean_bytes:.0f} bytes per rank"
         + (f", standard deviation {sp.bytes_stddev:.0f}" if sp.bytes_stddev is not None else ""),
         f"bytes per rank differ from the mean by up to {_pct1(sp.bytes_agree_within)} "
         f"({'more' if sp.bytes_agree_within > tol else 'not more'} than {_pct(tol)})"]
    return a


class IMB001(Rule):
    """Data unevenly spread over the ranks of a shared file"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        hits = []
        for f, sp, gap in _gaps(s, t):
            layer_bytes = f.bytes if sp.layer == "POSIX" else sum(d.bytes for d in (f.mpiio_read, f.mpiio_write) if d)
            if sp.bytes_agree_within <= t["bytes_tolerance"]:
                continue                       # equal data: a straggler, not imbalance (STRAG001)
            if sp.slowest_bytes <= sp.mean_bytes:
                continue                       # the slow rank did not have more data: the bytes do not explain it
            if layer_bytes and sp.slowest_bytes >= 0.99 * layer_bytes:
                continue                       # one rank moved everything: a serial pattern, not a balance question
            hits.append((f, sp, gap))
        if not hits:
            return None
        f, sp, gap = max(hits, key=lambda x: x[2])
        # balanced, the slowest rank moves the mean at its own measured rate
        balanced = sp.slowest_time * sp.mean_bytes / sp.slowest_bytes if sp.slowest_bytes else sp.slowest_time
        saving = gain(0.0, min(gap, sp.slowest_time - max(balanced, sp.fastest_time)),
                      f"the slowest rank moving the mean {format_size(sp.mean_bytes)} at the rate it got, "
                      f"{sp.slowest_bytes / sp.slowest_time / 1e6 if sp.slowest_time else 0:.0f} MB/s, at best; "
                      f"nothing if the other ranks slow down by as much with more data")
        msg = (f"{_short(f.path)}: the slowest rank ({sp.slowest_rank}) moved {format_size(sp.slowest_bytes)} and "
               f"spent {sp.slowest_time:.1f} s; the fastest ({sp.fastest_rank}) moved {format_size(sp.fastest_bytes)} "
               f"in {sp.fastest_time:.1f} s, against a mean of {format_size(sp.mean_bytes)} per rank. Everyone waits "
               f"for the slowest: give each rank a similar share of the data. " + _gain_line(saving))
        return self.finding(s, t, msg, {"file": f.path, "layer": sp.layer, "slowest_rank": sp.slowest_rank,
                                     "fastest_rank": sp.fastest_rank, "slowest_s": round(sp.slowest_time, 3),
                                     "fastest_s": round(sp.fastest_time, 3), "slowest_bytes": sp.slowest_bytes,
                                     "fastest_bytes": sp.fastest_bytes, "mean_bytes": round(sp.mean_bytes),
                                     "files_affected": len(hits)},
                            at_stake=gap, saving=saving,
                            counters={"slowest_rank": sp.slowest_rank, "fastest_rank": sp.fastest_rank},
                            arithmetic=_spread_arith(sp, t["bytes_tolerance"])
                            + [f"{sp.slowest_time:.2f} - {sp.fastest_time:.2f} = {gap:.2f} s"])


class STRAG001(Rule):
    """One rank much slower than the others with the same data"""

    max_severity = "warn"        # the cause lies outside the application: it cannot act on it alone

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        hits = [(f, sp, gap) for f, sp, gap in _gaps(s, t) if sp.bytes_agree_within <= t["bytes_tolerance"]]
        if not hits:
            return None
        f, sp, gap = max(hits, key=lambda x: x[2])
        per_ost = ""
        if f.lustre and f.lustre.stripe_count:
            per_ost = (f" {f.ranks} ranks share its {f.lustre.stripe_count} stripes, "
                       f"{f.ranks / f.lustre.stripe_count:.0f} per OST.")
        msg = (f"{_short(f.path)}: rank {sp.slowest_rank} spent {sp.slowest_time:.1f} s on it and rank "
               f"{sp.fastest_rank} {sp.fastest_time:.1f} s, yet every rank moved the same data "
               f"({format_size(sp.mean_bytes)}, within {_pct1(sp.bytes_agree_within)}). The {gap:.0f} s between them "
               f"were lost outside the application's decomposition: a slow OST or node, or contention among the "
               f"writers.{per_ost} Rebalancing the data would not help; if it recurs, give the center the job id and "
               f"the two ranks.")
        return self.finding(s, t, msg, {"file": f.path, "layer": sp.layer, "slowest_rank": sp.slowest_rank,
                                     "fastest_rank": sp.fastest_rank, "slowest_s": round(sp.slowest_time, 3),
                                     "fastest_s": round(sp.fastest_time, 3), "bytes_per_rank": round(sp.mean_bytes),
                                     "gap_s": round(gap, 1)},
                            at_stake=gap, counters={"slowest_rank": sp.slowest_rank, "fastest_rank": sp.fastest_rank},
                            arithmetic=_spread_arith(sp, t["bytes_tolerance"])
                            + [f"{sp.slowest_time:.2f} - {sp.fastest_time:.2f} = {gap:.2f} s"])


def _stdio_causes(hits: list[dict], latency: float, lib: str) -> tuple[str, dict[str, list[str]], list[str]]:
    """What the counters say each file's small STDIO calls cost, from its time per call: a call that took
    `latency` seconds or more waited on the file system (a flush per call, an unbuffered stream), which no larger
    library buffer in the calls themselves explains; below that, the library's per-call cost."""
    slow = [a for a in hits if a["rank_seconds"] / a["calls"] >= latency]
    cheap = [a for a in hits if a["rank_seconds"] / a["calls"] < latency]
    parts, arith = [], []
    for a in hits[:5]:
        arith.append(f"{_short(a['file'], 40)}: {a['rank_seconds']:.3f} s / {a['calls']} calls = "
                     f"{1e3 * a['rank_seconds'] / a['calls']:.3f} ms per call "
                     f"{'>=' if a in slow else '<'} {1e3 * latency:g} ms; {a['flushes']} flushes")
    if slow:
        w = max(slow, key=lambda a: a["per_rank_max_s"])
        who = f"rank {w['busiest_rank']}'s" if w["busiest_rank"] is not None else "the"
        parts.append(f"{who} {w['calls']} calls on {_short(w['file'])} took {1e3 * w['rank_seconds'] / w['calls']:.0f}"
                     f" ms each ({_s(w['per_rank_max_s'])}): each waited on the file system (file-system latency, "
                     f"{w['flushes']} flushes), not on the library. Keep the stream fully buffered (setvbuf with "
                     f"_IOFBF and a buffer of MiBs), do not fflush after each record, and write from one place in "
                     f"large blocks")
    if cheap:
        t = sum(a["per_rank_max_s"] for a in cheap)
        parts.append(f"{sum(a['calls'] for a in cheap)} calls on {len(cheap)} file(s) at under {1e3 * latency:g} ms "
                     f"each ({_s(t)}) pay the library's per-call cost and its stream lock: write large binary "
                     f"blocks with write(2) or {lib}, or enlarge the buffer with setvbuf")
    causes = {"file_system_latency": [a["file"] for a in slow], "per_call_cost": [a["file"] for a in cheap]}
    return ". ".join(p[0].upper() + p[1:] for p in parts) + ".", causes, arith


class STDIO001(Rule):
    """Small STDIO calls (fread/fwrite/fprintf) carrying much data"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        total = s.bytes_read + s.bytes_written
        hits = [a for a in s.stdio_streams if a["calls"] and a["bytes"] / a["calls"] < t["max_bytes_per_call"]]
        sb = sum(a["bytes"] for a in hits)
        if sb < t["min_bytes"] or not total:
            return None
        calls = sum(a["calls"] for a in hits)
        at_stake = sum(a["per_rank_max_s"] for a in hits)
        # a small share of a large job's bytes can still cost a large share of its run
        by_time = bool(s.run_time) and at_stake >= t["time_share"] * s.run_time
        if sb / total <= t["share"] and not by_time:
            return None
        lib = "HDF5 or MPI-IO" if s.has_mpiio else "a binary format library such as HDF5"
        why, causes, arith = _stdio_causes(sorted(hits, key=lambda a: -a["per_rank_max_s"]),
                                           t["latency_per_call_s"], lib)
        saving = gain(0.0, at_stake, "the slowest rank's time in these calls, at most; the bytes still move")
        msg = (f"{format_size(sb)} ({_pct(sb / total)} of the bytes) went through STDIO in {calls} calls of "
               f"{sb / calls:.0f} bytes on average, {_s(at_stake)} per rank. " + why + " " + _gain_line(saving))
        return self.finding(s, t, msg, {"stdio_bytes": sb, "total_bytes": total, "stdio_ops": calls,
                                        "share": round(sb / total, 3), "files": [a["file"] for a in hits[:3]],
                                        "files_affected": len(hits), "causes": causes},
                            at_stake=at_stake, saving=saving,
                            counters={"STDIO_BYTES_READ+WRITTEN": sb, "STDIO_READS+WRITES": calls,
                                                         "STDIO_FLUSHES": sum(a["flushes"] for a in hits)},
                            arithmetic=[f"{sb} / {calls} = {sb / calls:.0f} bytes per call < {t['max_bytes_per_call']}",
                                        f"{sb} / {total} = {sb / total:.3f} of the bytes "
                                        f"{'>' if sb / total > t['share'] else '<='} {t['share']}",
                                        f"{at_stake:.2f} s per rank (the slowest rank's STDIO read + write time) "
                                        f"/ {s.run_time:.0f} s run = {at_stake / s.run_time if s.run_time else 0:.3f} "
                                        f"{'>=' if by_time else '<'} {t['time_share']}"] + arith)


class SER001(Rule):
    """One rank moved nearly all of a shared file's bytes"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        hits = []
        for f in s.shared_files:
            # POSIX first: the layer that reaches the file system; MPI-IO where POSIX's records are not there
            for sp, moved in ((f.spread, f.bytes), (f.mpiio_spread, f.mpiio_bytes)):
                if sp is None or moved < t["min_bytes"] or f.ranks < 2:
                    continue
                top, rank, secs = max((sp.slowest_bytes, sp.slowest_rank, sp.slowest_time),
                                      (sp.fastest_bytes, sp.fastest_rank, sp.fastest_time), key=lambda x: x[0])
                if top >= t["share"] * moved:
                    hits.append((f, sp, moved, top, rank, secs))
                    break
        if not hits:
            return None
        f, sp, moved, top, rank, secs = max(hits, key=lambda h: h[5])
        mpi_spread_out = (sp.layer == "POSIX" and f.mpiio_spread is not None
                          and max(f.mpiio_spread.slowest_bytes, f.mpiio_spread.fastest_bytes) < t["share"] * f.mpiio_bytes)
        if mpi_spread_out:
            fix = (f"The {f.ranks} ranks spread the data over MPI-IO, so ROMIO funnelled it through one aggregator: "
                   f"raise the aggregator count (MPI-IO hint cb_nodes, or stripe the file: on Lustre ROMIO uses one "
                   f"aggregator per stripe by default) so several ranks write at once.")
        else:
            fix = ("Have every rank move its own part (MPI-IO collective calls, or each rank at its own offset), "
                   "or write one file per rank and gather them after.")
        msg = (f"{_short(f.path)}: at the {sp.layer} layer rank {rank} moved {format_size(top)} of the file's "
               f"{format_size(moved)} ({_pct1(top / moved)}) while {f.ranks} ranks share it, and spent {_s(secs)} on "
               f"it: the file's I/O is serial. {fix}")
        B = "POSIX" if sp.layer == "POSIX" else "MPIIO"
        return self.finding(s, t, msg, {"file": f.path, "layer": sp.layer, "rank": rank, "rank_bytes": top,
                                     "file_bytes": moved, "ranks": f.ranks, "rank_seconds": round(secs, 3),
                                     "files_affected": len(hits)},
                            at_stake=secs, counters={f"{B}_SLOWEST_RANK_BYTES": sp.slowest_bytes,
                                                     f"{B}_FASTEST_RANK_BYTES": sp.fastest_bytes,
                                                     f"{B}_BYTES_READ+WRITTEN": moved},
                            arithmetic=[f"{top} / {moved} = {top / moved:.4f} >= {t['share']}",
                                        f"rank {rank}'s time on the file: {secs:.2f} s"])


class LOG001(Rule):
    """Part of the job's I/O is not in what was analysed"""

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        gaps = []
        if s.unread_modules:
            gaps.append(f"the log holds I/O through {', '.join(s.unread_modules)}, which is not analysed here")
        if not s.has_posix and s.modules:
            gaps.append("the log has no POSIX module, so the job's read, write and open calls on files were not "
                        "recorded")
        if s.partial:
            gaps.append("Darshan ran out of record memory" + (f" in {', '.join(s.partial_modules)}"
                                                                if s.partial_modules else "")
                        + ", so totals are lower bounds")
        if not gaps:
            return None
        text = "; ".join(gaps)
        msg = (text[0].upper() + text[1:] + ". Findings (and the absence of findings) cover only what was read: "
               + (", ".join(s.read_modules) or "no module") + ".")
        return self.finding(s, t, msg, {"modules": list(s.modules), "read": list(s.read_modules),
                                     "unread": list(s.unread_modules),
                                     "partial_modules": list(s.partial_modules)},
                            at_stake=None, severity="info", counters={"modules": list(s.modules)},
                            arithmetic=[])


RULES: tuple[Rule, ...] = (LUS001(), LUS002(), LUS003(), SIZE001(), MPI001(), COLL001(), RMW001(), ALIGN001(),
                           META001(), IMB001(), STRAG001(), STDIO001(), SER001(), LOG001())
_ORDER = {"high": 0, "warn": 1, "info": 2}


def run_rules(s: LogSummary, thresholds: Mapping[str, Mapping[str, Any]] | None = None,
              ctx: Context | None = None) -> list[Finding]:
    """Every rule's finding for `s`, most severe first, then most time at stake."""
    t = thresholds or load_thresholds()
    ctx = ctx or Context()
    out = []
    for rule in RULES:
        f = rule.check(s, {**t[rule.id], "severity": t["SEVERITY"]}, ctx)
        if f is not None:
            out.append(f)
    out.sort(key=lambda f: (_ORDER.get(f.severity, 9), -(f.time_at_stake_s or 0.0)))
    return out


for _cls in (LUS001, LUS002, LUS003, SIZE001, MPI001, COLL001, RMW001, ALIGN001, META001, IMB001, STRAG001, STDIO001,
             SER001, LOG001):
    _cls.id = _cls.__name__
del _cls
