"""The `template` verb: copying a lab's starting template for a student."""

from __future__ import annotations

import shutil
from pathlib import Path

from grader import labs
from grader.errors import SetupError, UsageError


def copy_template(lab: str, destination: Path, force: bool = False) -> list[Path]:
    """Copy the lab's student template into `destination` and return the files written.
    Refuses, before writing anything, when a file would be overwritten without `force`."""
    source = labs.get(lab).template_home  # an unknown lab is a UsageError listing the labs
    if not source.is_dir():
        raise SetupError(f"The template of {lab} is missing: {source} does not exist.")
    if destination.exists() and not destination.is_dir():
        raise UsageError(f"{destination} is a file; give a folder to copy the template into.")
    pairs = [(f, destination / f.relative_to(source)) for f in sorted(source.rglob("*"))]
    pairs = [(src, dst) for src, dst in pairs if src.is_file()]
    clashes = [str(dst) for _, dst in pairs if dst.exists()]
    if clashes and not force:
        raise UsageError(
            f"{', '.join(clashes)} already exist{'s' if len(clashes) == 1 else ''}; "
            "nothing was copied. Add --force to overwrite, or choose another folder."
        )
    for src, dst in pairs:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)  # contents only: an installed template may be read-only
    return [dst for _, dst in pairs]
