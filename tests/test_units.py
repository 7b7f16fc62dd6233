import pytest

from ioadvisor.errors import UsageError
from ioadvisor.model.units import convert, format_size, normalize, parse_size


@pytest.mark.parametrize("text,expected", [
    ("4096", 4096), ("4MiB", 4 << 20), ("2GiB", 2 << 30), ("1.5GB", 1_500_000_000), ("16m", 16 << 20),
    ("1k", 1024), ("64 KiB", 65536), (123, 123),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "4 parsecs", "MiB", "-4MiB", "1..2M"])
def test_parse_size_rejects(bad):
    with pytest.raises(UsageError):
        parse_size(bad)


def test_format_size_round_trips():
    for n in (1, 4096, 1 << 20, 3 << 30, 1536 * 1024):
        assert parse_size(format_size(n)) == n


def test_normalize_units():
    v, u = normalize(1000, "MB/s")
    assert v == pytest.approx(953.674, rel=1e-5) and u == "MiB/s"
    assert normalize(1, "GiB/s") == (1024.0, "MiB/s")
    assert normalize(5, "IOPS") == (5.0, "ops/s")
    assert convert(1, "GB/s", "MB/s") == pytest.approx(1000)
    with pytest.raises(UsageError):
        normalize(1, "furlongs/s")
    with pytest.raises(UsageError):
        convert(1, "MB/s", "IOPS")
