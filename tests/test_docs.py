"""The reference pages a course author works from are generated from the code they
describe (docs/build_reference.py): the committed pages must be what it writes now."""

from __future__ import annotations

import ast
import importlib.util
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
def test_the_readmes_sample_run_is_what_a_run_shows_now():
    spec = importlib.util.spec_from_file_location(
        "build_examples", ROOT / "docs" / "build_examples.py"
    )
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    readme = (ROOT / "README.md").read_text()
    run = examples.terminal_run(examples.device_of(readme))  # the README's machine named
    assert examples.with_run(readme, run) == readme, (
        "README.md's sample run is not what `grader check` shows now: run "
        "`python docs/build_examples.py readme`"
    )
