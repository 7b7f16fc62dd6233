"""`ioadvise diagnose` on every real log shipped in the darshan wheel: per log, the findings that must appear and
the ones that must not, each justified by counters read here straight from PyDarshan's C backend (no ioadvisor
code) and written out as the arithmetic the rule is held to."""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest

darshan = pytest.importorskip("darshan")
from darshan.backend import cffi_backend as raw  # noqa: E402

from ioadvisor.diagnose import analyze  # noqa: E402
from ioadvisor.diagnose.rules import load_thresholds, run_rules  # noqa: E402

WHEEL = Path(darshan.__file__).parent
MIB = 1 << 20
GIB = 1 << 30


def _unique_logs() -> dict[str, Path]:
    """Every distinct log in the wheel (examples and test inputs; some are shipped twice under two names)."""
    out: dict[str, Path] = {}
    seen: set[str] = set()
    for p in sorted(WHEEL.rglob("*.darshan")):
        h = hashlib.sha256(p.read_bytes()).hexdigest()
        if h not in seen:
            seen.add(h)
            out[p.name] = p
    return out


LOGS = _unique_logs()


def _log(prefix: str) -> Path:
    (name,) = [n for n in LOGS if n.startswith(prefix)]
    return LOGS[name]


def counters(path: Path) -> dict:
    """The log as PyDarshan's C backend gives it: job, names, and per module a list of (rank, name, c, fc)."""
    log = raw.log_open(str(path))
    try:
        job = raw.log_get_job(log)
        names = raw.log_get_name_records(log)
        mods = raw.log_get_modules(log)
        out = {"job": job, "modules": list(mods)}
        for mod in ("POSIX", "MPI-IO", "STDIO", "LUSTRE"):
            recs = []
            if mod in mods:
                while (r := raw.log_get_record(log, mod, dtype="dict")) is not None:
                    recs.append((int(r["rank"]), names.get(r["id"], ""), r.get("counters"),
                                 r.get("fcounters"), r))
            out[mod] = recs
        return out
    finally:
        raw.log_close(log)


_CACHE: dict[str, tuple] = {}


def diag(path: Path, thresholds=None):
    key = f"{path}:{thresholds}"
    if key not in _CACHE:
        d = analyze(path, use_kb=False, thresholds=thresholds)
        _CACHE[key] = (d, {f.id: f for f in d.findings})
    return _CACHE[key]


def test_the_wheel_ships_real_logs():
    # 13 distinct logs: 6 examples, 6 darshan-graph logs, and the test inputs that are not copies of examples
    assert len(LOGS) >= 13, sorted(LOGS)


# ----------------------------------------------------------------------------------------------------
# example.darshan: VPIC-IO, 2,048 ranks, one 2 TiB HDF5 file written with collective MPI-IO

