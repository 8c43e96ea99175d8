"""The registry of labs: every lab folder of every lab root.

A lab root is a folder holding `reference_kernels/LAB/` and `student_template/LAB/`. A
lab is defined by `reference_kernels/LAB/lab.py`, which assigns `LAB` (a
grader.model.lab.Lab); the lab's name is its folder's. The grader's own labs form the
built-in root (grader.paths.builtin_root). A course adds roots of its own with `--labs
DIR`, which the CLI passes to `add_roots`, or with GRADER_LABS (folders separated as in
PATH). A definition is Python the course wrote, trusted like the grader; one that fails
to load is a setup error that names its file and line, which any use of the labs raises,
except `listing`, which `grader labs` shows: every lab that loads, and each that does not
with its error. Code a family of labs shares
(matmul, convolution) is a library in this package that definitions import."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import re
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from grader import paths
from grader.errors import SetupError, UsageError
from grader.suggest import did_you_mean

if TYPE_CHECKING:  # imported where a lab loads: `grader check` starts its GPU worker first
    from grader.model.lab import Lab

ENV = "GRADER_LABS"
DEFINITION = "lab.py"
WRONG, EXPECTED = "wrong", "EXPECTED.toml"  # known-wrong kernels, and the verdict of each
REFERENCES, TEMPLATES = paths.LAB_FOLDERS
NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")

_added: list[Path] = []  # roots from --labs, in the order given
_loaded: dict[tuple[Path, ...], Listing] = {}


@dataclasses.dataclass(frozen=True)
class Listing:
    """Every lab of the roots that loads, by name in name order, and why each other one
    does not (its folder and the sentence of its SetupError)."""

    labs: dict[str, Lab]
    broken: list[tuple[Path, str]]


def add_roots(roots, given: str = "--labs") -> None:
    """Add course lab roots (--labs, or what `given` names) for the rest of this process."""
    for root in roots:
        path = _root(Path(root), given)
        if path not in _added:
            _added.append(path)


def roots() -> list[Path]:
    """Every lab root: the built-in one, then those of GRADER_LABS, then those of --labs."""
    found = [paths.builtin_root()]
    env = [_root(Path(p), ENV) for p in os.environ.get(ENV, "").split(os.pathsep) if p]
    for root in [*env, *_added]:
        if root not in found:
            found.append(root)
    return found


def course_roots() -> list[Path]:
    """The roots other than the built-in one (what a worker or an autograder needs too)."""
    return roots()[1:]


def _root(path: Path, given: str) -> Path:
    path = path.expanduser().resolve()
    try:
        is_root = (path / REFERENCES).is_dir()
    except PermissionError:
        raise UsageError(
            f"{given} names {path}, which you may not read (permission denied)."
        ) from None
    if not is_root:
        raise UsageError(
            f"{given} names {path}, which is no lab root: a lab root holds "
            f"{REFERENCES}/LAB/{DEFINITION} and {TEMPLATES}/LAB/ for each of its labs "
            "(`grader new-lab` makes one)."
        )
    return path


def listing() -> Listing:
    """Every lab of every root that loads, and each that does not with why."""
    key = tuple(roots())
    if key not in _loaded:
        _loaded[key] = _load_roots(key)
    return _loaded[key]


def all_labs() -> dict[str, Lab]:
    """Every lab of every root, by name, in name order. Raises the SetupError of the
    first lab that does not load."""
    found = listing()
    if found.broken:
        raise SetupError(found.broken[0][1])
    return found.labs


def get(name: str) -> Lab:
    labs = all_labs()
    if name not in labs:
        guess = did_you_mean(name, labs)
        also = " `grader labs` lists them all." if guess else f" Labs: {', '.join(labs)}."
        raise UsageError(f"There is no lab named {name!r}.{guess}{also}")
    return labs[name]


def _load_roots(roots: tuple[Path, ...]) -> Listing:
    labs: dict[str, Lab] = {}
    homes: dict[str, Path] = {}
    broken: list[tuple[Path, str]] = []
    for root in roots:
        for home in sorted((root / REFERENCES).iterdir()):
            if not (home / DEFINITION).is_file():
                continue
            if home.name in homes:
                broken.append((home, (
                    f"Two lab roots define the lab {home.name}: {homes[home.name]} and "
                    f"{home}. Rename one of the two folders (in {REFERENCES}/ and {TEMPLATES}/)."
                )))  # fmt: skip
                continue
            homes[home.name] = home
            try:
                labs[home.name] = load(home)
            except SetupError as error:
                broken.append((home, str(error)))
    return Listing(dict(sorted(labs.items())), broken)


def load(home: Path) -> Lab:
    """The lab defined in `home`/lab.py, named after `home`."""
    from grader.model.lab import Lab

    path = home / DEFINITION
    if not NAME.fullmatch(home.name):
        raise SetupError(
            f"{home} is not a lab's name: a lab folder is named with lowercase letters, "
            "digits, - and _, starting with a letter or digit."
        )
    module_name = f"grader_lab_{hashlib.sha256(str(path).encode()).hexdigest()[:16]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses defined there look themselves up
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the course's Python: any error is the definition's
        sys.modules.pop(module_name, None)
        raise SetupError(
            f"The lab definition {path} could not be loaded{_line(error, path)}: "
            f"{type(error).__name__}: {error}{_moved(error)}"
        ) from None
    lab = getattr(module, "LAB", None)
    if not isinstance(lab, Lab):
        raise SetupError(
            f"The lab definition {path} must assign LAB, a grader.model.lab.Lab; "
            f"it {'has no LAB' if lab is None else f'assigns a {type(lab).__name__}'}."
        )
    return dataclasses.replace(lab, name=home.name, home=home)


# Modules a lab definition imports (docs/lab-model.md) that moved when the package was
# laid out in floors (issue 22): a course's older lab.py is told where they went.
MOVED = {
    "grader.labs.model": "grader.model.lab",
    "grader.hints": "grader.judge.hints",
    "grader.compare": "grader.judge.compare",
    "grader.cases": "grader.judge.cases",
    "grader.interface": "grader.model.interface",
    "grader.result": "grader.model.result",
    "grader.source": "grader.model.source",
}


def _moved(error: BaseException) -> str:
    new = MOVED.get(error.name) if isinstance(error, ModuleNotFoundError) else None
    return f". {error.name} is now {new}: import from there." if new else ""


def _line(error: BaseException, path: Path) -> str:
    """ " (line N)" of the definition where `error` happened, where it shows."""
    if isinstance(error, SyntaxError) and error.filename == str(path):
        return f" (line {error.lineno})"
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == str(path)]
    return f" (line {frames[-1].lineno})" if frames else ""
