"""The KB's CSV reader (ingest.csvrows) stores every row exactly as the importer's Run would be stored: the same
values, the same content key (so the same run ids), the same error for a bad row. Rows the fast reading does not
take on itself go to the importer; the tests also count that the fast reading does take the ordinary rows."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from ioadvisor.errors import IOAdvisorError
from ioadvisor.importers import ImportContext
from ioadvisor.importers import csv as csvimp
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB
from ioadvisor.ingest import csvrows
from ioadvisor.kb.rows import keyed_row
from ioadvisor.model.validate import checked

ROOT = Path(__file__).resolve().parent.parent
HEADER = list(csvimp.COLUMNS)

# cells per column: ordinary ones, and the spellings at the edges of what the importer takes or refuses
INTS = ["", "0", "1", "16", "0016", "4194304", " 8", "8 ", "-1", "+4", "1.0", "1e3", "١٢", "²", "nan", "inf",
        "9223372036854775807", "9223372036854775808", "1000001", "64000", "64001", "x"]
NAMES = ["", "scratch", " lustre ", "Ünïcode-系统", "a\tb", "a\x1fb", "x" * 256, "x" * 257, "quote\"q", "\u2028"]
CELLS: dict[str, list[str]] = {
    "source": ["", "paper.pdf", " s ", "a\x07b"],
    "system": ["", "sysA", " sysA ", "SYSa", "Ünïcode-系统", "a\nb", "y" * 257],
    "op": ["", "write", "READ", " read ", "file_create", "randwrite", "bogus"],
    "api": ["", "POSIX", "posix", "MPI-IO", "mpi_io", "hdf5", "NCMPI", "cuda"],
    "layout": ["", "shared", "fpp", "N-1", "file-per-process", "ssf", "sideways"],
    "collective": ["", "true", "False", "1", "yes", "collective", " off ", "maybe"],
    "direct": ["", "true", "0", "y", "2"],
    "value": ["5", "5.5", " 7 ", "0", "-0", "-1", "1e308", "1e10", "1e12", "nan", "inf", "", "1_000", "0x10",
              "3.3333333333333335e+04", "12345.678901234"],
    "unit": ["MiB/s", "MB/s", "GiB/s", "GB/s", " gb/s ", "KiB/s", "IOPS", "ops/s", "kiops", "TB/s", "mib / s",
             "", "furlongs"],
    "hints": ["", "romio_cb_write=enable", "b=2;a=1", "a=1,a=2", "cb_nodes=8; striping_unit = 1048576", "novalue",
              "bad key=1", "k=" + "v" * 1025, "k=\x01"],
    # with the value 5: value_min may exceed it by 1e-9 of it (5e-9), not more; value_max fall short so
    "value_min": ["", "4", "6", " 4 ", "-1", "x", "nan", "5.000000001", "5.000001"],
    "value_max": ["", "6", "4", "1e300", "4.999999999", "4.999999"],
    "value_sd": ["", "0.5", "inf"],
    "ci95_low": ["", "4.5", "7"],
    "ci95_high": ["", "5.5", "4"],
    "access": ["", "sequential", "random", "Random"],
    "kind": ["", "benchmark", "reference", "production", "Production", "guess"],
    "date": ["", "2020-01-02", "a\x00b"],
    "notes": ["", "synthetic run", "tab\there", "line\nbreak", "bell\x07", "n" * 300],
    "citation": ["", "Table 3, \"row\" 2", "Fig. 5 — «x» \\n", "c\x0bc"],
}


def _cells(col: str) -> list[str]:
    if col in CELLS:
        return CELLS[col]
    if col in csvimp._INT_COLS:
        return INTS
    return NAMES


def _outcome(fn, row):
    try:
        return "ok", fn(row)
    except (ValueError, IOAdvisorError) as e:
        return "error", f"{type(e).__name__}: {e}"


def _readers(header: list[str], ctx: ImportContext):
    slow = csvimp._Rows(header, ctx).run
    return (lambda row: keyed_row(checked(slow(row)))), csvrows.RowReader(header, ctx)


def _fast_share(reader: csvrows.RowReader, rows: list[list[str]], monkeypatch) -> float:
    """The share of `rows` the fast reading stores without the importer."""
    calls = []
    run = reader._run
    monkeypatch.setattr(reader, "_run", lambda row: calls.append(1) or run(row))
    for row in rows:
        _outcome(reader, row)
    monkeypatch.setattr(reader, "_run", run)
    return 1 - len(calls) / len(rows)


@pytest.mark.parametrize("ctx", [ImportContext(source="f.csv"),
                                 ImportContext(source="f.csv", system="given", kind="reference")])
def test_every_edge_cell_of_every_column_is_read_as_the_importer_reads_it(ctx):
    # each column's edge cells in turn, in an otherwise ordinary row: the outcome (the stored row and key, or
    # the error text) must be the importer's; an accepted row that the importer refuses, or a value stored with
    # another type (5 for 5.0, "1" for 1), would make them differ
    slow, fast = _readers(HEADER, ctx)
    base = {c: "" for c in HEADER}
    base.update(source="s", system="sysA", op="write", api="POSIX", layout="fpp", nodes="2", ranks="8",
                value="5", unit="MiB/s")
    n = 0
    for col in HEADER:
        for cell in _cells(col):
            row = [cell if c == col else base[c] for c in HEADER]
            a, b = _outcome(slow, row), _outcome(fast, row)
            assert a == b, (col, cell, a, b)
            if a[0] == "ok":
                assert all(type(x) is type(y) for x, y in zip(a[1][1], b[1][1])), (col, cell)
            n += 1
    assert n > 400


def test_random_rows_mixing_edge_cells_are_read_as_the_importer_reads_them(monkeypatch):
    rnd = random.Random(20261125)
    ctx = ImportContext(source="mixed.csv")
    header = HEADER[:]
    rnd.shuffle(header)                                 # the columns in any order
    slow, fast = _readers(header, ctx)
    rows = []
    for _ in range(6000):
        # mostly ordinary cells (the first two of each list), some from the edges
        rows.append([rnd.choice(_cells(c)[:2] if rnd.random() < 0.8 else _cells(c)) for c in header])
    ok = 0
    for row in rows:
        a, b = _outcome(slow, row), _outcome(fast, row)
        assert a == b, (dict(zip(header, row)), a, b)
        ok += a[0] == "ok"
    assert ok > 100          # enough rows are valid for the stored form to be compared, not only the errors


def test_files_read_fast_store_the_same_rows_and_keys(monkeypatch):
    # the reference data, the crafted identity file (unicode, quotes, hints, spreads, twins) and a synthetic
    # file of the benchmark's shape: read both ways, row for row
    sys_path = ROOT / "benchmarks"
    monkeypatch.syspath_prepend(str(sys_path))
    import scale_data
    synthetic = [scale_data.HEADER] + list(scale_data.rows(3000, 7))
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "data" / "reference").glob("*.csv"))
             if p.name != "comparisons.csv"}
    files["crafted.csv"] = (ROOT / "tests" / "data" / "ids" / "crafted.csv").read_text(encoding="utf-8")
    files["synthetic.csv"] = "\n".join(synthetic) + "\n"
    import csv
    import io
    assert sum(len(t.splitlines()) - 1 for t in files.values()) > 3000 + 50
    for name, text in files.items():
        ctx = ImportContext(source=name)
        table = list(csv.reader(io.StringIO(text, newline="")))
        header = [h.strip().lower() for h in table[0]]
        rows = [r for r in table[1:] if "".join(r).strip()]
        if not rows:        # a reference file that holds only its header
            continue
        slow, fast = _readers(header, ctx)
        for row in rows:
            assert _outcome(slow, row) == _outcome(fast, row), (name, row)
        share = _fast_share(csvrows.RowReader(header, ctx), rows, monkeypatch)
        # every row of these files is ordinary but one crafted row with a size written 1e6: none other may need
        # the importer (a slower path, not a wrong one)
        assert share == (5 / 6 if name == "crafted.csv" else 1.0), (name, share)


def test_the_caches_stay_bounded_and_long_cells_are_not_kept():
    ctx = ImportContext(source="c.csv")
    header = HEADER
    reader = csvrows.RowReader(header, ctx)
    base = {c: "" for c in header}
    base.update(system="s", op="write", value="1", unit="MiB/s", source="s")
    for i in range(3 * csvrows.CACHE_CELLS):
        row = dict(base, job_id=str(i), notes="n" * (csvrows.CACHE_CELL_CHARS + 1) + str(i))
        reader([row[c] for c in header])
    sizes = {header[i]: len(cache) for i, cache, _ in reader.cached}
    assert sizes["job_id"] <= csvrows.CACHE_CELLS          # 12,288 distinct job ids: the cache started again
    assert sizes["notes"] == 0                              # cells longer than CACHE_CELL_CHARS are never kept


def test_rows_that_differ_only_in_value_are_converted_once_and_the_row_cache_stays_bounded(monkeypatch):
    ctx = ImportContext(source="r.csv")
    slow, reader = _readers(HEADER, ctx)
    parts = []
    convert = reader._parts
    monkeypatch.setattr(reader, "_parts", lambda row: parts.append(1) or convert(row))
    base = {c: "" for c in HEADER}
    base.update(system="s", op="write", api="POSIX", layout="fpp", nodes="2", ranks="8", unit="GB/s", source="s",
                value_min="0.5")
    # the same settings with 500 values (and a spread): their cells are converted once, and each row is still
    # stored as the importer stores it (the value, its unit conversion and its key are the row's own)
    for i in range(500):
        row = [dict(base, value=f"{1 + i / 7:.6g}")[c] for c in HEADER]
        assert _outcome(slow, row) == _outcome(reader, row), row
    assert len(parts) == 1
    # distinct settings beyond ROW_CACHE: the cache starts again; a row longer than ROW_CACHE_CHARS in all is
    # never kept
    for i in range(csvrows.ROW_CACHE + 10):
        reader([dict(base, job_id=str(i), value="1")[c] for c in HEADER])
    assert 0 < len(reader.rows) <= csvrows.ROW_CACHE
    reader.rows.clear()
    long_notes = "n" * (csvrows.ROW_CACHE_CHARS + 1)
    row = [dict(base, notes=long_notes, value="2")[c] for c in HEADER]
    assert _outcome(slow, row) == _outcome(reader, row)
    assert not reader.rows


def test_rows_whose_cells_join_to_the_same_text_are_not_read_as_one_another():
    """The row cache keys a row by its cells joined with a NUL. Two rows whose cells differ but join to the same
    text (a NUL inside a cell) must NOT share a cached row. The checks refuse a NUL in every column today; here
    the notes and citation are read by a conversion that takes anything, so the cache itself is what is held."""
    import json
    from ioadvisor.kb.rows import VALUES
    ctx = ImportContext(source="nul.csv")
    reader = csvrows.RowReader(HEADER, ctx)
    names = [HEADER[i] for i, _, _ in reader.cached]
    at = names.index("notes")
    assert names[at + 1] == "citation"          # adjacent in the joined text: "a" NUL "b" NUL "c" both times
    reader.cached = [(i, cache, (lambda cell: (cell, json.dumps(cell))) if n in ("notes", "citation") else read)
                     for (i, cache, read), n in zip(reader.cached, names)]
    base = {c: "" for c in HEADER}
    base.update(system="s", op="write", value="1", unit="MiB/s", source="s")
    stored = []
    for notes, citation in (("a\x00b", "c"), ("a", "b\x00c"), ("a\x00b", "c")):
        _, values = reader([dict(base, notes=notes, citation=citation)[c] for c in HEADER])
        stored.append((values[VALUES.index("notes")], values[VALUES.index("citation")]))
    assert stored == [("a\x00b", "c"), ("a", "b\x00c"), ("a\x00b", "c")]
    assert not reader.rows                       # neither kept: their joined cells hold a NUL too many


def test_an_import_stores_what_the_run_path_stores_with_flags(tmp_path):
    """Through ingest.import_file, with a center whose memory and peaks flag some runs: the rows stored (every
    column, flags included) are those of the runs the importer reads, flagged as before."""
    from ioadvisor.center import load_center
    from ioadvisor.center.evidence import flags_of
    from ioadvisor.kb.rows import RUN_COLUMNS
    from ioadvisor.kb.rows import run_row
    center = tmp_path / "c.toml"
    center.write_text('name = "sysA"\nnode_memory = "256GiB"\n[[filesystems]]\nname = "scratch"\ntype = "lustre"\n'
                      'mount = "/s"\nrated_write_bandwidth = "2GB/s"\nrated_read_bandwidth = "3GB/s"\n')
    rnd = random.Random(5)
    lines = ["system,filesystem,op,api,layout,collective,nodes,ranks,transfer_size_bytes,block_size_bytes_per_rank,"
             "stripe_count,stripe_size_bytes,ost_count,value,unit,notes,source,direct"]
    for i in range(500):
        lines.append(f"sysA,{rnd.choice(['scratch', 'home'])},{rnd.choice(['write', 'read', 'file_create'])},"
                     f"POSIX,fpp,,{rnd.choice([1, 4])},{rnd.choice([1, 16])},1048576,"
                     f"{rnd.choice([1 << 20, 64 << 30])},,,,{rnd.uniform(100, 5000):.2f},MiB/s,n,s,"
                     f"{rnd.choice(['', 'true'])}")
    f = tmp_path / "flags.csv"
    f.write_text("\n".join(lines) + "\n")
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        import_file(kb, f, center=str(center))
        stored = [tuple(r) for r in kb.conn.execute(f"SELECT {','.join(RUN_COLUMNS)} FROM runs ORDER BY rowid")]
    c = load_center(str(center))
    runs = csvimp.parse(f.read_bytes(), ImportContext(source=str(f)))
    col = RUN_COLUMNS.index
    from ioadvisor.frozen import replace
    expected = [run_row(replace(r, flags=flags_of(r, center=c)), s[col("id")], s[col("source_hash")],
                         s[col("seq")]) for r, s in zip(runs, stored)]
    assert len(stored) == len(runs) == 500 and stored == expected
    flags = [s[col("flags")] for s in stored]
    # both flags occur, and clean runs too: the comparison covers each case
    assert {"cache-sized", "cache-sized,above-peak", None} <= set(flags), set(flags)


def test_occurrences_across_batches_and_sources_give_the_ids_of_the_whole_source_count(tmp_path, monkeypatch):
    """Ids count the n-th run of the same content over the whole source, across batches, whether its earlier
    runs were stored by this source or were in the KB before; runs the KB has are not stored again. Batches of 7
    runs put twins and triplets on both sides of batch boundaries."""
    from ioadvisor.kb import store
    from ioadvisor.kb.rows import content_ids
    monkeypatch.setattr(store, "BATCH", 7)
    head = "system,filesystem,op,api,layout,collective,nodes,ranks,transfer_size_bytes,block_size_bytes_per_rank," \
           "stripe_count,stripe_size_bytes,ost_count,value,unit,notes,source"
    contents = [f"sysO,fs,write,POSIX,fpp,,1,{i + 1},,,,,,{10 + i},MiB/s,n,s" for i in range(12)]
    # b in batches of 7; a holds c0 once, c1 twice, c5 once. c5: known, then occurrences 1 and 2 in later
    # batches (its count must survive a batch where it was only known); c3: stored once, then occurrence 1 in a
    # later batch (counted from the KB's own row); c2 twice in one batch and again in two later ones
    order = [0, 1, 2, 2, 3, 5, 6,   1, 2, 5, 7, 7, 8, 9,   1, 2, 3, 10, 5, 11, 11,   7, 0]
    b_rows = [contents[i] for i in order]
    a_rows = [contents[0], contents[1], contents[1], contents[5]]
    fa, fb = tmp_path / "a.csv", tmp_path / "b.csv"
    fa.write_text(head + "\n" + "\n".join(a_rows) + "\n")
    fb.write_text(head + "\n" + "\n".join(b_rows) + "\n")
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        ra = import_file(kb, fa)
        rb = import_file(kb, fb)
        stored = {r[0]: r[1] for r in kb.conn.execute("SELECT id, source FROM runs")}
    ctx = ImportContext(source="x")
    runs_a = csvimp.parse(fa.read_bytes(), ctx)
    runs_b = csvimp.parse(fb.read_bytes(), ctx)
    ids_a, ids_b = content_ids(runs_a), content_ids(runs_b)
    assert len(set(ids_b)) == len(b_rows) == 23            # every run of b has its own id (occurrences 0..3)
    new_b = [i for i in ids_b if i not in set(ids_a)]
    # a's 4 runs are in b too (c0 occurrence 0, c1 occurrences 0 and 1, c5 occurrence 0): 19 new, 4 known
    assert (ra.runs, rb.runs, rb.duplicates) == (4, 19, 4) and len(new_b) == 19
    assert set(stored) == set(ids_a) | set(ids_b) and len(stored) == 23


# ---- a large file read by a second process (ingest.csvrows.read_aside) -----------------------------------------
def _children() -> list[int]:
    import os
    try:
        return [int(p) for p in open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()]
    except OSError:
        return []


def test_a_file_read_aside_stores_what_one_process_stores(tmp_path, monkeypatch, aside):
    """The same rows, ids, flags and summary whichever process reads; progress reaches the file's size."""
    sys_path = ROOT / "benchmarks"
    monkeypatch.syspath_prepend(str(sys_path))
    import scale_data
    f = tmp_path / "big.csv"
    rows = list(scale_data.rows(12_000, 3))
    f.write_text(scale_data.HEADER + "\n" + "\n".join(rows + rows[:500]) + "\n")    # 500 runs twice
    center = tmp_path / "c.toml"
    center.write_text('name = "x"\nnode_memory = "256GiB"\n[[filesystems]]\nname = "scratch"\ntype = "lustre"\n'
                      'mount = "/s"\nrated_write_bandwidth = "12GB/s"\nrated_read_bandwidth = "14GB/s"\n')
    stored, seen = {}, []
    for label in ("aside", "one"):
        if label == "one":
            monkeypatch.setattr(csvrows, "ASIDE_BYTES", 1 << 60)
        with KB.open(tmp_path / f"{label}.sqlite", reference=False) as kb:
            progress = []
            r = import_file(kb, f, center=str(center), progress=lambda done, total: progress.append((done, total)))
            stored[label] = (r, [tuple(x) for x in kb.conn.execute("SELECT * FROM runs ORDER BY rowid")],
                             [tuple(x) for x in kb.conn.execute("SELECT * FROM system_fs ORDER BY 1, 2")])
            seen.append(progress)
    assert len(aside) == 1                      # the first import read aside, the second did not
    assert stored["aside"] == stored["one"]
    r, runs, _ = stored["aside"]
    assert (r.runs, len(runs)) == (12_500, 12_500)          # the 500 repeated rows are occurrences 1, not lost
    assert any(x[-1] for x in runs) and not all(x[-1] for x in runs)     # some runs flagged, some not
    size = f.stat().st_size
    for progress in seen:
        assert progress[-1] == (size, size) and all(0 <= d <= size for d, _ in progress)
    assert _children() == []


