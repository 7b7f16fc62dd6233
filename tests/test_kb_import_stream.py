"""Import in bounded memory: endless or single-line inputs are refused quickly, a large CSV is read in batches
inside one transaction (an error in its last row still imports nothing)."""
from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ioadvisor.errors import ImportFormatError
from ioadvisor.importers import MAX_CELL, MAX_LINE
from ioadvisor.ingest import import_file
from ioadvisor.kb import KB, RunFilter
from ioadvisor.kb.store import BATCH
from measured import run_measured

HEADER = ("source,system,filesystem,ost_count,op,api,layout,collective,nodes,ranks,transfer_size_bytes,"
          "block_size_bytes_per_rank,stripe_count,stripe_size_bytes,value,unit,notes")
GIB = 1 << 30


def _import_cli(kb_path: Path, *args: str, timeout: float = 60, stdin: object = None) -> tuple[int, str, float, float]:
    """Run `ioadvise kb import` in a child; exit code, stderr, wall seconds and peak RSS in MB (wait4)."""
    rc, _, err, secs, rss = run_measured("kb", "import", "--kb", str(kb_path), *args, timeout=timeout, stdin=stdin)
    return rc, err, secs, rss


def _kb_untouched(kb_path: Path) -> None:
    if not kb_path.exists():
        return
    conn = sqlite3.connect(kb_path)
    assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM sources").fetchone()[0] == 0


def test_dev_zero_and_endless_pipes_are_refused_quickly_in_bounded_memory(kb_path):
    # the device is refused unopened; a pipe is read (`kb import <(zcat r.gz)`), so one that never ends must be
    # refused by what it holds: detected, zeros are no known format; forced as CSV, one endless line, refused
    # after MAX_LINE bytes
    for args, reason, endless in ((["/dev/zero"], "is a device, not a regular file or a pipe", False),
                                  (["/dev/stdin"], "unrecognised format", True),
                                  (["--format", "csv", "/dev/stdin"], "line longer than 1 MiB", True)):
        zeros = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE) if endless else None
        try:
            rc, err, secs, rss = _import_cli(kb_path, *args, stdin=zeros.stdout if zeros else None)
        finally:
            if zeros:
                zeros.kill()
                zeros.wait()
                zeros.stdout.close()
        assert rc == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and args[-1] in lines[0] and reason in lines[0], err
        assert "Traceback" not in err
        # before streaming, /dev/zero grew to 11-16 GB in 30 s; what a refusal may cost is a few MiB of reading
        assert secs < 20 and rss < 200, (secs, rss)
    _kb_untouched(kb_path)


def test_a_gigabyte_on_one_line_is_refused_at_line_1(tmp_path, kb_path):
    big = tmp_path / "one-line.csv"
    with open(big, "wb") as f:
        f.write(HEADER.encode() + b"," + b"x" * 4096)      # a CSV header that never ends ...
        f.truncate(GIB)                                    # ... for a whole GiB (sparse: no disk used)
    assert big.stat().st_size == GIB
    rc, err, secs, rss = _import_cli(kb_path, str(big))
    assert rc == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [f"Error: {big}:1: line longer than 1 MiB: not a benchmark output"]
    # reading a 1 GiB file whole would take over 1,000 MB of memory; the refusal reads about MAX_LINE bytes
    assert secs < 20 and rss < 200, (secs, rss)
    _kb_untouched(kb_path)


def test_a_long_line_deep_in_a_file_is_named(tmp_path, kb_path):
    row = "x,sysA,lustre,8,write,POSIX,fpp,,1,1,,,,,5,MB/s,"
    f = tmp_path / "late.csv"
    f.write_text(HEADER + "\n" + (row + "\n") * 1000 + row + "y" * (MAX_LINE + 10) + "\n" + row + "\n")
    with KB.open(kb_path) as kb:
        with pytest.raises(ImportFormatError) as e:
            import_file(kb, f)
        assert str(e.value) == f"{f}:1002: line longer than 1 MiB: not a benchmark output"
        assert kb.count(RunFilter(origin="user")) == 0


def test_an_over_long_cell_is_refused_with_its_line(tmp_path, kb_path):
    row = "x,sysA,lustre,8,write,POSIX,fpp,,1,1,,,,,5,MB/s,"
    f = tmp_path / "cell.csv"
    f.write_text(HEADER + "\n" + row + "\n" + row + "n" * (MAX_CELL + 1) + "\n")
    with KB.open(kb_path) as kb:
        with pytest.raises(ImportFormatError) as e:
            import_file(kb, f)
        assert str(e.value).startswith(f"{f}:3: not a CSV line: field larger than field limit")
        assert kb.count(RunFilter(origin="user")) == 0


