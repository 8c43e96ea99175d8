"""Where the labs' folders live.

A lab root is a folder holding `reference_kernels/LAB/` and `student_template/LAB/`. The
grader's own labs form the built-in root: in a source checkout it is the checkout itself
(the two folders stay at the top of the repository), and in an installed grader it is
`lab_root/` inside this package, where the build (setup.py) copies both folders. A
course's roots come on top (grader.labs.roots)."""

from __future__ import annotations

from pathlib import Path

from grader.errors import SetupError

LAB_FOLDERS = ("reference_kernels", "student_template")
PACKAGED_ROOT = Path(__file__).resolve().parent / "lab_root"  # setup.py writes it
CHECKOUT_ROOT = Path(__file__).resolve().parents[1]


def _is_lab_root(folder: Path) -> bool:
    return all((folder / name).is_dir() for name in LAB_FOLDERS)


def builtin_root() -> Path:
    """The lab root that comes with the grader: its package's copy, else its checkout."""
    for root in (PACKAGED_ROOT, CHECKOUT_ROOT):
        if _is_lab_root(root):
            return root
    raise SetupError(
        f"The grader's own labs are missing: neither {PACKAGED_ROOT} nor {CHECKOUT_ROOT} "
        "holds reference_kernels/ and student_template/. Reinstall the grader from its "
        "source checkout (pip install .) or from a wheel built there."
    )