def test_an_error_read_aside_rolls_back_the_file_and_names_its_line(tmp_path, monkeypatch, aside):
    from ioadvisor.errors import ImportFormatError
    from ioadvisor.kb import RunFilter, store
    monkeypatch.setattr(store, "BATCH", 100)        # twenty batches are stored before the bad row comes
    head = "system,filesystem,op,api,layout,collective,nodes,ranks,transfer_size_bytes,block_size_bytes_per_rank," \
           "stripe_count,stripe_size_bytes,ost_count,value,unit,notes,source"
    good = [f"sysE,fs,write,POSIX,fpp,,1,{i + 1},,,,,,{i + 1},MiB/s,n,s" for i in range(2050)]
    f = tmp_path / "late.csv"
    f.write_text(head + "\n" + "\n".join(good) + "\nsysE,fs,write,POSIX,fpp,,1,1,,,,,,5,furlongs,n,s\n")
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        with pytest.raises(ImportFormatError) as e:
            import_file(kb, f)
        assert str(e.value).startswith(f"{f}:2052: unknown unit 'furlongs'")
        assert kb.count(RunFilter(origin="user")) == 0 and kb.stats()["sources"] == 0
        assert kb.systems() == []
        # the same file without the bad row imports whole; again, it adds nothing and the reader is stopped
        f.write_text(head + "\n" + "\n".join(good) + "\n")
        assert import_file(kb, f).runs == 2050
        again = import_file(kb, f)
        assert again.skipped and again.runs == 0
    assert len(aside) == 3 and _children() == []


