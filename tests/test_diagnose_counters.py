"""Rules held to the counter arithmetic that forbids (or demands) a finding, on real logs where one shows the
pattern, and otherwise on a `LogSummary` derived from records written out counter by counter (the record layout
and counter names are PyDarshan's own, so the summary is built by the same code that reads a real log)."""
from __future__ import annotations

from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")
from darshan.backend import cffi_backend as raw  # noqa: E402

from ioadvisor.diagnose import analyze  # noqa: E402
from ioadvisor.darshanlog.derive import _derive  # noqa: E402
from ioadvisor.diagnose.facts import KBFile  # noqa: E402
from ioadvisor.diagnose.rules import Context, load_thresholds, run_rules  # noqa: E402

WHEEL = Path(darshan.__file__).parent
EXAMPLES = WHEEL / "examples" / "example_logs"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "darshan"
GB = 10 ** 9


def record(mod: str, fid: int, rank: int, **values) -> dict:
    """One record of module `mod` ("POSIX", "MPI-IO", "STDIO") with every counter 0 but `values`; a value's key
    may leave out the module prefix (BYTES_READ for POSIX_BYTES_READ)."""
    prefix = {"POSIX": "POSIX_", "MPI-IO": "MPIIO_", "STDIO": "STDIO_"}[mod]
    c = dict.fromkeys(raw.counter_names(mod), 0)
    fc = dict.fromkeys(raw.fcounter_names(mod), 0.0)
    for k, v in values.items():
        name = k if k.startswith(prefix) else prefix + k
        if name in c:
            c[name] = v
        elif name in fc:
            fc[name] = float(v)
        else:
            raise KeyError(name)
    return {"id": fid, "rank": rank, "counters": c, "fcounters": fc}


def lustre(fid: int, stripes: int, osts: list[int]) -> dict:
    return {"id": fid, "rank": -1, "components": [{"counters": {
        "LUSTRE_COMP_STRIPE_SIZE": 1 << 20, "LUSTRE_COMP_STRIPE_COUNT": stripes, "LUSTRE_COMP_FLAGS": 0x10},
        "pool_name": "", "ost_ids": osts}]}


def summary(recs: dict[str, list[dict]], names: dict[int, str], *, nprocs: int, run_time: float,
            modules: tuple[str, ...] | None = None, partial: bool = False):
    job = {"nprocs": nprocs, "run_time": run_time, "metadata": {}}
    mods = modules or tuple(recs)
    return _derive("counters.darshan", job, "app", [("/lus", "lustre")], names, mods, recs, partial)


def ids(findings) -> set[str]:
    return {f.id for f in findings}


# ----------------------------------------------------------------------------------------------------
# SIZE001: reads that returned nothing are not small requests

def test_a_read_of_zero_bytes_is_empty_not_small_on_a_real_log():
    """dxt.darshan, rank 0's worker_localhost.err: POSIX_READS = 1, POSIX_BYTES_READ = 0, POSIX_SIZE_READ_0_100 = 1,
    and no common access size of 0 (the four are empty). A read that moved data moved at least 1 byte, so
    1 read - 0 bytes = 1 read returned nothing: zero = 1, small = min(1 in the bins - 1 empty, 0 bytes) = 0."""
    s = analyze(EXAMPLES / "dxt.darshan", use_kb=False).summary
    (f,) = [f for f in s.files if f.path.endswith("worker_localhost.err") and f.reads]
    assert f.reads == 1 and f.bytes_read == 0
    assert f.read_req.zero == 1 and f.small_reads == 0


def _empty_reads(nbytes: int, bin_: str):
    """The pattern of a real job: 306,537 POSIX reads on one file by each of 4 ranks, 120 s of read time per rank
    in a 600 s run; the common access sizes are the writes' (4 MiB), none of them 0."""
    recs = [record("POSIX", 1, r, READS=306_537, BYTES_READ=nbytes, **{f"SIZE_READ_{bin_}": 306_537},
                   WRITES=100, BYTES_WRITTEN=100 * (4 << 20), SIZE_WRITE_1M_4M=100,
                   ACCESS1_ACCESS=4 << 20, ACCESS1_COUNT=100, F_READ_TIME=120.0) for r in range(4)]
    return summary({"POSIX": recs}, {1: "/lus/run/input.dat"}, nprocs=4, run_time=600.0)