def test_not_utf8_deep_in_a_file_names_its_line(tmp_path, kb_path):
    row = b"x,sysA,lustre,8,write,POSIX,fpp,,1,1,,,,,5,MB/s,\n"
    f = tmp_path / "latin1.csv"
    # past the first chunk the scan reads, so the line comes from counting, not from the head
    f.write_bytes(HEADER.encode() + b"\n" + row * 20_000 + b"x,sys\xe9,lustre,8,write,POSIX,fpp,,1,1,,,,,5,MB/s,\n")
    with KB.open(kb_path) as kb:
        with pytest.raises(ImportFormatError) as e:
            import_file(kb, f)
        assert str(e.value) == f"{f}:20002: not UTF-8 text"


def test_an_error_in_the_last_batch_rolls_back_every_batch(tmp_path, kb_path):
    n = 3 * BATCH + 7                   # four batches; the bad row is in the fourth
    rows = [f"x,sysB,lustre,8,write,POSIX,fpp,,1,{i + 1},,,,,{i + 1},MB/s," for i in range(n)]
    rows.append("x,sysB,lustre,8,write,POSIX,fpp,,1,1,,,,,12,furlongs,")
    f = tmp_path / "late-error.csv"
    f.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    with KB.open(kb_path) as kb:
        with pytest.raises(ImportFormatError) as e:
            import_file(kb, f)
        assert f"late-error.csv:{n + 2}:" in str(e.value) and "unknown unit" in str(e.value)
        # 3 batches of BATCH runs were inserted before the error: none of them may remain
        assert kb.count(RunFilter(origin="user")) == 0 and kb.stats()["sources"] == 0
        assert kb.systems().count("sysB") == 0
        rows.pop()
        f.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
        r = import_file(kb, f)
        assert r.runs == n and kb.count(RunFilter(system="sysB")) == n
        assert kb.conn.execute("SELECT n_runs FROM sources").fetchone()[0] == n


def test_a_pipe_imports_like_the_file(tmp_path, kb_path):
    f = tmp_path / "a.csv"
    f.write_text(HEADER + "\nx,sysP,lustre,8,write,POSIX,fpp,,1,1,,,,,5,MB/s,\n")
    r, w = os.pipe()
    with open(w, "wb") as wf:
        wf.write(f.read_bytes())
    with KB.open(kb_path) as kb:
        res = import_file(kb, f"/dev/fd/{r}")
        os.close(r)
        assert (res.runs, res.skipped) == (1, False)
        assert import_file(kb, f).skipped       # same content, same hash: the file adds nothing


def test_stored_rows_hold_every_column_of_their_runs_when_the_batch_leaves_columns_empty():
    """A batch names only the columns some run of it fills: a column empty in every run stays NULL, one filled in
    a single run is stored for that run only, and nothing else changes (kind keeps its value, not the default)."""
    from ioadvisor.importers import ImportContext, get
    from ioadvisor.kb.rows import RUN_COLUMNS
    from ioadvisor.kb.rows import run_row
    path = Path(__file__).parent / "data" / "ids" / "crafted.csv"
    parsed = get("csv").parse(path.read_bytes(), ImportContext(source=str(path)))
    with KB.open(":memory:", reference=False) as kb:
        import_file(kb, path)
        stored = [tuple(r) for r in kb.conn.execute(f"SELECT {','.join(RUN_COLUMNS)} FROM runs ORDER BY rowid")]
    assert len(stored) == len(parsed) == 6
    col = RUN_COLUMNS.index
    for row, run in zip(stored, parsed):
        assert row == run_row(run, row[col("id")], row[col("source_hash")], row[col("seq")])
    assert [r[col("tier")] for r in stored] == ["scratch"] + [None] * 5          # filled in one run only
    assert [r[col("kind")] for r in stored][3] == "production"                    # not the column's default
    assert all(r[col("command")] is None and r[col("tool")] is None for r in stored)   # empty in every run


def _run_indexes(conn: sqlite3.Connection) -> list[tuple]:
    return sorted(tuple(r) for r in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                                                 "AND tbl_name = 'runs'"))


