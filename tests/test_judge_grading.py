"""What a whole grading says (grader.judge.grading), over plain results with no backend: a
race reaches the cases that may name the one it was found in, a checker's finding fails its
own case, speed waits on every case, and a submission not graded still adds up."""

from __future__ import annotations

import pytest

from grader import labs
from grader.judge import cases as casegen
from grader.judge import grading
from grader.model.result import (
    CaseResult,
    CompileInfo,
    Diagnostic,
    Kind,
    LaunchMacros,
    RaceScope,
    Result,
    Status,
    Visibility,
)

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


@pytest.mark.parametrize("scope", [RaceScope.CASE, RaceScope.STORES])
def test_a_race_of_one_case_fails_that_case_alone(scope):
    """Two blocks, or two threads of a block, storing into one element: the CPU backend's
    run of each case finds it where it happens (a GPU's model: test_model_findings.py)."""
    cases = [raced("p1", PUBLIC, scope), case("p2", PUBLIC)]
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


def hinted(name: str, visibility: Visibility, kind: str, hint: str) -> CaseResult:
    found = case(name, visibility, Status.FAILED)
    found.hint, found.hint_kind, found.mismatches = hint, kind, 12
    return found


def graded(cases: list[CaseResult], warnings: tuple[str, ...] = ()) -> Result:
    return Result(
        lab=LAB.name,
        submission="k.cu",
        backend="cpu",
        device="cpu",
        status=Status.FAILED,
        score=0.0,
        max_score=1.0,
        compile=CompileInfo(ok=True),
        cases=cases,
        launch=LaunchMacros(values={}, defined=[], warnings=list(warnings)),
    )


def test_a_case_a_launch_warning_explains_refers_to_it_rather_than_to_the_grid():
    warning = "Line 7 steps blockIdx.y by the number 32, but the grader's blocks cover 16. If"
    grid = hinted("w64", PUBLIC, "partly_unwritten", "Make sure the grid covers the output.")
    seams = hinted("w100", PUBLIC, "unwritten_pattern", "A pattern that repeats.")
    grading.cross_case_hints(LAB, graded([grid, seams], (warning,)))
    said = "The launch warning under Compile says why: Line 7 steps blockIdx.y by the number 32"
    assert grid.hint.startswith("12 elements are wrong.") and said in grid.hint
    assert "grid covers" not in grid.hint and grid.hint_kind == "launch_warning"
    assert seams.hint.startswith("A pattern that repeats.") and said in seams.hint


def test_a_case_whose_output_cannot_show_the_cause_points_at_the_one_that_does():
    seen = hinted("h1", HIDDEN, "read_before_set", "y is read before it is set (line 10).")
    empty = hinted("p1", PUBLIC, "nothing_written", "Nothing was written to y.")
    told = hinted("h2", HIDDEN, "nothing_written", "Nothing was written to y.")
    grading.cross_case_hints(LAB, graded([seen, empty, told]))
    assert empty.hint == "Nothing was written to y."  # a public case names no hidden one
    assert told.hint.startswith("12 elements are wrong. Case h1 shows why: the kernel reads")
    assert told.hint_kind == "read_before_set"


def test_a_race_a_run_did_not_locate_points_at_the_case_that_did():
    located = raced("p1", PUBLIC, RaceScope.EVERY_CASE)
    located.diagnostics[0].line = 18
    public, hidden = (raced(n, v, RaceScope.EVERY_CASE) for n, v in (("p2", PUBLIC), ("h", HIDDEN)))
    alone = raced("h2", HIDDEN, RaceScope.EVERY_CASE)
    grading.race_fails_every_case(LAB, [located, public, hidden])
    grading.race_fails_every_case(LAB, [alone])
    assert located.diagnostics[0].message == "a race"
    for case in (public, hidden):
        assert case.diagnostics[0].message == "a race Case p1 shows the line (see that case)."
    assert alone.diagnostics[0].message == "a race"


def test_two_runs_that_differed_fail_every_case_until_placed():
    """A GPU's race of two runs (RaceScope.RUNS) may be a block's: every case, unless the
    CPU model placed it among blocks (grader.judge.model_findings.placed)."""
    cases = [raced("p1", PUBLIC, RaceScope.RUNS), case("p2", PUBLIC), case("h", HIDDEN)]
    grading.race_fails_every_case(LAB, cases)
    assert all(c.status == Status.FAILED for c in cases)


def test_a_refused_build_leaves_no_case_graded():
    """The census build alone refuses a copy no hook sees; the cases its plain builds
    passed are not graded either: the file scores what one that does not compile does."""
    cases = [case("a", PUBLIC), case("b", PUBLIC, Status.ERROR), case("c", HIDDEN)]
    cases[2].diagnostics = [Diagnostic(Kind.NAN, "a NaN")]
    result = graded(cases)
    refusal = Diagnostic(Kind.COMPILE_ERROR, "k.cu:3: __builtin_memcpy ...", line=3, refused=True)
    result.diagnostics = [refusal]
    grading.conclude(LAB, result, hidden_run=True, speed_graded=False)
    assert [(c.name, c.status, c.hint, c.diagnostics) for c in result.cases] == [
        (name, Status.ERROR, grading.REFUSED, []) for name in "abc"
    ]
    assert result.score == 0 and result.status == Status.ERROR


def test_a_refusal_the_gpus_model_put_on_each_case_is_the_results_as_on_the_cpu():
    """On a GPU the CPU model's refusal fails each case (grader.judge.model_findings
    .refuse), and the profile it could not take counts the rules that measure the work as
    broken: concluded, the result holds the refusal once and no rule, as the CPU
    backend's does, and no case is graded."""
    refusal = Diagnostic(Kind.COMPILE_ERROR, "The model refused k.cu:3", line=3, refused=True)
    cases = [case("a", PUBLIC, Status.FAILED), case("b", HIDDEN, Status.FAILED)]
    for failed in cases:
        failed.diagnostics = [refusal]
    result = graded(cases)
    rule = Diagnostic(Kind.REQUIREMENT, "The rule counts as broken until that run ends.")
    result.diagnostics = [rule]
    grading.conclude(LAB, result, hidden_run=True, speed_graded=False)
    assert result.diagnostics == [refusal]
    assert [(c.status, c.hint, c.diagnostics) for c in result.cases] == 2 * [
        (Status.ERROR, grading.REFUSED, [])
    ]
    assert result.score == 0 and result.status == Status.ERROR


def test_a_compile_error_that_is_no_refusal_leaves_the_other_cases_graded():
    result = graded([case("a", PUBLIC), case("b", PUBLIC, Status.ERROR)])
    result.diagnostics = [Diagnostic(Kind.COMPILE_ERROR, "k.cu:3: no TILE_X", line=3)]
    grading.conclude(LAB, result, hidden_run=False, speed_graded=False)
    assert result.cases[0].passed and result.score > 0
