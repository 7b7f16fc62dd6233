"""Diagnosis rules: small classes named by a stable ID, each turning a `LogSummary` into at most one `Finding`.

A rule's class docstring is its title. Thresholds come from data/thresholds.toml (a user file may override keys).
Rules only read the summary and the thresholds; the expected gain of a striping change is looked up in the KB
through a `Context`, which the caller may leave empty.
"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from ..model.types import Finding
from ..model.units import format_size
from .derive import SMALL_BINS, FileSummary, LogSummary, median_ost_time

SEVERITIES = ("high", "warn", "info")


# ----------------------------------------------------------------------------------------------------
# thresholds

def _default_path() -> Path:
    from ..kb.reference import data_dir
    return data_dir() / "thresholds.toml"


@functools.lru_cache(maxsize=4)
def _load_toml(path: str) -> dict[str, dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such thresholds file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    if not all(isinstance(v, dict) for v in data.values()):
        raise ConfigError(f"{path}: every top-level entry must be a [RULE_ID] table")
    return data


def load_thresholds(user: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The shipped thresholds, with the keys of `user` (a TOML file of [RULE_ID] tables) laid over them."""
    base = {k: dict(v) for k, v in _load_toml(str(_default_path())).items()}
    if user is None:
        return base
    over = _load_toml(str(Path(user).resolve()))
    for rid, table in over.items():
        if rid not in base:
            raise ConfigError(f"{user}: unknown rule {rid!r} (known: {', '.join(sorted(base))})")
        for key, val in table.items():
            if key not in base[rid]:
                raise ConfigError(f"{user}: [{rid}] has no threshold {key!r} (known: {', '.join(base[rid])})")
            if type(val) is not type(base[rid][key]) and not (
                    isinstance(val, (int, float)) and isinstance(base[rid][key], (int, float))):
                raise ConfigError(f"{user}: [{rid}] {key} must be a {type(base[rid][key]).__name__}")
            base[rid][key] = val
    return base


# ----------------------------------------------------------------------------------------------------
# context: what besides the log may inform a finding

@dataclass(frozen=True, kw_only=True)
class Context:
    """Optional knowledge beyond the log: the KB (for measured striping gains) and the center's OST count."""

    kb_path: str | None = None
    use_kb: bool = True
    center_ost_count: int | None = None
    center_name: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class Rule:
    """Base class; subclasses set `id`, `severity` and implement `check`."""

    id = ""
    severity = "warn"

    @property
    def title(self) -> str:
        return (self.__doc__ or self.id).strip().splitlines()[0]

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        raise NotImplementedError

    def finding(self, message: str, evidence: Mapping[str, Any], severity: str | None = None,
                advice: Any = None) -> Finding:
        return Finding(id=self.id, title=self.title, severity=severity or self.severity, message=message,
                       evidence=dict(evidence), advice=advice)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _short(path: str, n: int = 60) -> str:
    return path if len(path) <= n else "…" + path[-(n - 1):]


# ----------------------------------------------------------------------------------------------------
# Lustre

def stripe_count_for(size: int, t: Mapping[str, Any]) -> int:
    """Stripe count the size table gives for a shared file of `size` bytes."""
    count = 1
    for step, c in zip(t["size_steps"], t["count_steps"]):
        if size >= step:
            count = int(c)
    return count


def measured_stripe_gain(kb_path: str | None, target: int) -> dict[str, Any] | None:
    """From the KB: the largest measured write gain of `≤ target` stripes over 1 stripe on one system, same
    client count. Returns the system, both values and their run ids, or None if no such pair was measured."""
    try:
        from ..kb.store import KB, RunFilter
        kb = KB.open(kb_path, create=False)
    except Exception:
        return None
    try:
        runs = [r for r in kb.runs(RunFilter(op="write")) if r.stripe_count and r.is_bandwidth]
    finally:
        kb.close()
    best: dict[str, Any] | None = None
    groups: dict[tuple, list] = {}
    for r in runs:
        groups.setdefault((r.system, r.filesystem, r.api, r.nodes, r.ranks), []).append(r)
    for key, rs in groups.items():
        ones = [r for r in rs if r.stripe_count == 1]
        more = [r for r in rs if 1 < r.stripe_count <= target]
        if not ones or not more:
            continue
        one = max(ones, key=lambda r: r.value)
        top = max(more, key=lambda r: r.value)
        gain = top.value / one.value if one.value else 0.0
        if best is None or gain > best["gain"]:
            best = {"system": key[0], "gain": round(gain, 2), "one_stripe_mib_s": round(one.value, 1),
                    "stripes": top.stripe_count, "striped_mib_s": round(top.value, 1),
                    "runs": [one.id, top.id], "clients": key[4]}
    return best