def _indexes_whole_or_as_they_were(tmp_path, kb_path) -> None:
    n = 3 * BATCH + 7
    rows = [f"x,sysB,lustre,8,{('write', 'read')[i % 2]},POSIX,fpp,,1,{i + 1},,,,,{i + 1},MB/s," for i in range(n)]
    f = tmp_path / "big.csv"
    f.write_text(HEADER + "\n" + "\n".join(rows) + "\nx,sysB,lustre,8,write,POSIX,fpp,,1,1,,,,,12,furlongs,\n")
    with KB.open(kb_path, reference=False) as kb:
        before = _run_indexes(kb.conn)
        assert len(before) == 4              # the id index and the three secondary ones
        with pytest.raises(ImportFormatError):
            import_file(kb, f)
        assert _run_indexes(kb.conn) == before and kb.count() == 0
        f.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
        assert import_file(kb, f).runs == n
        assert _run_indexes(kb.conn) == before
        assert [tuple(r) for r in kb.conn.execute("PRAGMA integrity_check")] == [("ok",)]
        # each index answers for every run: as many entries as runs, where sqlite is made to read the index
        for name, col in (("runs_source", "source_hash"), ("runs_op", "op"), ("runs_system_op_fs", "system")):
            assert kb.conn.execute(f"SELECT count(*) FROM runs INDEXED BY {name} WHERE {col} IS NOT NULL"
                                   ).fetchone()[0] == n


def test_a_large_import_into_an_empty_kb_leaves_every_index_whole_or_as_it_was(tmp_path, kb_path, monkeypatch):
    """An import of several batches into a KB without runs, read in one process, builds the system, op and
    source indexes once at the end of its transaction: afterwards they are the same indexes (same names and
    statements) and hold an entry for every run (integrity_check compares each index with the table); an import
    that fails in its last batch leaves them as they were."""
    from ioadvisor.ingest import csvrows
    monkeypatch.setattr(csvrows, "ASIDE_BYTES", 1 << 40)
    _indexes_whole_or_as_they_were(tmp_path, kb_path)


def test_a_large_import_read_aside_leaves_every_index_whole_or_as_it_was(tmp_path, kb_path, aside):
    """The same, read by a second process: the system index is kept current as the runs go in, the op and
    source indexes built at the end; both imports (the failed one too) were read so."""
    _indexes_whole_or_as_they_were(tmp_path, kb_path)
    assert len(aside) == 2


def test_an_import_into_a_new_kb_leaves_it_in_wal_mode_whether_it_commits_or_rolls_back(tmp_path, kb_path):
    """An import into a KB without runs writes through a rollback journal (KB._rollback_journal): a failed one
    must NOT leave a run, a journal file or the KB out of WAL mode; a committed one must leave every run readable
    by another connection and the KB in WAL; and where another connection has the KB open, the import keeps the
    log and still stores every run."""
    n = 2 * BATCH + 3
    rows = [f"x,sysJ,lustre,8,write,POSIX,fpp,,1,{i + 1},,,,,{i + 1},MB/s," for i in range(n)]
    f = tmp_path / "j.csv"
    f.write_text(HEADER + "\n" + "\n".join(rows) + "\nx,sysJ,lustre,8,write,POSIX,fpp,,1,1,,,,,12,furlongs,\n")
    journal = Path(f"{kb_path}-journal")

    def mode(kb: KB) -> str:
        return kb.conn.execute("PRAGMA journal_mode").fetchone()[0]
    with KB.open(kb_path, reference=False) as kb:
        with pytest.raises(ImportFormatError):
            import_file(kb, f)
        assert (mode(kb), kb.count(), journal.exists()) == ("wal", 0, False)
        f.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
        assert import_file(kb, f).runs == n
        assert (mode(kb), journal.exists()) == ("wal", False)
    other = sqlite3.connect(kb_path)
    assert other.execute("SELECT count(*) FROM runs").fetchone()[0] == n
    other.close()
    second = tmp_path / "second.sqlite"
    with KB.open(second, reference=False) as kb:
        reader = sqlite3.connect(second)
        reader.execute("SELECT count(*) FROM runs").fetchone()      # open, between statements
        assert import_file(kb, f).runs == n
        assert mode(kb) == "wal" and reader.execute("SELECT count(*) FROM runs").fetchone()[0] == n
        reader.close()


def test_the_summary_of_a_batch_is_that_of_its_runs_one_by_one():
    """The per-system summary a batch adds (kb.store._Summary, counted per distinct system, file system, type
    and OST count) is what reading its runs in order gives: per system and file system the last stated type
    (lower case), the largest OST count, the count and the position of the first run; also where one batch
    states two types for one file system, where only the last one may stay."""
    import random
    from ioadvisor.kb.store import _Summary
    rnd = random.Random(5)
    columns = ("system", "filesystem", "fs_type", "ost_count")
    for types in (("lustre", "Lustre", None), ("lustre", "gpfs", None, "")):
        rows = [(rnd.choice(("a", "b")), rnd.choice(("scratch", None, "")), rnd.choice(types),
                 rnd.choice((None, 0, 8, 48))) for _ in range(500)]
        # a type stated, another, then the first again: the last one stated is the first one
        rows += [("c", "scratch", "gpfs", 8), ("c", "scratch", "lustre", 8), ("c", "scratch", "gpfs", 8)] * (
            "gpfs" in types)
        expected: dict = {}
        for i, (system, fs, fs_type, osts) in enumerate(rows, 100):
            g = expected.setdefault((system, fs or fs_type or "unknown"), [None, None, 0, i])
            g[0] = fs_type.lower() if fs_type else g[0]
            g[1] = osts if osts and (g[1] is None or osts > g[1]) else g[1]
            g[2] += 1
        s = _Summary()
        s.add(rows[:250], 100, columns)
        s.add(rows[250:], 350, columns)      # the second batch states both types for ("c", "scratch")
        assert s.groups == expected
        assert expected.get(("c", "scratch"), ["gpfs"])[0] == "gpfs"


