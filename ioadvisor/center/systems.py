"""The systems a knowledge base knows, with their run counts and sources, joined with the center files (a
site's in $IOADVISE_CENTERS and the shipped ones)."""
from __future__ import annotations

import json
from typing import Any


def known_systems(kb: Any) -> list[dict[str, Any]]:
    """One entry per system in the open KB `kb` (reference data included) or in a center file, by name. (The KB
    stands above the center: it is taken as it is, not imported.)"""
    from . import available_centers, is_shipped, load_center_file
    rows: dict[str, dict[str, Any]] = {}
    # JSON arrays, not group_concat: a name may hold the comma group_concat would separate with
    q = ("SELECT system, origin, count(*), json_group_array(DISTINCT source), json_group_array(DISTINCT filesystem) "
         "FROM all_runs GROUP BY system, origin")
    for system, origin, n, sources, fss in kb.conn.execute(q):
        r = rows.setdefault(system.lower(), {"system": system, "runs": 0, "user_runs": 0, "reference_runs": 0,
                                             "sources": set(), "filesystems": set(), "center": None,
                                             "center_file": None, "center_origin": None})
        r["runs"] += n
        r["user_runs" if origin == "user" else "reference_runs"] += n
        r["sources"].update(x for x in json.loads(sources) if x is not None)
        r["filesystems"].update(x for x in json.loads(fss) if x is not None)
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