def test_example_straggler_not_imbalance_and_no_collective_advice():
    c = counters(_log("example.darshan"))
    (_, _, m, mf, _), = c["MPI-IO"]
    (_, _, p, pf, _), = c["POSIX"]
    # collective writes 16,384 against 18 independent ones; the 18 are at most 18 of the largest requests, and the
    # largest bin with requests is 100M_1G (upper edge 1 GiB): independent bytes <= 18 GiB
    assert m["MPIIO_COLL_WRITES"] == 16384 and m["MPIIO_INDEP_WRITES"] == 18
    assert m["MPIIO_SIZE_WRITE_AGG_1G_PLUS"] == 0 and m["MPIIO_SIZE_WRITE_AGG_100M_1G"] == 16384
    coll_min = (m["MPIIO_BYTES_WRITTEN"] - 18 * GIB) / m["MPIIO_BYTES_WRITTEN"]
    assert coll_min > 0.99                       # (2,199,023,259,968 - 18 GiB) / 2,199,023,259,968 = 0.9912
    # every rank moved the same bytes: the slowest and the fastest each 1 GiB, the mean 2 TiB / 2048 = 1 GiB + 2 B
    mean = m["MPIIO_BYTES_WRITTEN"] / c["job"]["nprocs"]
    assert m["MPIIO_SLOWEST_RANK_BYTES"] == m["MPIIO_FASTEST_RANK_BYTES"] == GIB
    assert abs(GIB - mean) / mean < 0.10
    assert math.sqrt(mf["MPIIO_F_VARIANCE_RANK_BYTES"]) / mean < 0.10      # sqrt(701.7) = 26 bytes
    gap = mf["MPIIO_F_SLOWEST_RANK_TIME"] - mf["MPIIO_F_FASTEST_RANK_TIME"]   # 85.49 - 20.45 = 65.0 s
    assert gap > 60 and gap / mf["MPIIO_F_SLOWEST_RANK_TIME"] > 0.15
    _, found = diag(_log("example.darshan"))
    assert "STRAG001" in found
    st = found["STRAG001"]
    assert st.evidence["slowest_rank"] == m["MPIIO_SLOWEST_RANK"] == 1312
    assert st.evidence["fastest_rank"] == m["MPIIO_FASTEST_RANK"] == 597
    assert abs(st.time_at_stake_s - gap) < 0.01 and st.severity == "warn"     # capped: the cause is not the job's
    # forbidden: data imbalance (bytes equal), collective advice (>= 99% collective), small requests
    # (POSIX 4 + 14 = 18 writes below 1 MiB < 1000), a striping finding (24 stripes), metadata
    # (11.30 s on the shared record / 2048 ranks = 0.0055 s per rank < 1 s)
    assert p["POSIX_SIZE_WRITE_0_100"] + p["POSIX_SIZE_WRITE_100_1K"] == 18
    assert pf["POSIX_F_META_TIME"] / 2048 < 1.0
    for bad in ("IMB001", "MPI001", "SIZE001", "LUS001", "META001", "RMW001", "LUS003"):
        assert bad not in found, (bad, found[bad].message)
    assert "collective" not in " ".join(f.message for f in found.values())


# ----------------------------------------------------------------------------------------------------
# sample-badost.darshan: IOR file per process, 2,048 ranks on 24 OSTs, one OST slow