def test_reads_that_moved_no_bytes_are_never_small_requests():
    """POSIX_BYTES_READ = 0 on every record: 306,537 - 0 = 306,537 reads per rank returned nothing, so the reads
    below 1 MiB that moved data are at most 0 (the bytes) and SIZE001 has nothing to count: it must not fire.
    The same counters with 4 KiB moved per read (306,537 x 4,096 bytes, bin 1K_10K) must fire it: 4 x 306,537
    = 1,226,148 small reads of 1,226,148 non-empty (share 1.0 > 0.10), 4 x 120 s / 4 ranks = 120 s at stake."""
    s = _empty_reads(0, "0_100")
    assert s.reads.zero == 4 * 306_537 and s.reads.small == 0
    assert "SIZE001" not in ids(run_rules(s))
    moved = _empty_reads(306_537 * 4096, "1K_10K")
    (size,) = [f for f in run_rules(moved) if f.id == "SIZE001"]
    assert size.evidence["small_reads"] == 4 * 306_537 and size.time_at_stake_s == pytest.approx(120.0)


def test_some_empty_reads_are_taken_out_by_the_bytes():
    """1,000 reads moved 300 bytes in all (bin 0_100): at most 300 of them moved data, so at least 700 were empty
    and at most 300 are small; the histogram's 1,000 never reach the count."""
    rec = record("POSIX", 1, 0, READS=1000, BYTES_READ=300, SIZE_READ_0_100=1000, F_READ_TIME=5.0)
    s = summary({"POSIX": [rec]}, {1: "/lus/f"}, nprocs=1, run_time=50.0)
    assert s.reads.zero == 700 and s.reads.small == 300 and s.reads.refined_out == 700


# ----------------------------------------------------------------------------------------------------
# LOG001: only modules that carry I/O no read module sees are named, and only read modules are called read

@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent: no Darshan 3.41 logs")
def test_daos_log_names_dfs_and_daos_unread_and_lists_only_read_modules():
    """ior over DFS (3.41): modules POSIX, STDIO, HEATMAP, DFS, DAOS. DFS and DAOS moved IOR's data without POSIX
    (POSIX_BYTES_WRITTEN is 0 here); HEATMAP repeats POSIX and is neither read nor a gap."""
    (log,) = SHARED.glob("ior_daos_*.darshan")
    d = analyze(log, use_kb=False)
    (lg,) = [f for f in d.findings if f.id == "LOG001"]
    assert lg.evidence["unread"] == ["DFS", "DAOS"] and lg.evidence["read"] == ["POSIX", "STDIO"]
    read_part = lg.message.split("cover only what was read:")[1]
    assert "DFS" not in read_part and "DAOS" not in read_part and "HEATMAP" not in lg.message


def test_machine_data_and_pnetcdf_modules_are_no_gap():
    """A log with POSIX, MPI-IO, PNETCDF_FILE and BG/Q: PnetCDF's 8 GB reached the file through MPI-IO and POSIX
    (both read, both 8 GB), BG/Q holds the machine's torus and node counts: nothing is unseen, the log is not
    partial and has POSIX, so LOG001 has no cause and must not fire."""
    recs = {"POSIX": [record("POSIX", 1, -1, WRITES=8000, BYTES_WRITTEN=8 * GB, SIZE_WRITE_1M_4M=8000,
                             F_WRITE_TIME=80.0)],
            "MPI-IO": [record("MPI-IO", 1, -1, COLL_WRITES=8000, BYTES_WRITTEN=8 * GB, F_WRITE_TIME=90.0)]}
    s = summary(recs, {1: "/lus/out.nc"}, nprocs=8, run_time=100.0,
                modules=("POSIX", "MPI-IO", "PNETCDF_FILE", "BG/Q"))
    assert s.unread_modules == () and s.read_modules == ("POSIX", "MPI-IO")
    assert "LOG001" not in ids(run_rules(s))
    # the same log with its data through DAOS instead does name DAOS
    daos = summary(recs, {1: "/lus/out.nc"}, nprocs=8, run_time=100.0, modules=("POSIX", "MPI-IO", "DAOS", "BG/Q"))
    (lg,) = [f for f in run_rules(daos) if f.id == "LOG001"]
    assert lg.evidence["unread"] == ["DAOS"] and "BG/Q" not in lg.message


