"""A worker's outcome as a Result: the report it sent, checked, or, when there is none
or it cannot be trusted, a result that says why the submission could not be graded.

`grade_isolated` grades one submission this way, in one worker with the deadline and the
scrubbed environment of a batch; Gradescope's run_autograder uses it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from grader import machine
from grader.course.discover import Entry
from grader.course.pool import BackendInfo, Job, Outcome, Pool, WorkerSpec
from grader.errors import GraderError
from grader.files import readable
from grader.judge import cases as casegen
from grader.judge.grading import not_graded
from grader.model.lab import Lab
from grader.model.result import Kind, Result
from grader.report import json as json_report


def failure_result(
    lab: Lab,
    entry: Entry,
    reason: str,
    kind: Kind,
    backend: BackendInfo,
    secret: str | None,
    timing: bool,
) -> Result:
    """The result of a submission that could not be graded (judge.grading.not_graded)."""
    name = readable((entry.source or entry.origin).name)
    speed = timing and backend.speed
    cases = casegen.cases_for(lab, secret)
    return not_graded(
        lab, name, reason, kind, (backend.name, backend.device), cases, bool(secret), speed
    )


def result_of(outcome: Outcome, lab: Lab, entry: Entry) -> tuple[Result | None, str]:
    """The worker's report as a Result, or why it cannot be one (then it is not trusted)."""
    if outcome.report is None:
        return None, outcome.failure
    try:
        result = json_report.result_from_json(outcome.report)
    except (GraderError, KeyError, TypeError, ValueError):
        return None, "The grading worker sent a report that does not parse."
    if result.lab != lab.name or result.submission != readable((entry.source or entry.origin).name):
        return None, "The grading worker sent a report about another submission."
    return result, ""


def grade_isolated(
    lab: Lab,
    entry: Entry,
    *,
    backend: str,
    secret: str | None,
    timeout: float,
    timing: bool,
    submission_timeout: float,
) -> tuple[Result, str]:
    """Grade one submission in a worker of its own, with all the machine's cores. Returns
    the result and, when it could not be graded, why."""
    if entry.source is None:
        info = BackendInfo(backend)
        failed = failure_result(lab, entry, entry.problem, Kind.INTERFACE, info, secret, timing)
        return failed, entry.problem
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="grader-gates-") as gates:
        spec = WorkerSpec(
            lab=lab.name,
            backend=backend,
            backend_jobs=machine.cores(),
            timeout=timeout,
            timing=timing,
            secret=secret,
            gates=Path(gates),
            submission_timeout=submission_timeout,
        )
        pool = Pool(spec, 1, [])
        try:
            pool.run([Job(entry.id, entry.source)], outcomes.append)
        finally:
            pool.close()
    outcome = outcomes[0]
    result, reason = result_of(outcome, lab, entry)
    if result is None:
        result = failure_result(lab, entry, reason, outcome.kind, pool.backend, secret, timing)
    return result, reason