def test_badost_names_ost_14_and_nothing_the_counters_contradict():
    c = counters(_log("sample-badost.darshan"))
    ost_of = {r["id"]: list(r["components"][0]["ost_ids"]) for *_, r in c["LUSTRE"]}
    per_ost: dict[int, list[float]] = {}
    for rank, name, p, pf, r in c["POSIX"]:
        for o in ost_of.get(r["id"], []):
            per_ost.setdefault(int(o), []).append(pf["POSIX_F_WRITE_TIME"])
    means = {o: sum(v) / len(v) for o, v in per_ost.items()}
    med = sorted(means.values())[len(means) // 2 - 1: len(means) // 2 + 1]
    median = sum(med) / 2                                    # 24 OSTs: the mean of the 12th and 13th
    assert max(means, key=means.get) == 14 and means[14] >= 3 * median and means[14] - median >= 5
    _, found = diag(_log("sample-badost.darshan"))
    lus2 = found["LUS002"]
    assert lus2.evidence["ost"] == 14 and "OST 14" in lus2.message
    assert len(per_ost[14]) == lus2.evidence["files_on_ost"] == 85
    assert abs(means[14] - lus2.evidence["mean_write_time_s"]) < 0.01
    assert abs(lus2.time_at_stake_s - (means[14] - median)) < 0.1 and lus2.severity == "high"  # 535 s of 780 s
    # every write is 4 MiB (ACCESS1 = 4194304, bin 1M_4M): 2048 x 64 = 131072 writes, none below 1 MiB
    assert all(p["POSIX_SIZE_WRITE_1M_4M"] == p["POSIX_WRITES"] == 64 for _, _, p, _, _ in c["POSIX"])
    # no rank-shared file: 2048 POSIX records, each its own rank and its own file
    assert len({(rank, name) for rank, name, *_ in c["POSIX"]}) == len({name for _, name, *_ in c["POSIX"]}) == 2048
    # metadata per rank: the busiest rank's own POSIX records + the shared STDIO records / 2048 ranks
    own = max(pf["POSIX_F_META_TIME"] for *_, pf, _ in c["POSIX"])
    shared = sum(sf["STDIO_F_META_TIME"] for rank, _, _, sf, _ in c["STDIO"] if rank == -1) / 2048
    assert own + shared < 1.0                                # 0.59 + 276.86 / 2048 = 0.73 s
    # OSTs: 24 distinct, highest index 23: 24 of at least 24 used, nothing for LUS003
    osts = {o for v in ost_of.values() for o in v}
    assert len(osts) == 24 and max(osts) == 23
    for bad in ("SIZE001", "META001", "IMB001", "STRAG001", "MPI001", "LUS001", "LUS003", "STDIO001"):
        assert bad not in found, (bad, found[bad].message)


def test_goodost_has_no_slow_ost():
    c = counters(_log("sample-goodost.darshan"))
    ost_of = {r["id"]: list(r["components"][0]["ost_ids"]) for *_, r in c["LUSTRE"]}
    per_ost: dict[int, list[float]] = {}
    for *_, pf, r in c["POSIX"]:
        for o in ost_of.get(r["id"], []):
            per_ost.setdefault(int(o), []).append(pf["POSIX_F_WRITE_TIME"])
    means = sorted(sum(v) / len(v) for v in per_ost.values())
    median = (means[len(means) // 2 - 1] + means[len(means) // 2]) / 2
    assert means[-1] - median < 5                            # no OST 5 s above the median: LUS002 cannot hold
    assert all(p["POSIX_SIZE_WRITE_4M_10M"] == p["POSIX_WRITES"] for _, _, p, _, _ in c["POSIX"])  # 8 MiB writes
    _, found = diag(_log("sample-goodost.darshan"))
    for bad in ("LUS002", "SIZE001", "META001", "LUS003", "IMB001", "STRAG001"):
        assert bad not in found, (bad, found[bad].message)


# ----------------------------------------------------------------------------------------------------
# dxt.darshan: one Java process, 1,469 s, blocking opens on named pipes

def test_dxt_fifo_opens_are_not_metadata_and_tiny_reads_cost_too_little():
    c = counters(_log("dxt.darshan"))
    assert c["job"]["nprocs"] == 1
    fifo = sum(pf["POSIX_F_META_TIME"] for _, n, _, pf, _ in c["POSIX"] if n.rsplit("/", 1)[-1].startswith("pipe_"))
    files = sum(pf["POSIX_F_META_TIME"] for _, n, _, pf, _ in c["POSIX"]
                if not n.rsplit("/", 1)[-1].startswith("pipe_"))
    files += sum(sf["STDIO_F_META_TIME"] for *_, sf, _ in c["STDIO"])
    assert fifo > 11000 and files < 1.0                      # 11,217.6 s waiting on pipes; 0.15 s on files
    read_t = sum(pf["POSIX_F_READ_TIME"] for _, n, _, pf, _ in c["POSIX"])
    write_t = sum(pf["POSIX_F_WRITE_TIME"] for _, n, _, pf, _ in c["POSIX"])
    small_reads = sum(p[f"POSIX_SIZE_READ_{b}"] for _, _, p, _, _ in c["POSIX"]
                      for b in ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M"))
    assert small_reads > 6000 and read_t + write_t < 1.0    # thousands of small reads, all of them in 0.45 s
    d, found = diag(_log("dxt.darshan"))
    assert d.summary.meta.left_out_rank_seconds > 11000 and d.summary.meta.per_rank_max < 1.0
    assert not d.summary.shared_files                        # one process shares nothing
    for bad in ("META001", "SIZE001", "IMB001", "STRAG001", "MPI001", "STDIO001"):
        assert bad not in found, (bad, found[bad].message)


# ----------------------------------------------------------------------------------------------------
# noposix / noposixopens: STDIO only, long runs, little time in I/O

def test_noposix_says_what_it_could_not_see_and_no_stdio_finding_for_a_tenth_of_a_second():
    c = counters(_log("noposix.darshan"))
    assert "POSIX" not in c["modules"] and c["job"]["nprocs"] == 512
    data_t = sum(sf["STDIO_F_READ_TIME"] + sf["STDIO_F_WRITE_TIME"] for *_, sf, _ in c["STDIO"])
    meta_t = sum(sf["STDIO_F_META_TIME"] for *_, sf, _ in c["STDIO"])
    assert all(rank == -1 for rank, *_ in c["STDIO"])
    assert data_t / 512 < 0.1 and meta_t / 512 < 1.0         # (28.54 + 5.28) / 512 = 0.066 s; 364.6 / 512 = 0.71 s
    _, found = diag(_log("noposix.darshan"))
    assert "LOG001" in found and "POSIX" in found["LOG001"].message and found["LOG001"].severity == "info"
    for bad in ("STDIO001", "META001", "MPI001", "SIZE001"):
        assert bad not in found, (bad, found[bad].message)


def test_noposixopens_nothing_above_a_second_per_rank():
    c = counters(_log("noposixopens.darshan"))
    n = c["job"]["nprocs"]
    shared = sum(sf["STDIO_F_META_TIME"] for rank, _, _, sf, _ in c["STDIO"] if rank == -1) / n
    own = max((sf["STDIO_F_META_TIME"] for rank, _, _, sf, _ in c["STDIO"] if rank >= 0), default=0)
    own += max((pf["POSIX_F_META_TIME"] for rank, _, _, pf, _ in c["POSIX"] if rank >= 0), default=0)
    assert shared + own < 1.0                                # 16.16 / 32 + 0.003 + 0.002 = 0.51 s
    stdio_b = sum(sc["STDIO_BYTES_READ"] + sc["STDIO_BYTES_WRITTEN"] for _, _, sc, _, _ in c["STDIO"])
    big = max(sc["STDIO_BYTES_READ"] for _, _, sc, _, _ in c["STDIO"])
    assert big / stdio_b > 0.9       # 604 MB read in 32 calls of 18.9 MB: STDIO is not small calls here
    _, found = diag(_log("noposixopens.darshan"))
    for bad in ("STDIO001", "META001", "SIZE001", "LOG001"):
        assert bad not in found, (bad, found[bad].message)


def test_stdio_calls_of_megabytes_are_not_small_chunks(tmp_path):
    """noposixopens reads 603,979,776 bytes through STDIO in 32 calls (18.9 MB each): with every threshold of
    STDIO001 but the call size lowered to zero, the rule counts only the files of small calls, never that one."""
    c = counters(_log("noposixopens.darshan"))
    (big,) = [(n, sc) for _, n, sc, _, _ in c["STDIO"] if sc["STDIO_BYTES_READ"] == 603979776]
    assert big[1]["STDIO_READS"] == 32 and 603979776 / 32 > 16 * MIB
    small = [(n, sc) for _, n, sc, _, _ in c["STDIO"] if not n.startswith("<")
             and (sc["STDIO_BYTES_READ"] + sc["STDIO_BYTES_WRITTEN"]) / max(1, sc["STDIO_READS"] + sc["STDIO_WRITES"])
             < 65536]
    low = tmp_path / "low.toml"
    low.write_text("[SEVERITY]\nmin_seconds = 0.0\n[STDIO001]\nshare = 0.0\nmin_bytes = 0\n")
    _, found = diag(_log("noposixopens.darshan"), thresholds=str(low))
    st = found["STDIO001"]
    assert big[0] not in st.evidence["files"]
    assert st.evidence["stdio_bytes"] == sum(sc["STDIO_BYTES_READ"] + sc["STDIO_BYTES_WRITTEN"] for _, sc in small)
    assert st.evidence["stdio_bytes"] < 603979776 // 100       # 4,117,049 bytes in calls of 15 and 76 bytes


# ----------------------------------------------------------------------------------------------------
# shane_macsio: HDF5 over MPI-IO, 16 ranks, 4 s

def test_macsio_no_collective_advice_the_bytes_cannot_support():
    c = counters(_log("shane_macsio"))
    (_, _, m, mf, _), = c["MPI-IO"]
    # 64 collective writes, all in the 100K_1M bin or below: at most 64 x 1 MiB, which is more than the
    # 13,286,360 bytes written, so the log cannot show the collective share to be below 90%.
    assert m["MPIIO_COLL_WRITES"] == 64 and m["MPIIO_INDEP_WRITES"] == 7695
    assert m["MPIIO_SIZE_WRITE_AGG_100K_1M"] == 64 and 64 * MIB >= m["MPIIO_BYTES_WRITTEN"]
    assert mf["MPIIO_F_WRITE_TIME"] / 16 < 1.0               # 13.90 s / 16 ranks = 0.87 s per rank in all writes
    d, found = diag(_log("shane_macsio"))
    (h5,) = [f for f in d.summary.files if f.path.endswith(".h5")]
    assert h5.mpiio_write.collective_share_max >= 0.9
    for bad in ("MPI001", "SIZE001", "IMB001", "STRAG001", "META001", "RMW001"):
        assert bad not in found, (bad, found[bad].message)


def test_macsio_read_modify_write_is_seen_when_the_floor_allows(tmp_path):
    c = counters(_log("shane_macsio"))
    (_, _, m, _, _), = c["MPI-IO"]
    (p, pf), = [(p, pf) for _, n, p, pf, _ in c["POSIX"] if n.endswith(".h5")]
    ratio = p["POSIX_BYTES_WRITTEN"] / m["MPIIO_BYTES_WRITTEN"]     # 54,579,416 / 13,286,360 = 4.11
    assert ratio > 4 and p["POSIX_BYTES_READ"] > 0 == m["MPIIO_BYTES_READ"]
    at_stake = (pf["POSIX_F_WRITE_TIME"] * (1 - 1 / ratio) + pf["POSIX_F_READ_TIME"]) / 16
    assert at_stake < 1.0                                    # (0.123 x 0.757 + 0.009) / 16 = 0.006 s: silent
    low = tmp_path / "low.toml"
    low.write_text("[SEVERITY]\nmin_seconds = 0.0\n")
    _, found = diag(_log("shane_macsio"), thresholds=str(low))
    rmw = found["RMW001"]
    assert abs(rmw.evidence["ratio"] - ratio) < 0.01 and rmw.severity == "info"
    assert abs(rmw.time_at_stake_s - at_stake) < 0.001
    assert "MPI001" not in found                             # the floor does not change what the bytes say


# ----------------------------------------------------------------------------------------------------
# the small ones: ior_hdf5 (4 ranks, 1 s), sample-dxt-simple (16 ranks, 1 s), the darshan-graph logs

def test_small_logs_have_nothing_to_change():
    for prefix in ("ior_hdf5_example", "sample-dxt-simple", "pq_app_readAB_writeC"):
        c = counters(_log(prefix))
        io_t = sum(pf["POSIX_F_READ_TIME"] + pf["POSIX_F_WRITE_TIME"] + pf["POSIX_F_META_TIME"]
                   for *_, pf, _ in c["POSIX"])
        assert io_t < 1.0, prefix                            # all POSIX time of all ranks is under a second
        _, found = diag(_log(prefix))
        assert not [f for f in found.values() if f.id != "LOG001"], (prefix, list(found))


def test_single_process_logs_share_nothing():
    singles = [p for n, p in LOGS.items() if counters(p)["job"]["nprocs"] == 1]
    assert len(singles) >= 6                                 # five darshan-graph apps and dxt.darshan
    for p in singles:
        c = counters(p)
        assert any(rank == -1 for rank, *_ in c["POSIX"]) or p.name == "dxt.darshan"
        d, found = diag(p)
        assert not d.summary.shared_files and d.summary.layout in ("fpp", "none"), p.name
        assert not any(f.id in ("MPI001", "IMB001", "STRAG001") for f in found.values()), p.name
        assert "collective" not in " ".join(f.message for f in found.values())


# ----------------------------------------------------------------------------------------------------
# invariants over every log: what no finding may ever say

@pytest.mark.parametrize("name", sorted(LOGS), ids=lambda n: n[:28])
def test_no_finding_contradicts_its_own_log(name):
    path = LOGS[name]
    c = counters(path)
    d, found = diag(path)
    t = load_thresholds()
    for f in d.findings:
        if f.time_at_stake_s is not None:
            assert f.time_at_stake_s >= t["SEVERITY"]["min_seconds"], (f.id, f.time_at_stake_s)
            if f.severity == "high":
                assert f.time_at_stake_s >= 10 and f.time_at_stake_s / c["job"]["run_time"] >= 0.2
        assert f.evidence.get("arithmetic") is not None and "counters" in f.evidence
    # no collective advice where the file's MPI-IO bytes in that direction may be >= 90% collective
    if "MPI001" in found:
        assert found["MPI001"].evidence["collective_share_max"] < 0.9
    # exactly-1-MiB requests are not small: a record whose common access size is 1 MiB for all its requests
    # contributes none of them to SIZE001
    for rank, _, p, _, _ in c["POSIX"]:
        ones = sum(p[f"POSIX_ACCESS{i}_COUNT"] for i in range(1, 5) if p[f"POSIX_ACCESS{i}_ACCESS"] == MIB)
        if ones and ones == p["POSIX_READS"] + p["POSIX_WRITES"]:
            assert "SIZE001" not in found
    if c["job"]["nprocs"] == 1:
        assert not d.summary.shared_files
    if "META001" in found:
        assert found["META001"].evidence["per_rank_s"] >= 1.0


def test_exactly_1mib_requests_are_counted_in_100k_1m_and_refined_out():
    """Darshan's bucket macro puts 1,048,576 bytes in 100K_1M (`< 1048577`); a record whose common access sizes
    say its requests there are 1 MiB has no small requests. Shown on a real record with its counters changed only
    where the real logs have no 1 MiB requests to offer."""
    from ioadvisor.darshanlog.derive import _requests
    c = counters(_log("sample-badost.darshan"))
    _, _, p, pf, _ = c["POSIX"][0]
    rec = dict(p)
    for b in ("1M_4M",):
        rec[f"POSIX_SIZE_WRITE_{b}"] = 0
    rec["POSIX_SIZE_WRITE_100K_1M"] = 64 + 3
    rec["POSIX_ACCESS1_ACCESS"], rec["POSIX_ACCESS1_COUNT"] = MIB, 64
    rec["POSIX_ACCESS2_ACCESS"], rec["POSIX_ACCESS2_COUNT"] = 200000, 3
    rec["POSIX_WRITES"] = 67
    r = _requests(rec, "write", 1.0)
    assert r.small == 3 and r.exactly_1mib == 64            # 67 in the bin - 64 of exactly 1 MiB = 3 small
    rec["POSIX_SIZE_WRITE_0_100"] = 10
    rec["POSIX_ACCESS3_ACCESS"], rec["POSIX_ACCESS3_COUNT"] = 0, 10
    r = _requests(rec, "write", 1.0)
    assert r.small == 3 and r.zero == 10                     # zero-byte writes are not small either


# ----------------------------------------------------------------------------------------------------
# rules that no wheel log pays for at the default floor: with the floor lowered they must fire where the counters
# say so, and still not where they contradict it

def _no_floor(tmp_path, extra: str = "") -> str:
    p = tmp_path / "nofloor.toml"
    p.write_text("[SEVERITY]\nmin_seconds = 0.0\n" + extra)
    return str(p)


def test_imbalance_where_one_rank_has_the_data_straggler_where_bytes_agree(tmp_path):
    c = counters(_log("shane_macsio"))
    (p, pf), = [(p, pf) for rank, n, p, pf, _ in c["POSIX"] if n.endswith("macsio-log.log")]
    total = p["POSIX_BYTES_WRITTEN"]                         # 145,664 bytes over 16 ranks: mean 9,104
    assert p["POSIX_SLOWEST_RANK_BYTES"] == 139904 and p["POSIX_FASTEST_RANK_BYTES"] == 384
    assert p["POSIX_SLOWEST_RANK_BYTES"] / (total / 16) > 1.1 and p["POSIX_SLOWEST_RANK_BYTES"] < 0.99 * total
    t = _no_floor(tmp_path, "[IMB001]\nmin_bytes = 0\nmin_seconds = 0.0\n[STRAG001]\nmin_bytes = 0\nmin_seconds = 0.0\n")
    _, found = diag(_log("shane_macsio"), thresholds=t)
    imb = found["IMB001"]
    assert imb.evidence["file"].endswith("macsio-log.log") and imb.evidence["slowest_bytes"] == 139904
    assert imb.severity == "info"                            # 0.0002 s: worth nothing, and says so
    # the HDF5 file's MPI-IO ranks moved 738,048 and 738,168 bytes (0.02% apart): never an imbalance
    (_, _, m, _, _), = c["MPI-IO"]
    assert abs(m["MPIIO_SLOWEST_RANK_BYTES"] - m["MPIIO_FASTEST_RANK_BYTES"]) / m["MPIIO_FASTEST_RANK_BYTES"] < 0.001
    assert not imb.evidence["file"].endswith(".h5")
    _, ex = diag(_log("example.darshan"), thresholds=t)
    assert "IMB001" not in ex and "STRAG001" in ex          # equal bytes stay a straggler at any floor


def test_small_reads_of_a_single_process_get_buffering_advice_not_mpiio(tmp_path):
    c = counters(_log("dxt.darshan"))
    regular = [(p, pf) for _, n, p, pf, _ in c["POSIX"] if not n.rsplit("/", 1)[-1].startswith("pipe_")]
    below = sum(p[f"POSIX_SIZE_READ_{b}"] for p, _ in regular
                for b in ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M"))
    zero_or_1m = sum(p[f"POSIX_ACCESS{i}_COUNT"] for p, _ in regular for i in range(1, 5)
                     if p[f"POSIX_ACCESS{i}_ACCESS"] in (0, MIB))
    # no zero-byte or 1 MiB common sizes; but one record read once and moved 0 bytes (POSIX_READS - BYTES_READ
    # = 1 - 0): that read returned nothing, so 6,057 - 1 = 6,056 are small
    empty = sum(max(0, p["POSIX_READS"] - p["POSIX_BYTES_READ"]) for p, _ in regular)
    assert zero_or_1m == 0 and below == 6057 and empty == 1
    _, found = diag(_log("dxt.darshan"), thresholds=_no_floor(tmp_path))
    size = found["SIZE001"]
    assert size.evidence["small_reads"] == below - empty and size.severity == "info"   # 0.43 s of a 1,469 s run
    assert "Buffer" in size.message and "MPI" not in size.message and "collective" not in size.message


def test_few_osts_only_with_an_exact_count(tmp_path):
    """example.darshan's file spans OSTs 0-23: 24 of at least 24 by the log (no finding), 24 of 68 with a center
    that has 68 OSTs (LUS003, the count named as the center's)."""
    from ioadvisor.diagnose.rules import Context
    d, found = diag(_log("example.darshan"))
    assert d.summary.fs_ost_count_at_least == 24 and "LUS003" not in found
    (f,) = [x for x in run_rules(d.summary, ctx=Context(center_ost_count=68, center_name="X")) if x.id == "LUS003"]
    assert f.evidence["osts_used"] == 24 and f.evidence["fs_ost_count_exact"] and "24 of 68" in f.message


def test_no_special_file_name_escapes_the_quick_test_of_its_first_letter():
    """special_kind answers "" at once for a name whose first character is none of _SPECIAL_FIRST; that must
    never hide a fifo, pipe or socket the name pattern matches. Over every Unicode code point: if the pattern
    matches that character followed by the rest of one of its words (case ignored, as `re` ignores it: the long
    s U+017F matches s), the character is in _SPECIAL_FIRST; and names whose first letter passes are still told
    apart by the pattern."""
    from ioadvisor.darshanlog.derive import _SPECIAL_FIRST, _SPECIAL_NAME, special_kind
    for cp in range(0x110000):
        ch = chr(cp)
        if any(_SPECIAL_NAME.match(ch + rest) for rest in ("ifo", "ipe", "ock", "ocket")):
            assert ch in _SPECIAL_FIRST, hex(cp)
    assert [special_kind(f"/run/{n}") for n in ("Socket_1", "FIFO.0", "pipe:[12]", "results.h5", "")] == [
        "socket", "fifo", "pipe", "", ""]
