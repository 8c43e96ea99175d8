"""A grading on a real GPU tells its steps to a status line, timing among them, and
grades a file that is not UTF-8 as nvcc and PyCUDA read it (issue 33, items 4 and 7)."""

from __future__ import annotations

from grader import labs
from grader.grading.pipeline import Options, check
from grader.model.result import Status

BASELINE = (labs.get("matmul-naive").home / "baseline.cu").read_bytes()


def test_the_steps_of_a_timed_grading_reach_the_status_line(tmp_path):
    path = tmp_path / "kernel.cu"
    path.write_bytes(BASELINE)
    steps = []
    result = check("matmul-naive", path, Options(backend="cuda", progress=steps.append))
    assert result.status == Status.PASSED and result.performance is not None
    stages = [step.stage for step in steps]
    assert stages[:2] == ["backend", "compile"] and stages[-1] == "timing"
    assert steps[1].speed is True  # the status line drops the speed points from its story
    cases = [(s.index, s.total) for s in steps if s.stage == "case"]
    assert cases == [(i, len(result.cases)) for i in range(1, len(result.cases) + 1)]
    assert "speed" not in result.elsewhere  # speed is graded here


def test_a_latin1_comment_is_graded_on_a_gpu(tmp_path):
    path = tmp_path / "k.cu"
    path.write_bytes(b"// Gr\xf6\xdfe des Blocks\n" + BASELINE)
    result = check("matmul-naive", path, Options(backend="cuda", timing=False))
    assert result.status == Status.PASSED, result.diagnostics
    assert result.notes[0] == (
        "k.cu is not UTF-8 (byte 0xF6 at line 1): graded as it is; save it as UTF-8 to "
        "silence this."
    )