def test_a_reader_that_dies_is_an_error_not_a_short_import(tmp_path, monkeypatch, aside):
    """A reading process killed mid-file (out of memory, say) must not look like the end of the file."""
    import os
    import signal
    from ioadvisor.kb import RunFilter

    def die(*_a, **_k):
        os.kill(os.getpid(), signal.SIGKILL)

    head = "system,filesystem,op,api,layout,collective,nodes,ranks,transfer_size_bytes,block_size_bytes_per_rank," \
           "stripe_count,stripe_size_bytes,ost_count,value,unit,notes,source"
    f = tmp_path / "k.csv"
    f.write_text(head + "\n" + "\n".join(f"sysK,fs,write,POSIX,fpp,,1,{i + 1},,,,,,5,MiB/s,n,s"
                                          for i in range(10)) + "\n")
    monkeypatch.setattr(csvrows.RowReader, "__call__", die)     # the child dies at its first row
    with KB.open(tmp_path / "kb.sqlite", reference=False) as kb:
        with pytest.raises(IOAdvisorError) as e:
            import_file(kb, f)
        assert "the process reading the file stopped" in str(e.value) and str(f) in str(e.value)
        assert kb.count(RunFilter(origin="user")) == 0 and kb.stats()["sources"] == 0
    assert _children() == []
