"""What grading does with a checker's findings (--sanitize): each finding stays with the
case whose launch made it, and fails that case even when its numbers were right. The
checker here is a stand-in around the real CPU grading; the real compute-sanitizer runs
in the GPU tests (tests/gpu, and the known-wrong kernels of tests/test_pipeline.py)."""

from __future__ import annotations

import sys

import pytest

from grader import labs
from grader.backends.cpu import CpuBackend
from grader.grading.pipeline import Options, grade
from grader.judge.grading import SANITIZER_FOUND
from grader.model.launch import Scalar
from grader.model.result import Diagnostic, Kind, RaceScope, Status

if not sys.platform.startswith("linux"):
    pytest.skip("the CPU backend's sandbox needs Linux", allow_module_level=True)


def width(launch) -> int:
    return next(a.value for a in launch.args if isinstance(a, Scalar))


class FindsAt100(CpuBackend):
    """Reports an out-of-bounds read in every launch at Width 100."""

    def sanitize(self, build, launches, timeout):
        # one call for each build: the profile case has a build of its own on the CPU
        self.widths = [*getattr(self, "widths", []), *(width(launch) for launch in launches)]
        found = Diagnostic(Kind.OUT_OF_BOUNDS, "matmul read M[10000], past the end of M.")
        return [[found] if width(launch) == 100 else [] for launch in launches]


def test_a_finding_fails_only_the_case_it_was_found_in():
    lab = labs.get("matmul-naive")
    reference = labs.get(lab.name).home / "reference.cu"
    with FindsAt100() as backend:
        result = grade(lab, reference, backend, Options(backend="cpu", sanitize=True))
        assert backend.widths == [64, 100, 256]  # the public cases, smallest first
    status = {c.name: c.status for c in result.cases}
    assert status == {
        "width-64": Status.PASSED,
        "width-100": Status.FAILED,
        "width-256": Status.PASSED,
    }
    failed = next(c for c in result.cases if c.name == "width-100")
    assert failed.hint == SANITIZER_FOUND and [d.kind for d in failed.diagnostics] == [
        Kind.OUT_OF_BOUNDS
    ]
    assert result.status == Status.FAILED and result.score < result.max_score


class RaceAt100(FindsAt100):
    """Reports a race in every launch at Width 100."""

    def sanitize(self, build, launches, timeout):
        found = Diagnostic(
            Kind.RACE,
            "matmul read tile[0][1] while thread (1,0,0) wrote it.",
            race_scope=RaceScope.EVERY_CASE,
        )
        return [[found] if width(launch) == 100 else [] for launch in launches]


def test_a_race_in_one_case_fails_every_case_whatever_its_numbers():
    lab = labs.get("matmul-naive")
    reference = labs.get(lab.name).home / "reference.cu"
    with RaceAt100() as backend:
        result = grade(lab, reference, backend, Options(backend="cpu", sanitize=True))
    assert all(c.status == Status.FAILED for c in result.cases)
    assert result.score == 0 and result.performance is None
    other = next(c for c in result.cases if c.name == "width-64")
    [race] = other.diagnostics
    assert race.kind == Kind.RACE and "Case width-100 showed a race" in race.message
    assert "luck" in race.message


class BlocksOverlapAt100(FindsAt100):
    """Reports two blocks storing into one element at Width 100, as the CPU backend does."""

    def sanitize(self, build, launches, timeout):
        found = Diagnostic(
            Kind.RACE,
            "Blocks (0,1,0) and (1,1,0) both wrote P[5].",
            block=(1, 1, 0),
            race_scope=RaceScope.CASE,
        )
        return [[found] if width(launch) == 100 else [] for launch in launches]


def test_two_blocks_storing_into_one_element_fail_only_that_case():
    lab = labs.get("matmul-naive")
    reference = labs.get(lab.name).home / "reference.cu"
    with BlocksOverlapAt100() as backend:
        result = grade(lab, reference, backend, Options(backend="cpu", sanitize=True))
    assert [c.name for c in result.cases if not c.passed] == ["width-100"]
