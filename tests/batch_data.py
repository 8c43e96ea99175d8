"""Results of the real model for tests that need a grading's outcome without grading:
every case of the lab (public, and hidden with a secret), scored by grader.judge.scoring."""

from __future__ import annotations

from grader import labs
from grader.judge import cases as casegen
from grader.judge import scoring
from grader.model.result import (
    CaseResult,
    CompileInfo,
    Diagnostic,
    Kind,
    Mismatch,
    Performance,
    Result,
    Status,
)


def make_result(
    lab_name: str,
    failing: tuple[str, ...] = (),
    secret: str | None = None,
    speedup: float | None = None,
    rule_broken: bool = False,
    submission: str = "kernel.cu",
) -> Result:
    """A graded result in which the cases named in `failing` fail with a mismatch."""
    lab = labs.get(lab_name)
    names = {c.name for c in casegen.cases_for(lab, secret)}
    assert set(failing) <= names, f"no such case: {set(failing) - names}"
    cases = []
    for case in casegen.cases_for(lab, secret):
        bad = case.name in failing
        result = CaseResult(
            name=case.name,
            visibility=case.visibility,
            sizes=dict(case.sizes),
            status=Status.FAILED if bad else Status.PASSED,
        )
        if bad:
            result.mismatches = 3
            result.first_mismatch = Mismatch(index=(0, 1), expected=1.0, got=0.0)
            result.hint = "Only the last partial tile is wrong: check the bounds."
            result.diagnostics = [Diagnostic(Kind.OUT_OF_BOUNDS, "wrote past the end of P")]
        cases.append(result)
    performance = None
    if speedup is not None:
        points = lab.scoring.performance_points(speedup)
        performance = Performance(
            student_ms=0.5,
            reference_ms=0.5 * speedup,
            speedup=speedup,
            spread=0.01,
            score=points,
            max_score=3.0,
        )
    diagnostics = [Diagnostic(Kind.REQUIREMENT, "no shared memory")] if rule_broken else []
    score = scoring.total(
        lab.scoring, cases, bool(secret), performance, speedup is not None, rule_broken
    )
    failed = bool(failing) or rule_broken
    return Result(
        lab=lab.name,
        submission=submission,
        backend="cuda" if speedup is not None else "cpu",
        device="test data",
        status=Status.FAILED if failed else Status.PASSED,
        score=score.points,
        max_score=score.max_points,
        compile=CompileInfo(ok=True, log="ptxas info: 32 registers"),
        cases=cases,
        performance=performance,
        diagnostics=diagnostics,
        kernel=lab.kernel.name,
        grader_version="test",
        seconds=1.25,
    )