class LUS001(Rule):
    """Large shared file on a single stripe"""

    severity = "high"

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        hits = [f for f in s.shared_files if f.lustre and f.lustre.stripe_count
                and f.lustre.stripe_count <= t["max_stripe_count"] and f.bytes >= t["min_file_bytes"]]
        if not hits:
            return None
        f = max(hits, key=lambda x: x.bytes)
        want = stripe_count_for(f.bytes, t)
        how = [f"{want} by the size table for a {format_size(f.bytes)} shared file"]
        osts, osrc = (ctx.center_ost_count, f"the center config ({ctx.center_name})") if ctx.center_ost_count \
            else (s.fs_ost_count, "the log's Lustre records (" + s.fs_ost_count_source + ")")
        if osts and want > osts:
            want = osts
            how.append(f"capped at the file system's {osts} OSTs from {osrc}")
        if f.ranks and want > f.ranks:
            want = f.ranks
            how.append(f"capped at the {f.ranks} ranks that access the file")
        want = max(want, 2)
        ssize = f.lustre.stripe_size or (1 << 20)
        evidence: dict[str, Any] = {
            "file": f.path, "bytes": f.bytes, "ranks": f.ranks, "stripe_count": f.lustre.stripe_count,
            "stripe_size": f.lustre.stripe_size, "osts": list(f.lustre.osts), "files_affected": len(hits),
            "recommended_stripe_count": want, "fs_ost_count": osts, "stripe_count_reasoning": "; ".join(how)}
        if f.write_time and f.ranks:
            wall = f.slowest_rank_time or f.write_time / f.ranks
            if wall > 0:
                evidence["observed_mib_s"] = round(f.bytes_written / wall / (1 << 20), 1)
        gain = measured_stripe_gain(ctx.kb_path, want) if ctx.use_kb else None
        if gain:
            evidence["expected_gain"] = gain["gain"]
            evidence["gain_basis"] = gain
            gtext = (f"Expected gain: about {gain['gain']:.1f}x, as measured on {gain['system']} "
                     f"({gain['one_stripe_mib_s']} MiB/s on 1 stripe vs {gain['striped_mib_s']} MiB/s on "
                     f"{gain['stripes']} stripes); the real gain also depends on how many clients write.")
        else:
            evidence["expected_gain"] = None
            gtext = ("Expected gain: up to the stripe count times the single-OST bandwidth, until the clients "
                     "become the limit (no measured stripe comparison in the KB).")
        msg = (f"{_short(f.path)} ({format_size(f.bytes)}, {f.ranks} ranks) lives on {f.lustre.stripe_count} OST, "
               f"so every rank's data goes through one server. Stripe it over {want} OSTs "
               f"({'; '.join(how)}): `lfs setstripe -c {want} -S {format_size(ssize).replace(' ', '')} <dir>` "
               f"before the file is created, or the MPI-IO hints striping_factor={want} "
               f"striping_unit={ssize}. {gtext}")
        if len(hits) > 1:
            msg += f" {len(hits) - 1} more shared file(s) have the same layout."
        return self.finding(msg, evidence)