# ----------------------------------------------------------------------------------------------------
# LUS001: the bytes of the layer that carried them; gains only from the job's own system and scale

def _partial_mpiio_file(stripes: int, posix_bytes: int = 78_000):
    """A partial log of 512 processes: MPI-IO wrote 25.1 GB collectively to /lus/proj/out.dat (one shared record,
    555 s of write time per rank), while POSIX records survive for rank 3 only (78 KB); the file has `stripes`
    stripes. A second file, 1.49 GB through MPI-IO, has no POSIX record at all."""
    recs = {"MPI-IO": [record("MPI-IO", 1, -1, COLL_WRITES=512 * 100, BYTES_WRITTEN=25_100_000_000,
                              SIZE_WRITE_AGG_100M_1G=512 * 100, F_WRITE_TIME=555.0 * 512),
                       record("MPI-IO", 2, -1, COLL_WRITES=512, BYTES_WRITTEN=1_490_000_000,
                              SIZE_WRITE_AGG_1M_4M=512, F_WRITE_TIME=30.0 * 512)],
            "POSIX": [record("POSIX", 1, 3, WRITES=10, BYTES_WRITTEN=posix_bytes, SIZE_WRITE_1K_10K=10,
                             F_WRITE_TIME=0.5)],
            "LUSTRE": [lustre(1, stripes, list(range(stripes))), lustre(2, 1, [7])]}
    return summary(recs, {1: "/lus/proj/out.dat", 2: "/lus/proj/ckpt.dat"}, nprocs=512, run_time=1200.0,
                   modules=("POSIX", "MPI-IO", "LUSTRE"), partial=True)


def test_a_one_stripe_file_written_through_mpiio_counts_with_mpiio_bytes():
    """POSIX saw 78,000 bytes of out.dat (< 1 GiB: the old rule stayed silent), MPI-IO 25,100,000,000 (>= 1 GiB):
    max(78,000, 25.1e9) = 25.1e9 bytes on 1 stripe must fire LUS001 at the MPI-IO layer, with 555 s per rank
    (MPIIO_F_WRITE_TIME 555 x 512 rank-s / 512 ranks), plus ckpt.dat's 30 s (also one stripe, 1.49 GB): every
    one-stripe file counts. ckpt.dat, with no POSIX record, is a file of the summary."""
    s = _partial_mpiio_file(1)
    assert {f.path for f in s.files} == {"/lus/proj/out.dat", "/lus/proj/ckpt.dat"}
    (lus,) = [f for f in run_rules(s, ctx=Context()) if f.id == "LUS001"]
    assert lus.evidence["file"] == "/lus/proj/out.dat" and lus.evidence["layer"] == "MPI-IO"
    assert lus.evidence["bytes"] == 25_100_000_000 and lus.time_at_stake_s == pytest.approx(555.0 + 30.0)
    assert lus.evidence["files_affected"] == 2 and "through MPI-IO" in lus.message
    # striped over 8 OSTs, the same file must not fire it (8 > max_stripe_count 1), and ckpt.dat does (1.49 GB)
    (lus8,) = [f for f in run_rules(_partial_mpiio_file(8), ctx=Context()) if f.id == "LUS001"]
    assert lus8.evidence["file"] == "/lus/proj/ckpt.dat" and lus8.evidence["files_affected"] == 1


def _example_one_stripe():
    from ioadvisor.frozen import replace
    s = analyze(EXAMPLES / "example.darshan", use_kb=False).summary
    (f,) = s.shared_files
    lay = replace(f.lustre, stripe_count=1, osts=(f.lustre.osts[0],))
    return replace(s, files=(replace(f, lustre=lay),))


