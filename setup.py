"""The build's one step beyond pyproject.toml: the labs' folders, which stay at the top of
the repository, are copied into the package as grader/lab_root/ (grader/paths.py reads
them there), so a wheel and `pip install .` carry the labs."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

LAB_FOLDERS = ("reference_kernels", "student_template")  # grader.paths.LAB_FOLDERS
LAB_ROOT = Path("grader") / "lab_root"  # grader.paths.PACKAGED_ROOT
JUNK = shutil.ignore_patterns("__pycache__", "*.py[co]", ".*")


class BuildWithLabs(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the labs from the checkout itself
        here = Path(__file__).resolve().parent
        for name in LAB_FOLDERS:
            target = Path(self.build_lib) / LAB_ROOT / name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(here / name, target, ignore=JUNK)


setup(cmdclass={"build_py": BuildWithLabs})