class LUS002(Rule):
    """An OST much slower than the others"""

    severity = "high"

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        used = [o for o in s.osts if o.files]
        if len(used) < t["min_osts"]:
            return None
        med = median_ost_time(s) or 0.0
        slow = [o for o in used if o.files >= t["min_files"] and o.mean_write_time >= t["factor"] * med
                and o.mean_write_time - med >= t["min_excess_seconds"]]
        if not slow:
            return None
        slow.sort(key=lambda o: -o.mean_write_time)
        worst = slow[0]
        excess = worst.mean_write_time - med
        names = ", ".join(f"OST {o.ost}" for o in slow)
        msg = (f"{names}: the {worst.files} files on OST {worst.ost} averaged {worst.mean_write_time:.0f} s of write "
               f"time against a median of {med:.1f} s per OST ({worst.mean_write_time / med:.0f}x)."
               if med > 0 else f"{names} took far longer than the other OSTs.")
        msg += (f" The job waits for its slowest files: had OST {worst.ost} performed like the median, the write "
                f"phase could have been about {excess:.0f} s shorter ({_pct(min(1.0, excess / s.run_time))} of the "
                f"{s.run_time:.0f} s run). Report the OST to the center; until it is fixed, place new files on "
                f"other OSTs (`lfs setstripe -i <index>` or a pool that excludes it).") if s.run_time else ""
        evidence = {"slow_osts": [o.ost for o in slow], "ost": worst.ost, "files_on_ost": worst.files,
                    "mean_write_time_s": round(worst.mean_write_time, 2), "median_ost_write_time_s": round(med, 2),
                    "osts_used": len(used), "expected_saving_s": round(excess, 1)}
        return self.finding(msg, evidence)


class LUS003(Rule):
    """Few of the file system's OSTs used"""

    severity = "warn"

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        lus = [f for f in s.files if f.lustre]
        moved = sum(f.bytes for f in lus)
        if not lus or moved < t["min_bytes"]:
            return None
        used = {o for f in lus for o in f.lustre.osts}
        total = ctx.center_ost_count or s.fs_ost_count
        if not total:
            return None
        share = len(used) / total
        if share >= t["warn_share"]:
            return None
        sev = "high" if share < t["high_share"] else "warn"
        src = f"the center config ({ctx.center_name})" if ctx.center_ost_count else "the log (a lower bound)"
        msg = (f"The job moved {format_size(moved)} through {len(used)} of {total} OSTs ({_pct(share)}; OST count "
               f"from {src}). Bandwidth is bounded by the OSTs a job touches: use more stripes on shared files "
               f"or spread file-per-process output over more OSTs (stripe count 1 with the default start index).")
        return self.finding(msg, {"osts_used": len(used), "fs_ost_count": total, "share": round(share, 3),
                                  "bytes": moved}, severity=sev)


# ----------------------------------------------------------------------------------------------------
# requests, MPI-IO, metadata, balance, STDIO

class SIZE001(Rule):
    """Many small requests (below 1 MiB)"""

    severity = "high"

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        parts, ev = [], {}
        for op, small, total, hist in (("read", s.small_reads, s.posix_reads, s.read_sizes),
                                       ("write", s.small_writes, s.posix_writes, s.write_sizes)):
            if total and small >= t["min_count"] and small / total > t["share"]:
                parts.append(f"{small} of {total} POSIX {op}s ({_pct(small / total)}) were below 1 MiB")
                ev[f"small_{op}s"] = small
                ev[f"{op}s"] = total
                ev[f"{op}_size_bins"] = {b: hist[b] for b in SMALL_BINS}
        if not parts:
            return None
        top = sorted(s.files, key=lambda f: -(f.small_reads + f.small_writes))[:3]
        ev["files"] = [{"file": f.path, "small_ops": f.small_reads + f.small_writes} for f in top
                       if f.small_reads + f.small_writes]
        shared_small = sum(f.small_reads + f.small_writes for f in s.shared_files)
        all_small = s.small_reads + s.small_writes
        if s.has_mpiio and shared_small >= all_small / 2:
            fix = ("Most are on shared files opened with MPI-IO: collective calls (MPI_File_write_all / "
                   "read_all) let ROMIO aggregate them into stripe-sized requests.")
        elif shared_small >= all_small / 2:
            fix = ("Most are on shared files: gather data into larger contiguous blocks per rank, or write the "
                   "file with MPI-IO collective calls, which aggregate small pieces into large requests.")
        else:
            fix = ("Buffer the data in memory and issue fewer, larger requests (at least 1 MiB, ideally a "
                   "multiple of the stripe size).")
        return self.finding("; ".join(parts) + ". " + fix, ev)


