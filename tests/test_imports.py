"""The grader package keeps its floors (tools/imports.py draws them from the imports): no
import climbs, no circle, few floors, and batch/ is a verb that only the CLI calls. The
pipeline schedules and the judge decides: the floors above take their verdicts from
judge/, and from grading/ only what runs a grading."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MOST_FLOORS = 10
PIPELINE_LINES = 500
# What course/, gradescope/, ci/ and batch/ may import from grading/: the entry points that
# run a grading, and its options.
GRADING_ENTRIES = {
    "grader.grading.pipeline.Options",
    "grader.grading.pipeline.check",
    "grader.grading.pipeline.grade",
    "grader.grading.pipeline.prepare",
}
ABOVE_GRADING = ("course", "gradescope", "ci", "batch")


def tool():
    spec = importlib.util.spec_from_file_location("imports_tool", ROOT / "tools" / "imports.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def house():
    return tool().read()


def test_no_import_climbs(house):
    climbs = [f"{i.source} -> {i.target} (line {i.line})" for i in house.climbing()]
    assert not climbs, f"imports that climb to a room at least as high: {', '.join(climbs)}"


def test_no_circle(house):
    circles = house.circles()
    assert not circles, f"modules that import one another round: {circles}"


def test_the_house_has_few_floors(house):
    floors = house.floors()
    assert max(floors.values()) + 1 <= MOST_FLOORS, tool().report(house)


def test_only_the_cli_calls_batch(house):
    assert house.importers("batch") == {"cli"}


def test_the_pipeline_is_a_scheduler_of_few_lines():
    lines = len((ROOT / "grader" / "grading" / "pipeline.py").read_text().splitlines())
    assert lines <= PIPELINE_LINES, f"grading/pipeline.py has {lines} lines: decisions go to judge/"


def from_grading(path: Path) -> list[str]:
    """Each name `path` imports from grader/grading/ (dotted, `module.name`), at its top
    or inside a function; a whole module imported counts as its dotted name."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names if a.name.startswith("grader.grading")]
        elif isinstance(node, ast.ImportFrom) and node.module == "grader":
            names += [f"grader.{a.name}" for a in node.names if a.name == "grading"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("grader.grading"):
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_the_floors_above_grading_take_only_its_entry_points():
    taken = [
        (path.relative_to(ROOT), name)
        for room in ABOVE_GRADING
        for path in sorted((ROOT / "grader" / room).rglob("*.py"))
        for name in from_grading(path)
    ]
    assert taken, "no import of grading/ found above it: course/ runs gradings"
    verdicts = [f"{path}: {name}" for path, name in taken if name not in GRADING_ENTRIES]
    assert not verdicts, f"imports from grading/ that are not a grading's entry: {verdicts}"


def test_from_grading_finds_every_spelling(tmp_path):
    path = tmp_path / "user.py"
    path.write_text(
        "import grader.grading.timing\n"
        "from grader import grading, labs\n"
        "def f():\n"
        "    from grader.grading.pipeline import grade, not_graded\n"
    )
    assert from_grading(path) == [
        "grader.grading.timing",
        "grader.grading",
        "grader.grading.pipeline.grade",
        "grader.grading.pipeline.not_graded",
    ]


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_tool_finds_a_climb_a_circle_and_the_floors(tmp_path):
    # low.py imports up into the `top` folder, another of whose modules imports low: the
    # rooms reach each other, and the import from the lower room climbs
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/base.py": "",
            "pkg/low.py": "import pkg.base\nfrom pkg.top import high\n",
            "pkg/top/__init__.py": "",
            "pkg/top/high.py": "",
            "pkg/top/user.py": "def f():\n    from pkg import low\n",
            "pkg/top/a.py": "from . import b\n",
            "pkg/top/b.py": "from .a import x\nfrom ..base import y\n",
        },
    )
    house = tool().read(tmp_path, "pkg")
    assert [(i.source, i.target) for i in house.climbing()] == [("pkg.low", "pkg.top.high")]
    assert house.circles() == [["pkg.top.a", "pkg.top.b"]]
    assert house.floors() == {"__init__": 0, "base": 0, "top": 2, "low": 1}
    assert house.importers("top") == {"low"}
