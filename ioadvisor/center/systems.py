"""The systems a knowledge base knows, with their run counts and sources, joined with the center files (a
site's in $IOADVISE_CENTERS and the shipped ones)."""
from __future__ import annotations

from typing import Any, Iterable


def known_systems(summaries: Iterable[tuple[str, str, int, list[str], list[str]]]) -> list[dict[str, Any]]:
    """One entry per system of a KB (reference data included) or of a center file, by name. `summaries` are the
    KB's (system, origin, runs, sources, file systems), as `kb.queries.system_summaries` reads them: the KB
    stands above the center, so its caller asks it."""
    from . import available_centers, is_shipped, load_center_file
    rows: dict[str, dict[str, Any]] = {}
    for system, origin, n, sources, fss in summaries:
        r = rows.setdefault(system.lower(), {"system": system, "runs": 0, "user_runs": 0, "reference_runs": 0,
                                             "sources": set(), "filesystems": set(), "center": None,
                                             "center_file": None, "center_origin": None})
        r["runs"] += n
        r["user_runs" if origin == "user" else "reference_runs"] += n
        r["sources"].update(sources)
        r["filesystems"].update(fss)
    for path in available_centers():
        c = load_center_file(path)
        r = rows.setdefault(c.name.lower(), {"system": c.name, "runs": 0, "user_runs": 0, "reference_runs": 0,
                                             "sources": set(), "filesystems": set(), "center_file": None})
        if r["center_file"] is not None:
            continue            # a site's file of that name comes first and wins, as it does for --center
        r["center"], r["center_file"] = c.name, str(path)
        r["center_origin"] = "shipped" if is_shipped(path) else "site"
    out = []
    for key in sorted(rows):
        r = rows[key]
        out.append({**r, "sources": sorted(r["sources"]), "filesystems": sorted(r["filesystems"])})
    return out
