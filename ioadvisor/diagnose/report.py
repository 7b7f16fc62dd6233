"""The self-contained HTML report of a diagnosis: job summary, findings with their evidence, and inline SVG plots
(request sizes, per-rank time and bytes on shared files, write time per OST). No scripts, no external files."""
from __future__ import annotations

import html
import math
from typing import Any, Sequence

from ..model.units import format_size

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:68em;color:#222;line-height:1.4}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:.2em .8em;text-align:left;vertical-align:top}
.job td:first-child{font-weight:bold}.finding{border:1px solid #ccc;border-radius:4px;margin:1em 0;padding:.6em 1em}
.high{border-left:6px solid #c0392b}.warn{border-left:6px solid #e0a800}.info{border-left:6px solid #2e86c1}
.sev{font-weight:bold;text-transform:uppercase}pre{background:#f6f6f6;padding:.5em;white-space:pre-wrap}
.plots{display:flex;flex-wrap:wrap;gap:1.5em}figure{margin:0}figcaption{font-size:.9em;color:#555}
"""
_COLORS = ("#2e86c1", "#e67e22", "#27ae60", "#8e44ad")


def _e(x: Any) -> str:
    return html.escape(str(x))


def bar_chart(title: str, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], unit: str = "",
              highlight: set[int] | None = None, width: int = 520, height: int = 240) -> str:
    """A grouped bar chart as inline SVG; `series` is [(name, values per label)]. Values are drawn to scale, on a
    log axis (1, 10, 100, ...) where the non-zero values span more than two decades, so small bins stay visible."""
    top = max([v for _, vals in series for v in vals] + [0.0])
    nz = [v for _, vals in series for v in vals if v > 0]
    log = bool(nz) and min(nz) >= 1 and top / min(nz) > 100
    left, bottom, right, head = 60, 60, 10, 30
    pw, ph = width - left - right, height - bottom - head
    n = max(1, len(labels))
    group = pw / n
    bw = max(1.0, group * 0.8 / max(1, len(series)))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{_e(title)}"><title>{_e(title)}</title>',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="13">{_e(title)}</text>',
           f'<line x1="{left}" y1="{head + ph}" x2="{left + pw}" y2="{head + ph}" stroke="#333"/>',
           f'<line x1="{left}" y1="{head}" x2="{left}" y2="{head + ph}" stroke="#333"/>']
    def scale(v: float) -> float:
        if top <= 0 or v <= 0:
            return 0.0
        return math.log10(1 + v) / math.log10(1 + top) if log else v / top

    ticks = [10 ** k for k in range(int(math.log10(top)) + 1)] if log else [top * f for f in (0.0, 0.5, 1.0)]
    for tv in ticks:
        y = head + ph - scale(tv) * ph
        out.append(f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">'
                   f'{_e(_num(tv))}{_e(unit)}</text>')
    if log:
        out.append(f'<text x="{left + 4}" y="{head - 4}" font-size="9">log scale</text>')
    for i, lab in enumerate(labels):
        x0 = left + i * group + group * 0.1
        for j, (name, vals) in enumerate(series):
            v = vals[i] if i < len(vals) else 0.0
            h = scale(v) * ph
            color = "#c0392b" if highlight and i in highlight else _COLORS[j % len(_COLORS)]
            out.append(f'<rect x="{x0 + j * bw:.1f}" y="{head + ph - h:.1f}" width="{bw * 0.95:.1f}" '
                       f'height="{h:.1f}" fill="{color}"><title>{_e(name)} {_e(lab)}: {_e(_num(v))}{_e(unit)}'
                       f'</title></rect>')
        if n <= 40 or i % max(1, n // 20) == 0:
            cx = left + i * group + group / 2
            out.append(f'<text x="{cx:.1f}" y="{head + ph + 12}" font-size="9" text-anchor="end" '
                       f'transform="rotate(-40 {cx:.1f} {head + ph + 12})">{_e(lab)}</text>')
    for j, (name, _) in enumerate(series):
        if len(series) > 1:
            out.append(f'<rect x="{left + 10 + j * 110}" y="{height - 14}" width="10" height="10" '
                       f'fill="{_COLORS[j % len(_COLORS)]}"/><text x="{left + 24 + j * 110}" y="{height - 5}" '
                       f'font-size="10">{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def _num(v: float) -> str:
    if v >= 1e6:
        return f"{v:.3g}"
    return f"{v:.0f}" if v >= 10 or v == int(v) else f"{v:.2g}"


def _timeline_plots(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(caption, svg) of each interface's bytes over the run, from the HEATMAP records or DXT traces."""
    out = []
    for tl in (doc.get("timeline") or {}).get("apis", []):
        if not any(tl["read_bytes"]) and not any(tl["write_bytes"]):
            continue
        w = tl["bin_width_s"]
        src = ("Darshan's HEATMAP" if doc["timeline"]["source"] == "HEATMAP"
               else "DXT traces, by each segment's start")
        out.append((f"{tl['api']} bytes per {w:.3g} s over the run ({src}, summed over {tl['ranks']} ranks); "
                    f"phases: " + "; ".join(f"{p['start_s']:.0f}-{p['end_s']:.0f} s, up to {p['ranks_active_max']} "
                                            f"ranks" for p in tl["phases"][:5]) + ".",
                    bar_chart(f"{tl['api']} I/O over time", [f"{i * w:.0f}" for i in range(len(tl["write_bytes"]))],
                              [("written", [v / (1 << 20) for v in tl["write_bytes"]]),
                               ("read", [v / (1 << 20) for v in tl["read_bytes"]])], " MiB",
                              width=max(520, 6 * len(tl["write_bytes"]) + 80))))
    return out


def plots(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(caption, svg) for the plots the document has data for."""
    out = []
    rq = doc["requests"]
    bins = list(rq["read_sizes"])
    if any(rq["read_sizes"].values()) or any(rq["write_sizes"].values()):
        out.append(("POSIX requests per size bin (Darshan's bins include their upper edge: 100K_1M holds requests "
                    "of exactly 1 MiB).",
                    bar_chart("POSIX request sizes", bins, [("reads", [rq["read_sizes"][b] for b in bins]),
                                                           ("writes", [rq["write_sizes"][b] for b in bins])])))
    shared = [f for f in doc["files"] if f.get("rank_spread") or f.get("mpiio_rank_spread")][:6]
    if shared:
        labels, slow_t, fast_t, slow_b, fast_b, mean_b = [], [], [], [], [], []
        layers = set()
        for f in shared:
            # the layer that carried the file's bytes: a single POSIX writer under collective MPI-IO shows only here
            posix = f["bytes_read"] + f["bytes_written"]
            mpi = sum((f.get(k) or {}).get("bytes", 0) for k in ("mpiio_read", "mpiio_write"))
            sp = f["rank_spread"] if f.get("rank_spread") and posix >= mpi else (f.get("mpiio_rank_spread")
                                                                               or f["rank_spread"])
            layers.add(sp["layer"])
            labels.append(f["path"].rsplit("/", 1)[-1][:18])
            slow_t.append(sp["slowest_time_s"])
            fast_t.append(sp["fastest_time_s"])
            slow_b.append(sp["slowest_bytes"] / (1 << 20))
            fast_b.append(sp["fastest_bytes"] / (1 << 20))
            mean_b.append(sp["mean_bytes"] / (1 << 20))
        out.append((f"Slowest and fastest rank on each shared file, at the layer that carried its bytes "
                    f"({', '.join(sorted(layers))}): time ...",
                    bar_chart("Time per rank on shared files", labels,
                              [("slowest rank", slow_t), ("fastest rank", fast_t)], " s")))
        out.append(("... and the bytes the same ranks moved, with the mean per rank: equal bytes with unequal time "
                    "is a straggler, not imbalance.",
                    bar_chart("Bytes per rank on shared files", labels,
                              [("slowest rank", slow_b), ("fastest rank", fast_b), ("mean", mean_b)], " MiB")))
    out += _timeline_plots(doc)
    osts = doc["lustre"]["osts"]
    if osts:
        slow = set()
        for f in doc["findings"]:
            if f["id"] == "LUS002":
                slow = {i for i, o in enumerate(osts) if o["ost"] in f["evidence"].get("slow_osts", [])}
        out.append(("Mean POSIX write time per file on each OST, of each file's slowest rank (not a sum over the "
                    "ranks of a shared file, who write at once; where Darshan kept only sums, the slowest rank's I/O "
                    "time bounds it), shared equally among the file's OSTs; OSTs named in a finding in red.",
                    bar_chart("Slowest rank's write time per file, by OST", [str(o["ost"]) for o in osts],
                              [("mean write time, slowest rank", [o["mean_slowest_rank_write_time_s"] for o in osts])],
                              " s", highlight=slow, width=max(520, 14 * len(osts) + 80))))
    return out


def _moved(p: dict[str, Any]) -> str:
    parts = [f"{format_size(p[k])} {w}" for k, w in (("bytes_written", "written"), ("bytes_read", "read")) if p[k]]
    return " and ".join(parts) or "no bytes"


def summary_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary panel's rows for I/O time and the MPI-IO hints in effect (the HTML report shows the same)."""
    job, rows = doc["job"], []
    io = job.get("io_time") or {}
    if io.get("busiest_rank_s"):
        share = f" ({100 * io['share_of_run']:.0f}% of the run)" if io.get("share_of_run") is not None else ""
        rows.append(("I/O time", f"{io['busiest_rank_s']:.3g} s for the busiest rank{share}, "
                                 f"{io['mean_per_rank_s']:.3g} s averaged over all ranks"))
    for tl in (doc.get("timeline") or {}).get("apis", []):
        ph = tl["phases"]
        if ph:
            shown = "; ".join(f"{p['start_s']:.0f}-{p['end_s']:.0f} s {_moved(p)} by up to {p['ranks_active_max']} "
                              f"of {tl['ranks']} ranks" for p in ph[:3])
            rows.append((f"I/O phases, {tl['api']}", shown + (f"; {len(ph) - 3} more" if len(ph) > 3 else "")))
    for h in job.get("mpiio_hints_in_effect") or []:
        parts = [f"{h['cb_nodes']} aggregators (cb_nodes) for {h['ranks']} ranks" if h["cb_nodes"]
                 else f"{h['ranks']} ranks, aggregators not in the log"]
        if h["striping_factor"]:
            parts.append(f"striping_factor {h['striping_factor']}, striping_unit {format_size(h['striping_unit'])}")
        rows.append(("MPI-IO in effect", f"{h['file'].rsplit('/', 1)[-1]}: " + ", ".join(parts)))
    return rows


def _nodes_row(a: dict[str, Any]) -> str:
    if a["nodes"] is None:
        return "not known (the figures are per process)"
    return f"{a['nodes']} ({a['note']})"


def job_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's summary rows, (label, text) each: the job, what each API moved, the I/O time, phases and
    hints, the Lustre OSTs, the reader's notes. The terminal panel and the HTML page show these same rows."""
    import datetime as _dt
    job = doc["job"]
    start = _dt.datetime.fromtimestamp(job["start_time"], _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC") \
        if job.get("start_time") else "-"
    rows = [("Log", doc["log"]), ("Executable", job["exe"]), ("Job id", str(job["jobid"])),
            ("Processes", str(job["nprocs"])), ("Nodes", _nodes_row(doc["workload_assumptions"])),
            ("Run time", f"{job['run_time']:.0f} s (started {start})"),
            ("Darshan", f"{job['darshan_version']} (log format {job['log_version']})"),
            ("Modules", ", ".join(job["modules"])),
            ("Layout", f"{job['layout']}: {job['shared_files']} shared, {job['fpp_files']} per-process files")]
    for api, t in doc["apis"].items():
        rows.append((api, f"read {format_size(t['bytes_read'])} in {t['reads']} ops, "
                          f"written {format_size(t['bytes_written'])} in {t['writes']} ops, {t['files']} files"))
    rows += summary_rows(doc)
    lus = doc["lustre"]
    if lus["osts_used"]:
        rows.append(("Lustre", f"{lus['osts_used']} OSTs used; the file system has at least "
                               f"{lus['fs_ost_count_at_least']} (highest OST index seen + 1)"))
    rows += [("Note", note) for note in job["notes"]]
    return rows


def at_stake_text(f: dict[str, Any], job: dict[str, Any]) -> str:
    """"X s for <the ranks that did the work> (Y s averaged over all ranks) of a Z s run."""
    ev = f["evidence"]
    who = ev.get("at_stake_for") or "per rank"
    text = f"{f['time_at_stake_s']:.3g} s {'for ' + who if ev.get('at_stake_for') else who}"
    if ev.get("all_rank_mean_s") is not None:
        text += f" ({ev['all_rank_mean_s']:.3g} s averaged over all {job['nprocs']} ranks)"
    return text + f" of a {job['run_time']:.0f} s run."


def render_html(doc: dict[str, Any]) -> str:
    """The whole report as one HTML page."""
    job = doc["job"]
    rows = job_rows(doc)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>Darshan diagnosis: {_e(job['exe'][:60])}</title><style>{_CSS}</style></head><body>",
             "<h1>Darshan diagnosis</h1>", '<table class="job">']
    parts += [f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows]
    parts.append("</table><h2>Findings</h2>")
    if job.get("nothing_to_judge"):
        parts.append(f"<p>Nothing to judge: {_e(job['nothing_to_judge'])}.</p>")
    elif not doc["findings"]:
        parts.append(f"<p>No rule fired on what was read ({_e(', '.join(job['modules']))}).</p>")
    for f in doc["findings"]:
        ev = f["evidence"]
        parts.append(f'<div class="finding {_e(f["severity"])}"><span class="sev">{_e(f["severity"])}</span> '
                     f'<b>{_e(f["id"])}</b> {_e(f["title"])}<p>{_e(f["message"])}</p>')
        if f.get("time_at_stake_s") is not None:
            parts.append(f"<p>At stake: {_e(at_stake_text(f, job))}</p>")
        if ev.get("counters"):
            parts.append("<details><summary>Counters</summary><table>"
                         + "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in ev["counters"].items())
                         + "</table></details>")
        if ev.get("arithmetic"):
            parts.append("<pre>" + _e("\n".join(ev["arithmetic"])) + "</pre>")
        parts.append("</div>")
    pl = plots(doc)
    if pl:
        parts.append('<h2>Plots</h2><div class="plots">')
        parts += [f"<figure>{svg}<figcaption>{_e(cap)}</figcaption></figure>" for cap, svg in pl]
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts)
