"""What a whole grading says (grader.judge.grading), over plain results with no backend: a
race reaches the cases that may name the one it was found in, a checker's finding fails its
own case, speed waits on every case, and a submission not graded still adds up."""

from __future__ import annotations

import pytest

from grader import labs
from grader.judge import cases as casegen
from grader.judge import grading
from grader.model.result import CaseResult, Diagnostic, Kind, RaceScope, Status, Visibility

PUBLIC, HIDDEN = Visibility.PUBLIC, Visibility.HIDDEN
LAB = labs.get("matmul-naive")


def case(name: str, visibility: Visibility, status: Status = Status.PASSED) -> CaseResult:
    return CaseResult(name=name, visibility=visibility, sizes={"Width": 1}, status=status)


def raced(name: str, visibility: Visibility, scope: RaceScope) -> CaseResult:
    found = case(name, visibility, Status.FAILED)
    found.diagnostics = [Diagnostic(Kind.RACE, "a race", kernel="matmul", race_scope=scope)]
    return found


@pytest.mark.parametrize(
    ("sight", "other", "may"),
    [
        (PUBLIC, PUBLIC, True),
        (PUBLIC, HIDDEN, False),
        (HIDDEN, PUBLIC, True),
        (HIDDEN, HIDDEN, True),
    ],
)
def test_a_public_case_names_public_cases_alone(sight, other, may):
    assert sight.may_name(other) is may


def test_a_race_in_a_hidden_case_fails_the_hidden_cases_alone():
    cases = [case("p", PUBLIC), raced("h1", HIDDEN, RaceScope.EVERY_CASE), case("h2", HIDDEN)]
    grading.race_fails_every_case(LAB, cases)
    assert [c.status for c in cases] == [Status.PASSED, Status.FAILED, Status.FAILED]
    [told] = cases[2].diagnostics
    assert told.message.startswith("Case h1 showed a race in matmul")
    assert told.race_scope == RaceScope.EVERY_CASE


def test_a_race_in_a_public_case_fails_every_case():
    cases = [raced("p1", PUBLIC, RaceScope.EVERY_CASE), case("p2", PUBLIC), case("h", HIDDEN)]
    grading.race_fails_every_case(LAB, cases)
    assert all(c.status == Status.FAILED for c in cases)


def test_a_race_of_one_case_fails_that_case_alone():
    cases = [raced("p1", PUBLIC, RaceScope.CASE), case("p2", PUBLIC)]
    grading.race_fails_every_case(LAB, cases)
    assert cases[1].passed and not cases[1].diagnostics


def test_a_checkers_finding_fails_its_case_once():
    passed, printed = case("p1", PUBLIC), case("p2", PUBLIC)
    found = Diagnostic(Kind.OUT_OF_BOUNDS, "read past the end of M")
    grading.add_findings(passed, [found])
    grading.add_findings(passed, [found])
    grading.add_findings(printed, [Diagnostic(Kind.OUTPUT, "a flood of printf output")])
    assert passed.status == Status.FAILED and passed.hint == grading.SANITIZER_FOUND
    assert passed.diagnostics == [found]
    assert printed.passed


def test_speed_waits_on_every_case():
    cases = [case("p", PUBLIC), case("h", HIDDEN, Status.FAILED)]
    assert grading.speed_unmeasured(cases, True, "cuda", True) == grading.SPEED_WAITS
    assert grading.speed_unmeasured(cases[:1], True, "cuda", True) is None
    assert "cpu backend" in grading.speed_unmeasured(cases[:1], True, "cpu", False)


def test_a_submission_not_graded_has_every_case_and_their_points():
    cases = casegen.cases_for(LAB, "a secret")
    result = grading.not_graded(
        LAB, "kernel.cu", "stopped", Kind.TIMEOUT, ("cpu", "CPU"), cases, True, False
    )
    assert [c.name for c in result.cases] == [c.name for c in cases]
    assert all(c.status == Status.ERROR and c.hint == "stopped" for c in result.cases)
    assert result.score == 0 and result.max_score == LAB.scoring.public + LAB.scoring.hidden
    assert grading.status(result) == Status.ERROR


@pytest.mark.parametrize(
    ("secret", "speed_graded", "elsewhere"),
    [
        (None, False, {"hidden": 4.0, "speed": 3.0}),  # a laptop: public cases only
        (None, True, {"hidden": 4.0}),  # a GPU without the secret
        ("a secret", False, {"speed": 3.0}),  # a TA's CPU batch
        ("a secret", True, {}),  # the course's own grading
    ],
)
def test_the_points_left_to_the_course_are_named(secret, speed_graded, elsewhere):
    cases = [case(c.name, c.visibility) for c in casegen.cases_for(LAB, secret)]
    result = grading.not_graded(
        LAB, "kernel.cu", "", Kind.TIMEOUT, ("cpu", "CPU"), [], bool(secret), speed_graded
    )
    result.cases, result.diagnostics = cases, []
    result.hidden_not_run = 0 if secret else casegen.hidden_count(LAB)
    grading.conclude(LAB, result, bool(secret), speed_graded)
    assert result.elsewhere == elsewhere
    assert result.max_score + sum(elsewhere.values()) == 10.0  # the lab's whole total