def test_repeated_runs_far_apart_get_the_same_ids_in_an_empty_kb_as_in_one_with_runs(tmp_path):
    """A run repeated batches apart is its content's next occurrence, whether the KB had runs before (its ids
    looked up in the KB) or none (only ids this source gave are looked up): the same rows either way, each
    repetition stored once more under its own id."""
    rows = [f"x,sysR,lustre,8,write,POSIX,fpp,,1,{i % 997 + 1},,,,,{i % 997 + 1},MB/s," for i in range(2 * BATCH + 5)]
    f = tmp_path / "repeats.csv"
    f.write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    other = tmp_path / "other.csv"
    other.write_text(HEADER + "\nx,sysO,lustre,8,write,POSIX,fpp,,1,1,,,,,5,MB/s,\n")
    stored = []
    for first in (None, other):
        with KB.open(tmp_path / f"kb-{first is None}.sqlite", reference=False) as kb:
            if first is not None:
                import_file(kb, first)
            assert import_file(kb, f).runs == len(rows)
            stored.append([tuple(r) for r in kb.conn.execute(
                "SELECT id, seq, ranks, value FROM runs WHERE system = 'sysR' ORDER BY rowid")])
    assert stored[0] == stored[1] and len({r[0] for r in stored[0]}) == len(rows)


def test_a_batch_carries_the_content_key_only_of_runs_whose_first_id_came_before():
    """A batch's keys serve only to number a repeated content's later runs (`run_id(key, n)`, n >= 1): a key is
    left out (None) where no earlier run of the source has the run's first id, and kept for every repeat, in
    its own batch or a later one. Must NOT happen: a repeat without its key (its id could not be made), or the
    ~520-character keys of a million first runs carried to the storing process."""
    from ioadvisor.kb.rows import VALUES
    from ioadvisor.kb.store import batched
    from ioadvisor.model.run import run_id
    row = tuple("s" if c in ("system", "op", "unit", "kind") else None for c in VALUES)
    keys = [f"k{i % 5}" if i < 8 else f"k{i}" for i in range(12)]     # k0..k4, then k0..k2 again, then new
    batches = list(batched(((k, row) for k in keys), frozenset(), size=4))
    firsts = [f for _, fs, _, _ in batches for f in fs]
    sent = [k for _, _, ks, _ in batches for k in ks]
    assert firsts == [run_id(k) for k in keys]
    assert sent == [None] * 5 + ["k0", "k1", "k2"] + [None] * 4


def test_runs_the_reference_holds_are_not_stored_again_in_an_empty_kb(tmp_path):
    """An import into a KB without runs looks up in the reference only the first ids whose bytes the reference's
    ids (read once) or this source marked. Must NOT happen: a reference run stored again because it came in a
    later batch of a large file: the runs of the file that the reference holds count as in the KB already."""
    from ioadvisor.frozen import replace
    from ioadvisor.importers.csv import export_csv
    from ioadvisor.kb.rows import row_to_run
    with KB.open(tmp_path / "probe.sqlite") as kb:
        ref = [row_to_run(r) for r in kb.conn.execute("SELECT * FROM ref.runs")]
    assert len(ref) > 10
    new = [replace(ref[0], system="sysnew", value=float(i + 1), value_given=None, unit_given=None)
           for i in range(BATCH + 5)]
    f = tmp_path / "with-reference.csv"
    f.write_text(export_csv(new + ref), encoding="utf-8")
    with KB.open(tmp_path / "kb.sqlite") as kb:
        r = import_file(kb, f)
        again = kb.conn.execute("SELECT count(*) FROM main.runs WHERE id IN (SELECT id FROM ref.runs)").fetchone()[0]
        stored = kb.conn.execute("SELECT count(*) FROM main.runs").fetchone()[0]
    assert (r.runs, r.duplicates, again, stored) == (len(new), len(ref), 0, len(new))
