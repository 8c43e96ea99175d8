"""Verdicts over a case's runs: two runs of one case that disagree are a likely race."""

from __future__ import annotations

import numpy as np

from grader.judge import cases
from grader.judge.compare import allowances, compare
from grader.judge.launch import layout
from grader.judge.verdict import unsteady
from grader.labs import get
from grader.model.launch import RunOutcome
from grader.model.result import Kind


def _case_run(data, again):
    lab = get("matmul-naive")
    case = cases.public_cases(lab)[0]
    inputs = cases.make_inputs(lab, case)
    expected = cases.expected_outputs(lab, case, inputs)["P"]
    tol = {name: a.tolerance for name, a in allowances(lab, case, inputs).items()}
    lay = layout(lab, lab.kernel.params[2], case.sizes)
    first = expected.astype(np.float32).reshape(-1)
    second = first.copy()
    data(first)
    again(second)
    comparisons = [compare("P", expected, lay.unpack(first), tol["P"])]
    outcome = RunOutcome(again={"P": second})
    return unsteady(comparisons, {"P": lay}, outcome, tol, "matmul")


def test_results_that_differ_between_runs_are_a_likely_race():
    def wrong_one(values):
        values[10] += 1.0

    [found] = _case_run(lambda v: None, wrong_one)
    assert found.kind == Kind.RACE and "--sanitize" in found.message
    assert "0 and 1 of the" in found.message


def test_the_same_wrong_result_twice_is_no_race():
    def wrong(values):
        values[3] = 0.0

    assert _case_run(wrong, wrong) == []
    assert _case_run(lambda v: None, lambda v: None) == []
