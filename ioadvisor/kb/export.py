"""Runs to the canonical CSV and to JSON (pure)."""
from __future__ import annotations

import csv
import io
from typing import Any

from ..importers.csv import COLUMNS
from ..model.run import Run


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return str(v)


def run_csv_row(r: Run) -> dict[str, str]:
    """A Run as one canonical-CSV row; the value in the unit it was given in."""
    p = r.provenance
    factor = (r.value_given / r.value) if (r.value_given is not None and r.value) else 1.0
    given = lambda v: None if v is None else v * factor  # noqa: E731
    d = {
        "source": p.source, "system": r.system, "filesystem": r.filesystem, "ost_count": r.ost_count,
        "op": r.op, "api": r.api, "layout": r.layout, "collective": r.collective, "nodes": r.nodes,
        "ranks": r.ranks, "transfer_size_bytes": r.transfer_size, "block_size_bytes_per_rank": r.block_size,
        "stripe_count": r.stripe_count, "stripe_size_bytes": r.stripe_size,
        "value": r.value_given if r.value_given is not None else r.value, "unit": r.unit_given or r.unit,
        "notes": r.notes, "fs_type": r.fs_type, "tier": r.tier, "ranks_per_node": r.ranks_per_node,
        "segments": r.segments, "file_size_bytes": r.file_size, "total_bytes": r.total_bytes,
        "files_per_dir": r.files_per_dir, "items_per_rank": r.items_per_rank, "access": r.access,
        "direct": r.direct, "reps": r.reps, "value_min": given(r.value_min), "value_max": given(r.value_max),
        "value_sd": given(r.value_sd), "ci95_low": given(r.ci95_low), "ci95_high": given(r.ci95_high),
        "hints": ";".join(f"{k}={v}" for k, v in sorted(r.hints.items())), "tool": p.tool,
        "tool_version": p.tool_version, "command": p.command, "citation": p.citation, "date": p.date,
        "job_id": p.job_id, "kind": p.kind,
    }
    return {k: _cell(d[k]) for k in COLUMNS}


def export_csv(runs: list[Run]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in runs:
        w.writerow(run_csv_row(r))
    return buf.getvalue()
