"""Lab roots on disk: a new lab made from a copy of another (`grader new-lab`), and the
part of a course's lab that travels with a Gradescope zip or a student's CI workflow.

A new lab gets what every lab needs, the source's definition, reference, baseline and
template, and of the rest of its folder only what the author names: the source's
known-wrong kernels (with their entries of wrong/EXPECTED.toml), variants and notes tell
of the source lab, and each would fail validate-lab once the definition changes. A copied
lab is renamed where its files name it as a lab (`grader check LAB`, `grader template
LAB`, "Lab `LAB`"), never in code: a lab's kernel may bear its name, and its definition
takes its name from its folder (grader.labs). Its README is not the source lab's: a
skeleton that states what validate-lab checks (grader.lab_readme)."""

from __future__ import annotations

import re
import shutil
import tomllib
from collections.abc import Sequence
from pathlib import Path

from grader import lab_readme, labs
from grader.errors import SetupError, UsageError
from grader.labs import EXPECTED, WRONG
from grader.model.lab import Lab

JUNK = shutil.ignore_patterns("__pycache__", "*.py[co]", ".*")
_TEXT = (".md", ".cu", ".cuh", ".toml", ".txt")
# Where a file names its lab as a lab, the name following one of these
_NAMED = r"(grader (?:check|template|validate-lab) |\bmy-|Lab `|Lab ){old}(?![\w-])"


NEEDED = (labs.DEFINITION, "reference.cu", "baseline.cu")  # what validate-lab grades of each
_HEADER = re.compile(r'^\[\s*"([^"]+)"')  # an EXPECTED.toml table of one kernel


def new_lab(name: str, source: str, into: Path, copies: Sequence[str] = ()) -> list[Path]:
    """Write a lab root at `into` (made if need be) holding lab `source` copied as `name`:
    NEEDED and the template, and the files of the source's folder that `copies` names
    (paths in it, a folder for all its files). Returns the two folders written."""
    lab = labs.get(source)
    if not labs.NAME.fullmatch(name):
        raise UsageError(
            f"{name!r} cannot name a lab: use lowercase letters, digits, - and _, starting "
            "with a letter or digit."
        )
    if name in labs.all_labs():
        raise UsageError(f"There is a lab named {name} already ({labs.get(name).home}).")
    chosen = [*NEEDED, *chosen_files(lab, copies)]
    into = Path(into)
    targets = [into / labs.REFERENCES / name, into / labs.TEMPLATES / name]
    for target in targets:
        if target.exists():
            raise UsageError(f"{target} exists already; nothing was written.")
    for relative in chosen:
        (targets[0] / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lab.home / relative, targets[0] / relative)
    wrong = {Path(r).name for r in chosen if Path(r).parent == Path(WRONG)}
    if wrong:
        table = expected_for(lab.home / WRONG / EXPECTED, wrong)
        (targets[0] / WRONG / EXPECTED).write_text(table, encoding="utf-8")
    shutil.copytree(lab.template_home, targets[1], ignore=JUNK)
    for target in targets:
        _rename(target, lab.name, name)
    lab_readme.write_skeleton(lab, name, targets[1])
    return targets


def _files(folder: Path) -> list[str]:
    """The files under `folder`, as paths relative to it, JUNK and links left out."""
    found = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        junk = any(part.startswith(".") or part == "__pycache__" for part in relative.parts)
        if path.is_file() and not path.is_symlink() and not junk and path.suffix != ".pyc":
            found.append(relative.as_posix())
    return sorted(found)


def chosen_files(lab: Lab, copies: Sequence[str]) -> list[str]:
    """The files of `lab`'s folder that `copies` names, beyond NEEDED; EXPECTED.toml is
    never one, since it is written for the known-wrong kernels copied."""
    every = _files(lab.home)
    found: dict[str, None] = {}
    for given in copies:
        relative = Path(given).as_posix().strip("/")
        if relative == f"{WRONG}/{EXPECTED}":
            raise UsageError(
                f"{EXPECTED} is written for the known-wrong kernels copied: name them "
                f"(--copy {WRONG}/KERNEL.cu) or their folder (--copy {WRONG})."
            )
        named = [f for f in every if f == relative or f.startswith(f"{relative}/")]
        if not named:
            listed = ", ".join(left_out(lab, ())) or "nothing"
            raise UsageError(
                f"The lab {lab.name} has no {given!r} to copy: it has {listed} besides "
                f"{', '.join(NEEDED)} and its template."
            )
        found.update(dict.fromkeys(f for f in named if f != f"{WRONG}/{EXPECTED}"))
    return [f for f in found if f not in NEEDED]


def left_out(lab: Lab, copies: Sequence[str]) -> list[str]:
    """What of `lab`'s folder a new lab made from it with `copies` does not get: each
    folder with how many of its files, then each file."""
    kept = {*NEEDED, *chosen_files(lab, copies), f"{WRONG}/{EXPECTED}"}
    rest = [f for f in _files(lab.home) if f not in kept]
    folders: dict[str, int] = {}
    for f in rest:
        if "/" in f:
            top = f.split("/", 1)[0]
            folders[top] = folders.get(top, 0) + 1
    files = [f for f in rest if "/" not in f]
    return [f"{top}/ ({n} file{'s' if n != 1 else ''})" for top, n in folders.items()] + files


def expected_for(table: Path, kernels: set[str]) -> str:
    """The entries of the EXPECTED.toml at `table` for `kernels` alone, with the comments
    written above or inside each, and the file's own comment on top."""
    full = table.read_text(encoding="utf-8")
    blocks: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in full.splitlines(keepends=True):
        header = _HEADER.match(line)
        if not header:
            blocks[-1][1].append(line)
            continue
        above = blocks[-1][1]
        carried = []
        while above and above[-1].lstrip().startswith("#"):
            carried.insert(0, above.pop())  # a comment right above a table is its own
        blocks.append((header[1], [*carried, line]))
    kept = "".join("".join(body) for kernel, body in blocks if kernel in (None, *kernels))
    wanted = {k: v for k, v in tomllib.loads(full).items() if k in kernels}
    if tomllib.loads(kept) != wanted:
        raise SetupError(
            f"{table} could not be cut down to the kernels copied: copy the whole folder "
            f"with --copy {WRONG}."
        )
    return kept


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
