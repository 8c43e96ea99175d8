"""A grading on a real GPU tells its steps to a status line, timing among them, grades a
file that is not UTF-8 as nvcc and PyCUDA read it (issue 33, items 4 and 7), and believes
what the CPU model's run of the profile case saw of the threads of each block, so that a
racy kernel gets the CPU backend's grade (issue 36, item 5); the batch's figures show that
run, and the model's census build, as a stage of their own."""

from __future__ import annotations

import time

import pytest

from grader import labs
from grader.course import stages
from grader.grading.pipeline import Options, check, grade
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


@pytest.mark.parametrize("secret", [None, "a course secret"], ids=["public", "secret"])
@pytest.mark.parametrize(
    ("lab", "name"),
    [
        ("matmul-tiled", "no_second_sync.cu"),  # a race in shared memory: 0 on cpu, 3 here
        ("reduction", "sync_inside_branch.cu"),  # a barrier inside an if: 0 on cpu, 7 here
        ("reduction", "syncwarp_inside_if.cu"),  # a __syncwarp() inside an if: passed here
    ],
)
def test_a_kernel_that_races_gets_the_cpu_backends_grade_on_a_gpu(lab, name, secret):
    path = labs.get(lab).home / "wrong" / name
    graded = {
        backend: check(lab, path, Options(backend=backend, secret=secret, timing=False))
        for backend in ("cpu", "cuda")
    }
    on_gpu = graded["cuda"]
    assert on_gpu.score == graded["cpu"].score == 0
    assert all(c.status == Status.FAILED for c in on_gpu.cases)
    said = [d.message for c in on_gpu.cases for d in c.diagnostics]
    assert any(m.startswith("The grader's CPU model ran this case too, and found: ") for m in said)


def test_a_gpu_gradings_cpu_model_is_a_stage_of_its_own(backend, tmp_path):
    """The CPU model's census build and profile run, which every GPU grading makes on the
    CPU, are the batch's "CPU model" stage (grader.course.stages), not its compiles or
    the rest of the grading."""
    path = tmp_path / "kernel.cu"
    path.write_bytes(BASELINE)
    clocked = stages.Clocked(backend)
    started = time.monotonic()
    options = Options(backend="cuda", timing=False)
    result = grade(labs.get("matmul-naive"), path, clocked, options)
    taken = clocked.take(graded=time.monotonic() - started)
    assert result.status == Status.PASSED, result.diagnostics
    assert taken[stages.CPU_MODEL] > 0, taken
    assert taken[stages.COMPILE] > 0 and taken[stages.CASES] > 0, taken
