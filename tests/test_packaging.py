"""The wheel carries the reference data, so `pip install .` gives a working `ioadvise` outside the source tree."""
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_reference_data_and_console_script(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(ROOT)], check=True, cwd=tmp_path)
    wheel = next(tmp_path.glob("ioadvisor-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        entry = next(n for n in names if n.endswith("entry_points.txt"))
        assert "ioadvise = ioadvisor.console:main" in z.read(entry).decode()
    shipped = {Path(n).name for n in names if n.startswith("ioadvisor/_data/reference/")}
    expected = {p.name for p in (ROOT / "data" / "reference").glob("*.csv")}
    assert expected and expected <= shipped
    assert any(n.startswith("ioadvisor/_data/centers/") for n in names)


def test_python_m_ioadvisor_is_the_ioadvise_command(tmp_path):
    """`python -m ioadvisor` runs the same command as the `ioadvise` script: same output, same exit codes (0 for an
    answer, 2 for a bad option), where the script is not on PATH."""
    script = str(Path(sys.executable).parent / "ioadvise")
    for args, code in ((["--version"], 0), (["advise", "--nodes", "0"], 2)):
        a = subprocess.run([sys.executable, "-m", "ioadvisor", *args], capture_output=True, text=True, timeout=60)
        b = subprocess.run([script, *args], capture_output=True, text=True, timeout=60)
        assert (a.returncode, a.stdout) == (b.returncode, b.stdout) and a.returncode == code, (a, b)
