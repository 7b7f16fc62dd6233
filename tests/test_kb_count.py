"""KB.count, which counts a filter with a layout but no API per API (see KB.count): the same numbers as the
runs themselves, NULL APIs and case variants of the system name included."""
from __future__ import annotations

import itertools

import pytest

from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter

HEADER = ("source,system,filesystem,fs_type,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")
ROWS = [  # system, op, api, layout, collective
    ("mix", "write", "", "shared", ""), ("mix", "write", "POSIX", "shared", ""),
    ("MIX", "write", "MPIIO", "shared", "true"), ("mix", "write", "HDF5", "fpp", ""),
    ("mix", "read", "MPIIO", "shared", "false"), ("mix", "write", "", "fpp", ""),
    ("other", "write", "POSIX", "shared", ""),
]


@pytest.fixture
def store(tmp_path):
    csv = tmp_path / "runs.csv"
    csv.write_text(HEADER + "\n" + "".join(
        f"t,{s},scratch,lustre,8,{op},{api},{lay},{coll},1,4,1048576,16777216,1,1048576,{100 + i},MiB/s,\n"
        for i, (s, op, api, lay, coll) in enumerate(ROWS)))
    with KB.open(tmp_path / "kb.sqlite") as kb:
        import_file(kb, csv)
        yield kb


def test_counts_per_api_match_the_runs(store):
    # write + shared on mix, any case: the NULL-API run, POSIX and MIX's MPIIO; not the read, not `other`'s
    assert store.count(RunFilter(system="mix", op="write", layout="shared")) == 3
    assert store.count(RunFilter(system="MIX", op="WRITE", layout="fpp")) == 2          # HDF5 and NULL
    assert store.count(RunFilter(system="mix", op="read", layout="fpp")) == 0
    assert store._apis("main", "mix", "write") == ["HDF5", "MPIIO", "POSIX"]           # NULL counted apart
    systems = ["mix", "Mix", "other", "dell-ee-lustre-2.1", "nosuch"]
    for system, op, layout, api, origin in itertools.product(systems, ["write", "read", None], ["shared", "fpp"],
                                                             [None, "POSIX"], [None, "user", "reference"]):
        f = RunFilter(system=system, op=op, layout=layout, api=api, origin=origin)
        assert store.count(f) == len(store.runs(f)), f
    # the reference data is counted too (a seed system whose runs state their layout)
    ref = RunFilter(system="Dell-EE-Lustre-2.1", op="read", layout="fpp")
    assert store.count(ref) == len(store.runs(ref)) > 0
