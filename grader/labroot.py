"""Lab roots on disk: a new lab made from a copy of another (`grader new-lab`), and the
part of a course's lab that travels with a Gradescope zip or a student's CI workflow.

A copied lab is renamed where its files name it as a lab (`grader check LAB`, `grader
template LAB`, "Lab `LAB`"), never in code: a lab's kernel may bear its name,
and its definition takes its name from its folder (grader.labs). Its README is not the
source lab's: a skeleton that states what validate-lab checks (grader.lab_readme)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from grader import lab_readme, labs
from grader.errors import UsageError
from grader.model.lab import Lab

JUNK = shutil.ignore_patterns("__pycache__", "*.py[co]", ".*")
_TEXT = (".md", ".cu", ".cuh", ".toml", ".txt")
# Where a file names its lab as a lab, the name following one of these
_NAMED = r"(grader (?:check|template|validate-lab) |\bmy-|Lab `|Lab ){old}(?![\w-])"


def new_lab(name: str, source: str, into: Path) -> list[Path]:
    """Write a lab root at `into` (made if need be) holding lab `source` copied as `name`;
    returns the two folders written."""
    lab = labs.get(source)
    if not labs.NAME.fullmatch(name):
        raise UsageError(
            f"{name!r} cannot name a lab: use lowercase letters, digits, - and _, starting "
            "with a letter or digit."
        )
    if name in labs.all_labs():
        raise UsageError(f"There is a lab named {name} already ({labs.get(name).home}).")
    into = Path(into)
    targets = [into / labs.REFERENCES / name, into / labs.TEMPLATES / name]
    for target in targets:
        if target.exists():
            raise UsageError(f"{target} exists already; nothing was written.")
    for origin, target in zip((lab.home, lab.template_home), targets, strict=True):
        shutil.copytree(origin, target, ignore=JUNK)
        _rename(target, lab.name, name)
    lab_readme.write_skeleton(lab, name, targets[1])
    return targets


def _rename(folder: Path, old: str, new: str) -> None:
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.suffix not in _TEXT:
            continue
        text = path.read_text(encoding="utf-8")
        renamed = re.sub(_NAMED.format(old=re.escape(old)), rf"\g<1>{new}", text)
        if renamed != text:
            path.write_text(renamed, encoding="utf-8")


def portable(lab: Lab) -> bool:
    """Whether `lab` comes from a course's root (and must travel), not the grader's own."""
    return lab.home is not None and lab.home.parents[1] in labs.course_roots()


def export(lab: Lab, into: Path, kernels: tuple[str, ...] = ("reference.cu",)) -> list[Path]:
    """A lab root at `into` with what grading `lab` needs: its definition and the named
    kernels of its folder (the reference, to time against), never its known-wrong kernels
    or its baseline, which are a course's to keep. Returns the files written."""
    target = Path(into) / labs.REFERENCES / lab.name
    written = []
    for path in sorted(lab.home.iterdir()):
        if path.is_file() and (path.suffix == ".py" or path.name in kernels):
            target.mkdir(parents=True, exist_ok=True)
            written.append(Path(shutil.copyfile(path, target / path.name)))
    (Path(into) / labs.TEMPLATES / lab.name).mkdir(parents=True, exist_ok=True)
    return written
