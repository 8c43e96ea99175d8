"""Where the lab folders live: next to the package in a source checkout, or under
`<prefix>/share/cuda-lab-grader` when installed from a wheel."""

from __future__ import annotations

import sys
from pathlib import Path

from grader.errors import SetupError

_CANDIDATES = (
    Path(__file__).resolve().parents[1],
    Path(sys.prefix) / "share" / "cuda-lab-grader",
)


def _root_with(folder: str) -> Path:
    for root in _CANDIDATES:
        if (root / folder).is_dir():
            return root / folder
    raise SetupError(
        f"The grader's {folder}/ folder is missing. Install the grader from its source "
        "checkout (pip install -e .) so the labs' kernels come with it."
    )


def reference_dir(lab: str) -> Path:
    return _root_with("reference_kernels") / lab


def template_dir(lab: str) -> Path:
    return _root_with("student_template") / lab