def test_a_gain_is_quoted_only_from_the_jobs_own_system_at_its_scale(tmp_path):
    """example.darshan with its shared file put on one stripe (2,048 ranks). The KB's 1 vs 4 stripe write runs
    are HA8000's at 1 client (95.4 vs 309.9 MiB/s). A job of another system, or of none named, gets no gain
    (expected_gain None, "no measurement for this system"); an HA8000 job of 2,048 ranks is 2,048x the 1 client
    measured (> 2x): no gain at its scale either. Only an HA8000 job of 1-2 ranks would get the 3.2x."""
    s = _example_one_stripe()
    kb = tmp_path / "none.sqlite"            # absent: the shipped reference runs stand alone
    for ctx in (Context(kb=KBFile(kb)), Context(kb=KBFile(kb), center_name="theta")):
        (lus,) = [f for f in run_rules(s, ctx=ctx) if f.id == "LUS001"]
        assert lus.evidence["expected_gain"] is None and lus.evidence["gain_basis"] is None
        assert "no measurement for this system" in lus.message and "HA8000" not in lus.message
    (lus,) = [f for f in run_rules(s, ctx=Context(kb=KBFile(kb), center_name="HA8000")) if f.id == "LUS001"]
    assert lus.evidence["expected_gain"] is None and lus.evidence["gain_basis"]["clients"] == 1
    assert "at this job's scale" in lus.message and "2048 ranks" in lus.message
    from ioadvisor.diagnose.rules import measured_stripe_gain
    one = measured_stripe_gain(KBFile(kb), 4, "HA8000", 2)
    assert one["at_job_scale"] and one["gain"] == pytest.approx(309.9 / 95.4, rel=0.01)


# ----------------------------------------------------------------------------------------------------
# SER001 (one rank moved nearly all of a shared file) and STDIO001 by time at stake

TOTAL = 105_877_820_080
ONE = 105_876_790_000


def _single_writer(rank_bytes: int, stdio_time: float = 113.0):
    """495 processes write /lus/sim/field.h5 collectively through MPI-IO (every rank ~TOTAL / 495 bytes), and at
    the POSIX layer rank 0 wrote ONE of the TOTAL bytes (900 s); rank 0 also made 956 STDIO writes of 44,784 bytes
    to a log file taking `stdio_time` s, in a 1,467 s run."""
    per = TOTAL // 495
    recs = {"POSIX": [record("POSIX", 1, -1, WRITES=100_000, BYTES_WRITTEN=TOTAL, SIZE_WRITE_1M_4M=100_000,
                             SLOWEST_RANK=0, SLOWEST_RANK_BYTES=rank_bytes, F_SLOWEST_RANK_TIME=900.0,
                             FASTEST_RANK=7, FASTEST_RANK_BYTES=0, F_FASTEST_RANK_TIME=0.01,
                             F_WRITE_TIME=905.0)],
            "MPI-IO": [record("MPI-IO", 1, -1, COLL_WRITES=495, BYTES_WRITTEN=TOTAL, SIZE_WRITE_AGG_100M_1G=495,
                              SLOWEST_RANK=3, SLOWEST_RANK_BYTES=per, F_SLOWEST_RANK_TIME=910.0,
                              FASTEST_RANK=0, FASTEST_RANK_BYTES=per, F_FASTEST_RANK_TIME=905.0,
                              F_WRITE_TIME=907.0 * 495)],
            "STDIO": [record("STDIO", 2, 0, WRITES=956, BYTES_WRITTEN=956 * 44_784, F_WRITE_TIME=stdio_time)],
            "LUSTRE": [lustre(1, 1, [4])]}
    return summary(recs, {1: "/lus/sim/field.h5", 2: "/lus/sim/run.log"}, nprocs=495, run_time=1467.0)


