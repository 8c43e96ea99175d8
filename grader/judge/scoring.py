"""Points. Public and hidden cases each share their lab's points equally; speed earns its
points only when every case passed, on a GPU. A broken lab rule (a `requirement`
diagnostic, e.g. no shared memory in the tiled lab) halves the correctness points and
forfeits the speed points: the output may be right, but the lab was not done."""

from __future__ import annotations

from dataclasses import dataclass

from grader.model.lab import Scoring
from grader.model.result import CaseResult, Kind, Performance, Result, Visibility

REQUIREMENT_FACTOR = 0.5


@dataclass(kw_only=True)
class Score:
    points: float
    max_points: float


def _share(cases: list[CaseResult], points: float) -> float:
    if not cases:
        return 0.0
    return points * sum(c.passed for c in cases) / len(cases)


def correctness(scoring: Scoring, cases: list[CaseResult], hidden_run: bool) -> Score:
    public = [c for c in cases if c.visibility == Visibility.PUBLIC]
    hidden = [c for c in cases if c.visibility == Visibility.HIDDEN]
    points = _share(public, scoring.public)
    max_points = scoring.public
    if hidden_run:
        points += _share(hidden, scoring.hidden)
        max_points += scoring.hidden
    return Score(points=points, max_points=max_points)


def rule_broken(result: Result) -> bool:
    """Whether the result says a lab rule is broken (a requirement finding)."""
    return any(d.kind == Kind.REQUIREMENT for d in result.diagnostics)


def total(
    scoring: Scoring,
    cases: list[CaseResult],
    hidden_run: bool,
    performance: Performance | None,
    speed_graded: bool,
    rule_broken: bool,
) -> Score:
    score = correctness(scoring, cases, hidden_run)
    if rule_broken:
        score.points *= REQUIREMENT_FACTOR
    if speed_graded:
        score.max_points += scoring.performance
        if performance and not rule_broken:
            score.points += performance.score
    return score
