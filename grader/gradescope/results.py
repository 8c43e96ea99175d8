"""Gradescope's results.json, from one Result.

The format is Gradescope's "Autograder Specifications", Output format:
https://gradescope-autograders.readthedocs.io/en/latest/specs/#output-format

- one test per case, worth its share of the lab's points; public cases are `visible`,
  hidden ones `after_due_date` (or `hidden`), so their inputs and verdicts stay out of
  sight until the deadline;
- the compile check as an informational test (a status and no points), always visible;
- `speed` as a test when speed was graded, and the speedup as a leaderboard entry when a
  GPU timed the kernel;
- "Why this speed" as an informational test (no points) where the kernel was profiled:
  its measures beside the reference's on the profile case, and the advice; visible, but
  where the secret made the profile case a hidden one, whose size its measures would
  tell, the test takes the hidden cases' visibility. The
  roofline comes from the timed run, which happens once every case passed, so it goes in
  the speed test, whose visibility is the hidden cases';
- a rule that measures the work, broken at a hidden profile case (graded with the
  secret, the rules are measured at a hidden case the file's text draws), is left out of
  the compile test and the public cases' points, which show what they would be with the
  rule kept: its finding and what it cost (half the correctness points, and speed) are
  a test of their own, "Rules measured at a hidden case", worth that cost below 0 and
  shown as the hidden cases are. Else whether the drawn case got the work would show
  before the due date, and a kernel that did it at one hidden size alone could be
  resubmitted with other comments until the draw landed there;
- `score` at the top level is the result's score, so the tests always add up to what the
  grader gave; `execution_time` is the grading's seconds. Where hidden cases ran, the
  top-level `visibility` is theirs and the top-level `output` gives the public cases'
  points alone: the total would tell how the hidden cases went. So would speed, which is
  measured once every case passes: its test takes the hidden cases' visibility too, and
  there is no leaderboard entry.

Every text is marked `"text"` format: compile logs and printf output are the student's
own words and must not render as HTML."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import grader
from grader import schema
from grader.course import points
from grader.judge import cases as casegen
from grader.judge import rules
from grader.judge.grading import SPEED_WAITS
from grader.model.lab import Lab
from grader.model.result import CaseResult, Diagnostic, Result, Status, Visibility
from grader.report import common, measures

VISIBILITIES = ("after_due_date", "hidden", "after_published")
OUTPUT_LINES = 60  # lines of a log or of printf output shown in one test
DIGITS = 4  # decimals of a test's points
UNIT = 10**DIGITS
TEXT = "text"


def _excerpt(text: str) -> str:
    lines, left_out = common.excerpt(text, OUTPUT_LINES)
    if left_out:
        lines.append(f"... ({left_out} more lines)")
    return "\n".join(lines)


def _compile_test(result: Result) -> dict[str, Any]:
    build = common.build_diagnostics(result)
    ok = result.compile.ok and not build
    lines = [common.diagnostic(d) for d in build]
    if result.compile.log.strip():
        lines += ["", _excerpt(result.compile.log)]
    return {
        "name": "Compile",
        "status": "passed" if ok else "failed",
        "output": "\n".join(lines).strip() or "The kernel compiled.",
        "output_format": TEXT,
        "visibility": "visible",
    }


def _case_output(case: CaseResult) -> str:
    lines = [f"sizes {common.sizes(case.sizes)}", f"status {case.status}"]
    if not case.passed:
        lines += common.case_details(case) or [common.case_summary(case)]
    if case.output:
        lines += ["", "printf output:", _excerpt(case.output)]
    return "\n".join(lines)


def maxima(parts: list[points.Part]) -> list[float]:
    """Each test's max_score in units of 10^-DIGITS, rounded so that they add up to exactly
    what the parts share (largest remainder): 3 points over 7 cases are five 0.4286 and
    two 0.4285, not seven 0.4286 that make 3.0002."""
    exact = [p.max_points * UNIT for p in parts]
    units = [math.floor(x + 1e-6) for x in exact]
    missing = round(sum(exact)) - sum(units)
    for i in sorted(range(len(exact)), key=lambda i: units[i] - exact[i])[:missing]:
        units[i] += 1
    return [u / UNIT for u in units]


def _scaled(part: points.Part, top: float) -> float:
    """The part's points on its test's rounded maximum `top`: full marks are `top`."""
    share = part.points / part.max_points if part.max_points else 0.0
    return round(top * share, DIGITS)


def _case_test(part: points.Part, top: float, visibility: str) -> dict[str, Any]:
    case = part.case
    return {
        "name": f"{case.visibility} case {case.name}",
        "score": _scaled(part, top),
        "max_score": top,
        "status": "passed" if case.passed else "failed",
        "output": _case_output(case),
        "output_format": TEXT,
        "visibility": "visible" if case.visibility == Visibility.PUBLIC else visibility,
    }


def _with_every_case(lab: Lab, result: Result, secret: str | None) -> Result:
    """The result with a not-run entry for each case it lacks (a failed static check stops
    grading before any case), so every case is a test worth its points."""
    have = {(c.visibility, c.name) for c in result.cases}
    why = common.build_diagnostics(result) or result.diagnostics
    hint = why[0].message if why else "The case was not run."
    missing = [
        CaseResult(
            name=c.name,
            visibility=c.visibility,
            sizes=dict(c.sizes),
            status=Status.ERROR,
            hint=hint,
        )
        for c in casegen.cases_for(lab, secret)
        if (c.visibility, c.name) not in have
    ]
    return replace(result, cases=[*result.cases, *missing]) if missing else result


def _speed_test(part: points.Part, top: float, result: Result, visibility: str) -> dict[str, Any]:
    perf = result.performance
    if perf and perf.speedup:
        text = (
            f"speedup {common.speedup(perf.speedup)} over the reference "
            f"({common.number(perf.student_ms)} ms against {common.number(perf.reference_ms)} ms)"
        )
    else:
        text = next((n for n in result.notes if "Speed" in n), "Speed was not measured.")
    if result.profile and result.profile.roofline:
        text += "\n" + measures.roofline(result.profile.roofline)
    return {
        "name": "Speed",
        "score": _scaled(part, top),
        "max_score": top,
        "output": text,
        "output_format": TEXT,
        "visibility": visibility,
    }


def _why_test(result: Result, hidden: str | None) -> dict[str, Any] | None:
    """Why this speed, from the profile case's measures, worth no points: visible, but
    where the profile case is a hidden one, shown as the hidden cases are (`hidden`): its
    measures would tell its size (a naive matmul's bytes per output element are
    8 * Width + 4), and a kernel that knew it could do the work there alone. The
    roofline, which only a timed run has, is left to the speed test."""
    if result.profile is None:
        return None
    why = replace(measures.section(result.profile), roofline=None)
    at_hidden = hidden is not None and result.profile.student.case == rules.HIDDEN_CASE
    return {
        "name": measures.TITLE,
        "output": "\n".join(why.lines()),
        "output_format": TEXT,
        "visibility": hidden if at_hidden else "visible",
    }


def _held_back(result: Result, hidden: str | None) -> list[Diagnostic]:
    """The rules that measure the work which the kernel broke at a hidden profile case,
    where the hidden cases' tests are out of sight (`hidden`): before the due date, a
    broken one in the compile test or in the public cases' halved points would tell
    whether the case the file's text drew got the work, and a kernel that did the work
    at one hidden size alone could be resubmitted with other comments until it did."""
    return [] if hidden is None else rules.broken_at_hidden_case(result)


def _rules_test(held: list[Diagnostic], score: float, visibility: str) -> dict[str, Any]:
    """The points the rules broken at a hidden case cost (`score`, not above 0: half the
    correctness points and the speed points), shown as the hidden cases are."""
    return {
        "name": "Rules measured at a hidden case",
        "score": score,
        "max_score": 0.0,
        "status": "failed",
        "output": "\n".join(common.diagnostic(d) for d in held),
        "output_format": TEXT,
        "visibility": visibility,
    }


SHOWN = {
    "after_due_date": "after the due date",
    "hidden": "to the course staff only",
    "after_published": "once the grades are published",
}


def _summary(result: Result, parts: list[points.Part], hidden: str | None) -> str:
    """The text above the tests. Where hidden cases ran and their tests are out of sight
    (`hidden`, their visibility), it gives the public cases' points alone: the total, or
    whether the grading passed, would tell how the hidden cases went, and a kernel made
    wrong from some size on, resubmitted, would find their sizes."""
    if hidden is None:
        head = f"{result.lab}: {common.score(result)} ({result.status})"
    else:
        public = [p for p in parts if p.case is not None and p.case.visibility == Visibility.PUBLIC]
        passed = sum(p.case.passed for p in public)
        got, top = sum(p.points for p in public), sum(p.max_points for p in public)
        head = (
            f"{result.lab}: public cases {passed} of {len(public)} passed, "
            f"{common.number(got)} of {common.number(top)} points; the hidden cases' "
            f"results, and the total, are shown {SHOWN[hidden]}"
        )
    lines = [f"{head}, backend {result.backend}"]
    lines += [common.diagnostic(d) for d in common.other_diagnostics(result)]
    lines += [n for n in result.notes if hidden is None or n != SPEED_WAITS]
    return "\n".join(lines)


def results_json(
    lab: Lab,
    result: Result,
    secret: str | None,
    seconds: float,
    hidden_visibility: str = VISIBILITIES[0],
) -> dict[str, Any]:
    """The results.json object for `result`, graded with `secret` (None: public cases only)
    in `seconds`."""
    result = common.printable_result(result)  # Gradescope's page obeys bidi overrides too
    full = _with_every_case(lab, result, secret)
    hidden = hidden_visibility if secret else None
    held = _held_back(full, hidden)
    shown = replace(full, diagnostics=[d for d in full.diagnostics if d not in held])
    tests = [_compile_test(shown)]
    parts = points.parts(lab, shown, hidden_run=bool(secret))
    for part, top in zip(parts, maxima(parts), strict=True):
        if part.case is not None:
            tests.append(_case_test(part, top, hidden_visibility))
        else:
            tests.append(_speed_test(part, top, full, hidden or "visible"))
    if held:
        left = round(result.score - sum(t["score"] for t in tests if "score" in t), DIGITS)
        tests.append(_rules_test(held, left, hidden_visibility))
    why = _why_test(full, hidden)
    if why:
        tests.append(why)
    data: dict[str, Any] = {
        "score": round(result.score, DIGITS),
        "execution_time": round(seconds, 2),
        "output": _summary(shown, parts, hidden),
        "output_format": TEXT,
        "test_output_format": TEXT,
        "test_name_format": TEXT,
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "schema_version": schema.version(schema.GRADESCOPE_EXTRA),
            "grader_version": grader.__version__,
            "backend": result.backend,
            "device": result.device,
            "status": str(result.status),
        },
    }
    if hidden is not None:  # the total score, which counts the hidden cases, stays hidden too
        data["visibility"] = hidden
    if result.performance and result.performance.speedup and hidden is None:
        data["leaderboard"] = [
            {"name": "Speedup", "value": round(result.performance.speedup, 3), "order": "desc"}
        ]
    return data