def test_one_posix_writer_under_collective_mpiio_is_a_single_writer_finding():
    """POSIX: rank 0 moved 105,876,790,000 / 105,877,820,080 = 0.99999 >= 0.99 of the file's bytes, 900 s: SER001
    at the POSIX layer, naming one aggregator since MPI-IO spread the bytes (each rank TOTAL / 495 < 0.99 TOTAL).
    IMB001 must not fire: a rank with everything is a serial pattern, not imbalance. With rank 0 at half the
    bytes (0.5 < 0.99) SER001 must not fire."""
    found = {f.id: f for f in run_rules(_single_writer(ONE), ctx=Context())}
    ser = found["SER001"]
    assert ser.evidence["layer"] == "POSIX" and ser.evidence["rank"] == 0 and ser.evidence["rank_bytes"] == ONE
    assert ser.time_at_stake_s == pytest.approx(900.0) and "aggregator" in ser.message
    assert "IMB001" not in found
    assert "SER001" not in ids(run_rules(_single_writer(TOTAL // 2), ctx=Context()))


def test_stdio_small_writes_count_by_the_time_they_cost():
    """956 STDIO writes of 44,784 bytes = 42,813,504 bytes, 0.0004 of the job's 105.9 GB (<= 0.10: the byte share
    alone says nothing), but 113 s on rank 0 of a 1,467 s run = 0.077 >= 0.05: STDIO001 must fire with 113 s at
    stake. At 10 s (0.0068 < 0.05) it must not."""
    (st,) = [f for f in run_rules(_single_writer(ONE), ctx=Context()) if f.id == "STDIO001"]
    assert st.time_at_stake_s == pytest.approx(113.0) and st.evidence["stdio_ops"] == 956
    assert "STDIO001" not in ids(run_rules(_single_writer(ONE, stdio_time=10.0), ctx=Context()))


@pytest.mark.parametrize("name", ["example.darshan", "sample-badost.darshan", "shane_macsio"])
def test_no_single_writer_where_the_ranks_share_the_bytes(name):
    """The wheel's multi-rank logs: on every shared file of >= 100 MiB the rank with most bytes (slowest or
    fastest, per layer) moved < 99% of them, so SER001 must not fire."""
    (log,) = [p for p in EXAMPLES.glob("*.darshan") if p.name.startswith(name)]
    d = analyze(log, use_kb=False)
    for f in d.summary.shared_files:
        for sp, moved in ((f.spread, f.bytes), (f.mpiio_spread, f.mpiio_bytes)):
            if sp and moved >= 100 << 20:
                assert max(sp.slowest_bytes, sp.fastest_bytes) < 0.99 * moved
    assert "SER001" not in ids(d.findings)


def test_html_plots_the_layer_that_carried_the_bytes_on_a_log_axis_where_counts_span_decades():
    """The single-writer job: POSIX carried the file's bytes (TOTAL >= MPI-IO's TOTAL), so the per-rank plots are
    POSIX's, where rank 0's 105.9 GB shows; the MPI-IO layer (every rank TOTAL / 495) would hide it. Its request
    example.darshan's non-empty bins span 4,096x (> 100x): a log axis, and
    ior_hdf5_example's span under 100x: linear."""
    from ioadvisor.diagnose import document
    from ioadvisor.darshanlog.summary import to_workload
    from ioadvisor.diagnose.report import render_html
    s = _single_writer(ONE)
    page = render_html(document(s, run_rules(s, ctx=Context()), to_workload(s), None))
    assert "carried its bytes (POSIX)" in page and "MPI-IO)" not in page
    for name, spans in (("example.darshan", True), ("ior_hdf5_example.darshan", False)):
        d = analyze(EXAMPLES / name, use_kb=False)
        counts = [v for v in list(d.summary.read_sizes.values()) + list(d.summary.write_sizes.values()) if v]
        assert (max(counts) / min(counts) > 100) == spans
        page = render_html(document(d.summary, list(d.findings), to_workload(d.summary), None))
        assert ("log scale" in page) == spans, name


# ----------------------------------------------------------------------------------------------------
# per-OST time: the slowest rank's time on a file, not the sum over the ranks that wrote it at once

def test_a_shared_file_puts_its_slowest_rank_on_its_ost_not_the_sum_of_its_ranks():
    """495 ranks share /lus/sim/field.h5 (one record, rank -1) on OST 4: their write times sum to 5,773 s, the
    slowest rank took 11.7 s of I/O in all, for 78 KB of POSIX writes in a 1,467 s run. On OST 4 the time is
    min(5,773, 11.7) / 1 OST = 11.7 s: a bar of 5,773 s would be longer than the run itself. The sum stays in
    `write_time_s`, named as what it is."""
    from ioadvisor.diagnose import document
    from ioadvisor.darshanlog.summary import to_workload
    from ioadvisor.diagnose.report import render_html
    recs = {"POSIX": [record("POSIX", 1, -1, WRITES=495, BYTES_WRITTEN=78_000, SIZE_WRITE_100_1K=495,
                             F_WRITE_TIME=5773.0, F_SLOWEST_RANK_TIME=11.7, SLOWEST_RANK=17)],
            "LUSTRE": [lustre(1, 1, [4])]}
    s = summary(recs, {1: "/lus/sim/field.h5"}, nprocs=495, run_time=1467.0)
    (ost,) = s.osts
    assert ost.ost == 4 and ost.slowest_write_time == pytest.approx(11.7) and ost.write_time == pytest.approx(5773.0)
    assert ost.mean_slowest_write_time <= s.run_time
    doc = document(s, [], to_workload(s), None)
    (row,) = doc["lustre"]["osts"]
    assert row["mean_slowest_rank_write_time_s"] == pytest.approx(11.7) and row["write_time_s"] == pytest.approx(5773)
    page = render_html(doc)
    assert "Slowest rank&#x27;s write time per file, by OST" in page and "summed over its ranks" not in page


def test_a_file_with_a_record_per_rank_puts_its_slowest_rank_on_its_osts():
    """Ranks 0-3 each keep a record of /lus/out.dat, striped over OSTs 1 and 2, with 1, 2, 3 and 10 s of write
    time: the slowest rank's 10 s, shared by 2 OSTs, is 5 s on each (the 16 s sum would be 8 s)."""
    recs = {"POSIX": [record("POSIX", 1, r, WRITES=1, BYTES_WRITTEN=1 << 20, SIZE_WRITE_1M_4M=1, F_WRITE_TIME=t)
                      for r, t in enumerate((1.0, 2.0, 3.0, 10.0))],
            "LUSTRE": [lustre(1, 2, [1, 2])]}
    s = summary(recs, {1: "/lus/out.dat"}, nprocs=4, run_time=20.0)
    assert [(o.ost, o.slowest_write_time, o.write_time) for o in s.osts] == [(1, 5.0, 8.0), (2, 5.0, 8.0)]


def test_the_example_logs_shared_file_is_on_each_ost_for_its_slowest_rank_only():
    """example.darshan: one file shared by 2,048 ranks (one record, rank -1) over 24 OSTs. Its POSIX write times
    sum to W (about 100,000 s, 850x the 117 s run); its slowest rank's I/O time is S (85.5 s). Each OST gets
    min(W, S) / 24, read here from the log's own counters, and no OST gets more than the run time."""
    log = EXAMPLES / "example.darshan"
    h = raw.log_open(str(log))
    try:
        recs = []
        while (r := raw.log_get_record(h, "POSIX", dtype="dict")) is not None:
            recs.append(r)
    finally:
        raw.log_close(h)
    shared = max((r for r in recs if r["rank"] == -1), key=lambda r: r["counters"]["POSIX_BYTES_WRITTEN"])
    w, slow = shared["fcounters"]["POSIX_F_WRITE_TIME"], shared["fcounters"]["POSIX_F_SLOWEST_RANK_TIME"]
    d = analyze(log, use_kb=False)
    assert w > 100 * d.summary.run_time
    (f,) = [f for f in d.summary.files if f.id == shared["id"]]
    assert len(f.lustre.osts) == 24
    for o in d.summary.osts:
        assert o.slowest_write_time == pytest.approx(min(w, slow) / 24)
        assert o.mean_slowest_write_time <= d.summary.run_time