class MPI001(Rule):
    """Independent MPI-IO on a shared file"""

    severity = "warn"

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        if not s.has_mpiio:
            return None
        hits = [f for f in s.shared_files if f.mpiio_indep >= t["min_ops"]
                and f.mpiio_indep / max(1, f.mpiio_indep + f.mpiio_coll) > t["indep_share"]
                and (f.small_reads + f.small_writes) > 0]
        if not hits:
            return None
        f = max(hits, key=lambda x: x.mpiio_indep)
        share = f.mpiio_indep / (f.mpiio_indep + f.mpiio_coll)
        small = f.small_reads + f.small_writes
        msg = (f"{_short(f.path)}: {f.mpiio_indep} of {f.mpiio_indep + f.mpiio_coll} MPI-IO operations "
               f"({_pct(share)}) are independent, and {small} POSIX requests on the file were below 1 MiB. "
               f"Use collective calls (MPI_File_write_all/read_all, or H5FD_MPIO_COLLECTIVE in HDF5) so "
               f"aggregators combine them; with romio_cb_write=enable the {small} small requests become a few "
               f"stripe-sized ones.")
        ev: dict[str, Any] = {"file": f.path, "independent_ops": f.mpiio_indep, "collective_ops": f.mpiio_coll,
                              "small_posix_requests": small, "files_affected": len(hits)}
        against = _two_phase_losses(ctx)
        if against:
            ev["contrary_comparisons"] = against
            c = against[0]
            msg += (f" Caution: on {c['system']} two-phase I/O measured slower than without it for {c['op']}s "
                    f"({c['citation']}); there, try collective calls with romio_cb_{c['op']}=disable as well "
                    f"and keep the faster.")
        return self.finding(msg, ev)


def _two_phase_losses(ctx: Context) -> list[dict[str, Any]]:
    """Published comparisons on the center's system in which disabling two-phase I/O won."""
    if not ctx.center_name or not ctx.use_kb:
        return []
    try:
        from ..kb.store import KB
        with KB.open(ctx.kb_path, create=False) as kb:
            rows = kb.comparisons(ctx.center_name)
    except Exception:
        return []
    return [{"system": r["system"], "op": r["op"], "better": r["better"], "worse": r["worse"],
             "citation": r["citation"], "source": r["source"]}
            for r in rows if r["factor"] in ("cb_write", "cb_read") and str(r["better"]).lower() == "disable"]


class META001(Rule):
    """Much time in metadata operations"""

    severity = "warn"

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        budget = s.nprocs * s.run_time
        share = s.meta_time / budget if budget else 0.0
        worst = max(s.files, key=lambda f: f.meta_time, default=None)
        worst_t = worst.meta_time if worst is not None else 0.0
        heavy_record = bool(worst_t >= t["record_seconds"] and s.run_time
                            and worst_t / s.run_time >= t["record_run_share"])
        if share < t["share"] and not heavy_record:
            return None
        sev = "high" if share >= 2 * t["share"] else "warn"
        per_rank = s.meta_time / max(1, s.nprocs)
        msg = (f"Ranks spent {s.meta_time:.1f} rank-seconds in open/stat/seek/close, {per_rank:.1f} s per rank "
               f"in a {s.run_time:.0f} s run")
        if per_rank > s.run_time:
            msg += " (more than the run time: the calls overlapped, e.g. from several threads)"
        if worst is not None and worst.meta_time > 0:
            msg += f"; the file with most metadata time is {_short(worst.path)} ({worst.meta_time:.1f} s)"
        msg += (". Open files once and keep them open, avoid stat/seek per request, and for many small files use "
                f"fewer, larger files or node-local scratch. Expected saving: up to "
                f"{min(per_rank, s.run_time):.1f} s per rank.")
        return self.finding(msg, {"meta_time_rank_s": round(s.meta_time, 2), "share": round(share, 4),
                                  "max_record_meta_time_s": round(s.max_meta_time_record, 2),
                                  "file": worst.path if worst else None,
                                  "expected_saving_s": round(min(per_rank, s.run_time), 1)}, severity=sev)


