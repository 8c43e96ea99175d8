"""The reference pages a course author works from are generated from the code they
describe (docs/build_reference.py): the committed pages must be what it writes now. The
README is a short front page whose guides in docs/ hold what it once did, and every
relative link among them reaches its file and heading."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def builder():
    spec = importlib.util.spec_from_file_location(
        "build_reference", ROOT / "docs" / "build_reference.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("page", ["lab-model.md", "expected-toml.md"])
def test_the_committed_page_is_what_the_code_says(page):
    build = builder()
    written = getattr(build, build.PAGES[page])()
    assert (ROOT / "docs" / page).read_text() == written, (
        f"docs/{page} has drifted from the code: run python docs/build_reference.py"
    )


def test_the_lab_model_page_documents_every_field_of_every_class():
    from dataclasses import fields

    from grader.model import lab

    page = (ROOT / "docs" / "lab-model.md").read_text()
    for cls in (lab.Lab, lab.Kernel, lab.Param, lab.Array, lab.Case, lab.Sampler):
        assert f"## `{cls.__name__}`" in page
        for field in fields(cls):
            assert f"| `{field.name}` |" in page, f"{cls.__name__}.{field.name}"
    assert "| `strayed(fault: Fault) -> dict[str, str]` |" in page
    assert "- `FAULT_HINTS`: `lax_bounds_check`, `partial_tile_fault`" in page


def test_an_undocumented_field_stops_the_page():
    build = builder()
    source = "class Thing:\n    documented: int\n    '''Yes.'''\n    bare: str\n"

    with pytest.raises(build.Undocumented, match=r"Thing\.bare has no documentation"):
        build._fields(source, ast.parse(source).body[0])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a run on the CPU backend")
def test_the_student_guides_sample_run_is_what_a_run_shows_now():
    spec = importlib.util.spec_from_file_location(
        "build_examples", ROOT / "docs" / "build_examples.py"
    )
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    guide = examples.GUIDE.read_text()
    run = examples.terminal_run(examples.device_of(guide))  # the guide's machine named
    assert examples.with_run(guide, run) == guide, (
        "docs/student.md's sample run is not what `grader check` shows now: run "
        "`python docs/build_examples.py student`"
    )


# Each guide's sections, which links reach: the README's (moved in issue 33), and the figures.
MOVED = {
    "student.md": [
        "For a student",
        "What a report looks like",
        "The labs",
        "The launch convention",
        "Scoring",
        "Why this speed",
        "Without a GPU: the CPU backend",
        "On a GPU: timing and `--sanitize`",
    ],
    "ta.md": [
        "Grading a course (for TAs)",
        "Course settings: `grader.toml` or `[tool.grader]`",
        "Batch grading",
        "Resuming",
        "Several machines: shards, merge and Slurm",
        "Gradescope",
        "GitHub Classroom and CI",
    ],
    "authoring.md": ["Adding a lab", "Lab rules, on each backend"],
    "precision.md": ["Cases, hidden cases and tolerance", "One grade, whichever backend"],
    "threat-model.md": ["Threat model"],
    "json-report.md": ["The JSON report"],
    "how-it-works.md": ["How it works"],
    "development.md": ["Development", "The build cache"],
    "performance.md": ["Measured figures", "The CPU backend", "On a GPU"],
}
LINK = re.compile(r"\]\(([^)\s]+)\)")


def headings(path: Path) -> list[str]:
    """The page's headings, outside indented code."""
    lines = path.read_text().splitlines()
    return [line.lstrip("#").strip() for line in lines if line.startswith("#")]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces made hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_readme_is_a_short_front_page():
    assert len((ROOT / "README.md").read_text().splitlines()) < 150


@pytest.mark.parametrize("guide", sorted(MOVED))
def test_each_guide_keeps_its_sections_and_the_readme_links_it(guide):
    assert f"](docs/{guide})" in (ROOT / "README.md").read_text(), f"README.md links no {guide}"
    found = headings(ROOT / "docs" / guide)
    lost = [heading for heading in MOVED[guide] if heading not in found]
    assert not lost, f"docs/{guide} lost the README's sections {lost}"


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_its_heading(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in {slug(h) for h in headings(file)}:
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, f"{page.name}: {broken}"


def test_anchors_follow_githubs_slug_rules():
    assert slug("On a GPU: timing and `--sanitize`") == "on-a-gpu-timing-and---sanitize"
    assert slug("Course settings: `grader.toml` or `[tool.grader]`") == (
        "course-settings-gradertoml-or-toolgrader"
    )
