"""Center configurations: loading by name or file, validation errors, derivation from runs."""
from __future__ import annotations

import pytest

from ioadvisor.center import center_from_runs, load_center, resolve_center
from ioadvisor.errors import ConfigError, UsageError
from ioadvisor.kb import KB, RunFilter


@pytest.mark.parametrize("spec", ["TSUBAME3.0", "tsubame3", "Tsubame3.0"])
def test_load_by_name_or_stem(spec):
    c = load_center(spec)
    assert c.name == "TSUBAME3.0"
    lustre = c.filesystem("lustre")
    assert lustre.ost_count == 68 and lustre.default_stripe_size == 1 << 20 and lustre.default_stripe_count == 1
    assert c.tier("beeond").filesystem == "beeond"


def test_every_shipped_center_loads():
    names = {load_center(n).name for n in ("ha8000", "dell-ee-lustre-2.1", "dell-ee-lustre-2.3", "pixstor-nvme")}
    assert names == {"HA8000", "Dell-EE-Lustre-2.1", "Dell-EE-Lustre-2.3", "PixStor-NVMe"}


def test_unknown_key_names_file_and_key(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('name = "X"\n[[filesystems]]\nname = "lustre"\ntype = "lustre"\nost_cout = 4\n')
    with pytest.raises(ConfigError) as e:
        load_center(p)
    assert str(p) in str(e.value) and "filesystems[0].'ost_cout'" in str(e.value)


def test_bad_size_and_bad_toml(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('name = "X"\n[[filesystems]]\nname = "l"\ntype = "lustre"\ndefault_stripe_size = "4 bananas"\n')
    with pytest.raises(ConfigError, match="default_stripe_size"):
        load_center(p)
    p.write_text('name = "X\n')
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_center(p)


def test_tier_must_name_a_filesystem(tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('name = "X"\n[[filesystems]]\nname = "l"\ntype = "lustre"\n[[tiers]]\nname = "t"\nfilesystem = "nvme"\n')
    with pytest.raises(ConfigError, match="tiers\\[0\\].filesystem 'nvme'"):
        load_center(p)


@pytest.mark.parametrize("doc, line, message", [
    ('name = "X"\nfilesystems = ["lustre"]\n', 2, "filesystems[0] must be a table"),
    ('name = "X"\n[[filesystems]]\nname = "l"\n', 2, "missing key filesystems[0].type"),
    ('name = "X"\n[[filesystems]]\nname = "l"\ntype = "lustre"\n[[tiers]]\nname = "t"\n', 5,
     "missing key tiers[0].filesystem"),
    ('name = "X"\n[[filesystems]]\nname = "l"\ntype = "lustre"\n[[tiers]]\nname = "t"\nfilesystem = "l"\n'
     'size = 3\n', 8, "unknown key tiers[0].'size'"),
])
def test_array_tables_are_checked(tmp_path, doc, line, message):
    p = tmp_path / "c.toml"
    p.write_text(doc)
    with pytest.raises(ConfigError) as e:
        load_center(p)
    assert str(e.value).startswith(f"{p}:{line}: {message}")


def test_unknown_center_and_system():
    with pytest.raises(UsageError, match="unknown center"):
        load_center("no-such-center")
    with KB.open(None, create=False) as kb:
        with pytest.raises(UsageError, match="unknown system 'Nowhere'"):
            resolve_center("Nowhere", None, kb)


def test_center_derived_from_runs():
    with KB.open(None, create=False) as kb:
        runs = kb.runs(RunFilter(system="HA8000"))
    c = center_from_runs("HA8000", runs)
    assert {f.name for f in c.filesystems} >= {"lustre", "nfs", "hsfs"}
    assert c.filesystem("lustre").ost_count == 30 and c.filesystem("lustre").type == "lustre"
    assert c.filesystem("nfs").striping == "none"


class _Counted(str):
    """A name that counts the comparisons made with it. A set or dict compares a name only with one of equal
    hash; a count of each name in a list, or a search of a list, compares it with every other name."""
    compared = 0

    def __eq__(self, other: object) -> bool:
        _Counted.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_loading_compares_each_name_a_bounded_number_of_times():
    """Loading is linear in the tables: with n file systems and n tiers (each on its own file system) the names
    are compared a few times each (the checks of each value: 7 per tier and its file system), not n times each
    (3,000 of each: 18 million comparisons when every name was counted in the list of names, 4.5 million more
    when each tier's file system was looked up in a list)."""
    from ioadvisor.center import center_from_dict
    n = 3000
    data = {"name": "Big",
            "filesystems": [{"name": _Counted(f"fs{i}"), "type": "lustre", "mount": f"/fs{i}"} for i in range(n)],
            "tiers": [{"name": _Counted(f"t{i}"), "filesystem": _Counted(f"fs{i}")} for i in range(n)]}
    _Counted.compared = 0
    c = center_from_dict(data)
    assert len(c.filesystems) == n and len(c.tiers) == n and c.tiers[-1].filesystem == f"fs{n - 1}"
    assert _Counted.compared <= 10 * n, _Counted.compared


def test_a_repeated_name_is_named_at_its_second_table():
    from ioadvisor.center import center_from_dict
    tiers = [{"name": t, "filesystem": "lus"} for t in ("a", "b", "b", "a")]
    with pytest.raises(ConfigError, match=r"tier names must be unique, got 'b' twice") as e:
        center_from_dict({"name": "X", "filesystems": [{"name": "lus", "type": "lustre"}], "tiers": tiers})
    assert e.value.key == "tiers[2].name"


def test_a_center_spec_naming_a_pipe_or_a_device_is_refused_as_one(tmp_path, monkeypatch):
    """Not looked up as a center's name ("unknown center '/dev/null'"): said to be a device or a pipe. A
    directory of a center's name in the working directory does not hide the center."""
    import os
    monkeypatch.chdir(tmp_path)
    os.mkfifo("pipe")
    (tmp_path / "tsubame3").mkdir()
    for spec, what in (("/dev/null", "is a device"), ("pipe", "is a named pipe"), (str(tmp_path / "pipe"),
                                                                                      "is a named pipe")):
        with pytest.raises(ConfigError, match=f"^{spec}: {what}, not a regular file"):
            load_center(spec)
    assert load_center("tsubame3").name == "TSUBAME3.0"
