"""Verdicts over a case's runs: two runs of one case that disagree are a likely race, and
the hint of a case is drawn from what the run found, not from what the judge says of its
output."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grader.judge import cases
from grader.judge.compare import allowances, compare, sums
from grader.judge.hints import READ_BEFORE_SET_FIX
from grader.judge.launch import at_launch, layout, make_launch
from grader.judge.verdict import judge, unsteady
from grader.labs import get
from grader.model.interface import LAUNCH_MACROS, Interface
from grader.model.launch import BufferState, Build, RunOutcome
from grader.model.result import CompileInfo, Kind, RaceScope
from grader.model.source import Submission


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
    # a block's threads or blocks: the CPU model places it (model_findings.placed)
    assert found.race_scope == RaceScope.RUNS


def test_the_same_wrong_result_twice_is_no_race():
    def wrong(values):
        values[3] = 0.0

    assert _case_run(wrong, wrong) == []
    assert _case_run(lambda v: None, lambda v: None) == []


def test_an_output_all_nan_as_a_gpu_returns_it_is_told_with_an_output_read_first():
    """spmv-csr's y[row] += ... (wrong/adds_into_y.cu) on a GPU: its arithmetic makes a NaN
    of its own from the grader's poison, and the judge's own findings of that output (its
    NaN, its elements never written) are no cause the run found, so the hint still says
    what it saw and names y[i] += ... (they once silenced it)."""
    lab = get("spmv-csr")
    case = cases.public_cases(lab)[0]
    interface = Interface(launch=dict(zip(LAUNCH_MACROS, (256, 1, 1, 256, 1, 1), strict=True)))
    inputs = cases.make_inputs(lab, case)
    sized = at_launch(lab, case, interface)
    reference = sums(lab, sized, inputs)
    launch, layouts = make_launch(lab, case, inputs, interface)
    buffers = {b.name: BufferState(b.data.copy()) for b in launch.buffers()}
    buffers["y"].data[3:] = np.nan  # the GPU's NaN is not the poison: three rows kept it
    build = Build(Submission(Path("k.cu"), ""), {}, CompileInfo(ok=True), interface)
    outcome = RunOutcome(buffers=buffers)
    found = judge(lab, case, sized, inputs, reference, launch, layouts, outcome, build)
    assert {Kind.NAN, Kind.UNWRITTEN_OUTPUT} <= {d.kind for d in found.diagnostics}
    assert found.hint_kind == "all_nan" and "Every element of y is NaN" in found.hint
    assert READ_BEFORE_SET_FIX in found.hint and "skipped by a condition" not in found.hint