class IMB001(Rule):
    """Ranks unevenly loaded on a shared file"""

    severity = "warn"

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        hits: list[tuple[FileSummary, float]] = []
        for f in s.shared_files:
            if f.bytes < t["min_bytes"] or f.slowest_rank_time is None or f.fastest_rank_time is None:
                continue
            gap = f.slowest_rank_time - f.fastest_rank_time
            if f.slowest_rank_time > 0 and gap >= t["min_seconds"] and gap / f.slowest_rank_time > t["share"]:
                hits.append((f, gap))
        if not hits:
            return None
        f, gap = max(hits, key=lambda x: x[1])
        more = (" (or, with collective MPI-IO, more aggregators: cb_nodes, romio_lustre_co_ratio)"
                if s.has_mpiio and f.mpiio_coll else "")
        msg = (f"{_short(f.path)}: the slowest rank ({f.slowest_rank}) spent {f.slowest_rank_time:.1f} s in I/O, the "
               f"fastest ({f.fastest_rank}) {f.fastest_rank_time:.1f} s. Everyone waits for the slowest: balancing "
               f"the data per rank{more} could save up to {gap:.0f} s.")
        return self.finding(msg, {"file": f.path, "slowest_rank": f.slowest_rank, "fastest_rank": f.fastest_rank,
                                  "slowest_s": round(f.slowest_rank_time, 3), "fastest_s": round(f.fastest_rank_time, 3),
                                  "expected_saving_s": round(gap, 1), "files_affected": len(hits)})


class STDIO001(Rule):
    """Heavy use of STDIO (fread/fwrite/fprintf)"""

    severity = "warn"

    def check(self, s: LogSummary, t: Mapping[str, Any], ctx: Context) -> Finding | None:
        st = s.apis.get("STDIO")
        if not st:
            return None
        sb = st.bytes_read + st.bytes_written
        total = s.bytes_read + s.bytes_written
        if sb < t["min_bytes"] or not total or sb / total <= t["share"]:
            return None
        lib = "HDF5 or MPI-IO" if s.has_mpiio else "a binary format library such as HDF5"
        msg = (f"{format_size(sb)} ({_pct(sb / total)} of the bytes) went through STDIO in {st.reads + st.writes} "
               f"calls. STDIO buffers in small chunks and serialises on a stream lock: write large binary blocks "
               f"with write(2) or {lib}, or at least enlarge the buffer with setvbuf.")
        return self.finding(msg, {"stdio_bytes": sb, "total_bytes": total, "stdio_ops": st.reads + st.writes,
                                  "share": round(sb / total, 3)})


RULES: tuple[Rule, ...] = (LUS001(), LUS002(), LUS003(), SIZE001(), MPI001(), META001(), IMB001(), STDIO001())
_ORDER = {"high": 0, "warn": 1, "info": 2}


def rule_ids() -> list[str]:
    return [r.id for r in RULES]


def run_rules(s: LogSummary, thresholds: Mapping[str, Mapping[str, Any]] | None = None,
              ctx: Context | None = None) -> list[Finding]:
    """Every rule's finding for `s`, most severe first."""
    t = thresholds or load_thresholds()
    ctx = ctx or Context()
    out = []
    for rule in RULES:
        f = rule.check(s, t[rule.id], ctx)
        if f is not None:
            out.append(f)
    out.sort(key=lambda f: _ORDER.get(f.severity, 9))
    return out


for _cls in (LUS001, LUS002, LUS003, SIZE001, MPI001, META001, IMB001, STDIO001):
    _cls.id = _cls.__name__
del _cls
