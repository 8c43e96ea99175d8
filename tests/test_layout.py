"""Where tests are, and what they are named (tests/README.md): each file is named after the
grader module it tests, with the module's folder as a prefix where two modules share a
name, or it is one of the suites the README lists; and no two files share a name."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGE = ROOT / "grader"


def every_test_file() -> list[Path]:
    """Every test file under tests/."""
    return sorted(TESTS.rglob("test_*.py"))


def suites() -> list[str]:
    """The suites tests/README.md lists, by their paths under tests/."""
    text = (TESTS / "README.md").read_text()
    listed = text.split("\n## Suites\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- `([\w/]+\.py)`", listed, re.MULTILINE)


def module_names() -> set[str]:
    """What a test may be named after: each module and package of grader/, alone and
    after the folder it sits in (judge_grading, cuda_protocol)."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name == "__main__.py":
            continue
        unit = path.parent if path.name == "__init__.py" else path.with_suffix("")
        names |= {unit.name, f"{unit.parent.name}_{unit.name}"}
    return names


def test_no_two_test_files_share_a_name():
    twice = [name for name, n in Counter(p.name for p in every_test_file()).items() if n > 1]
    assert not twice, f"test files of one name in two folders: {twice}"


def test_every_test_file_is_named_after_a_module_or_is_a_listed_suite():
    known = module_names()
    listed = set(suites())
    odd = [
        str(path.relative_to(TESTS))
        for path in every_test_file()
        if path.stem.removeprefix("test_") not in known
        and str(path.relative_to(TESTS)) not in listed
    ]
    assert not odd, f"named after no module of grader/ and not a suite in tests/README.md: {odd}"


def test_every_listed_suite_is_there_once():
    listed = suites()
    assert len(listed) == len(set(listed)), listed
    gone = [name for name in listed if not (TESTS / name).is_file()]
    assert not gone, f"tests/README.md lists suites that are not there: {gone}"
