"""Ship the top-level data/ directory inside the wheel as ioadvisor/_data (see resources.py)."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithData(build_py):
    def run(self):
        super().run()
        src = Path(__file__).parent / "data"
        dst = Path(self.build_lib) / "ioadvisor" / "_data"
        if src.is_dir():
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst)


setup(cmdclass={"build_py": BuildWithData})
