"""A result's score, split into points per case and for speed, for the gradebook's columns
and Gradescope's tests. The split follows grader.judge.scoring exactly, so the parts always add
up to the result's score: public and hidden cases share their lab's points equally, a
broken lab rule scales every case by the same factor and forfeits speed.

And a submission's standing, the one word that the gradebook's status column, the batch's
summary and its progress lines all say, so that their counts agree; and the one sentence
that a grading without the secret says of what its scores leave out."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from grader.judge import cases as casegen
from grader.judge import scoring
from grader.model.lab import Lab
from grader.model.result import CaseResult, Result, Status, Visibility

SPEED = "speed"


class Standing(StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # graded, with failures
    COMPILE_ERROR = "compile_error"  # graded, 0 points: it did not compile, or cannot launch
    NOT_GRADED = "not_graded"  # nothing judged the kernel: a person must look


def standing(result: Result) -> Standing:
    """Where the result leaves its submission. An error is graded when a compiler found it
    (Result.graded), as `grader check` says with exit code 1."""
    if result.status == Status.PASSED:
        return Standing.PASSED
    if result.status != Status.ERROR:
        return Standing.FAILED
    return Standing.COMPILE_ERROR if result.graded else Standing.NOT_GRADED


@dataclass(frozen=True)
class Part:
    name: str  # "public/<case>", "hidden/<case>" or "speed"
    points: float
    max_points: float
    case: CaseResult | None = None


def hidden_left_out(lab: Lab, hidden_run: bool) -> bool:
    """Whether a grading's scores leave hidden cases out: it had no secret, and the lab
    has them."""
    return not hidden_run and casegen.hidden_count(lab) > 0


def public_only(lab: Lab, how: str = "") -> str:
    """What a grading without the secret leaves out, in the words that a batch (its
    terminal, summary and refusal), a Gradescope zip and a student's CI all use."""
    return (
        f"Only public cases run{how}: the {lab.scoring.hidden:g} points of {lab.name}'s "
        f"{casegen.hidden_count(lab)} hidden cases are in no score and no max."
    )


def column(case: CaseResult) -> str:
    return f"{case.visibility}/{case.name}"


def correctness_max(lab: Lab, hidden_run: bool) -> float:
    return lab.scoring.public + (lab.scoring.hidden if hidden_run else 0.0)


def parts(lab: Lab, result: Result, hidden_run: bool) -> list[Part]:
    """Points of each case in the result's order, then speed when speed was graded.
    `hidden_run` says whether the grading had the secret: a result that stopped before
    its cases (a failed static check) has no hidden case to tell."""
    factor = scoring.REQUIREMENT_FACTOR if scoring.rule_broken(result) else 1.0
    weights = {Visibility.PUBLIC: lab.scoring.public, Visibility.HIDDEN: lab.scoring.hidden}
    counts = {v: sum(c.visibility == v for c in result.cases) for v in weights}
    out = []
    for case in result.cases:
        share = weights[case.visibility] / counts[case.visibility]
        out.append(Part(column(case), share * factor if case.passed else 0.0, share, case))
    speed_max = result.max_score - correctness_max(lab, hidden_run)
    if speed_max > 1e-9:
        perf = result.performance
        earned = perf.score if perf and not scoring.rule_broken(result) else 0.0
        out.append(Part(SPEED, earned, speed_max))
    return out
