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
from grader.judge.grading import REFUSED
from grader.model.result import Kind, Status

BASELINE = (labs.get("matmul-naive").home / "baseline.cu").read_bytes()
SECRET = "agreement-secret"  # bench/agreement.py's


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


@pytest.mark.parametrize(
    ("lab", "name", "right"),
    [
        # the halo threads store 0 into the neighbouring blocks' outputs: right in the
        # cases of one block (GPU 0, CPU 0.727 on the H200 at main)
        ("conv2d", "halo_threads_store.cu", {"1x1-mask5", "3x2-mask7"}),
        # z*W*H + y*H + x: right where W = H (GPU 1.0, CPU 1.889 there)
        ("conv3d", "swapped_width_height.cu", {"16x16x16-mask5", "8x8x64-mask5", "1x1x1-mask5"}),
    ],
)
def test_a_race_between_blocks_fails_the_cases_it_shows_in_on_a_gpu(lab, name, right):
    """Blocks storing into one element: the CPU backend fails the cases it shows in and
    passes the rest; on a GPU, two runs of a case that differ fail that case alone once
    the CPU model found the blocks' race at the profile case (model_findings.placed), so
    the cases where no blocks overlap pass there too (every hidden case failed before)."""
    path = labs.get(lab).home / "wrong" / name
    graded = {
        backend: check(lab, path, Options(backend=backend, secret=SECRET, timing=False))
        for backend in ("cpu", "cuda")
    }
    passed = {backend: {c.name for c in r.cases if c.passed} for backend, r in graded.items()}
    print({backend: r.score for backend, r in graded.items()}, passed)
    assert passed["cpu"] == right
    assert passed["cuda"] >= passed["cpu"]
    said = [d.message for c in graded["cuda"].cases for d in c.diagnostics]
    assert any("both wrote" in m for m in said)  # the model's, at the profile case
    assert not any("showed a race" in m for m in said)  # no case told of another's race


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


@pytest.mark.parametrize("secret", [None, "a course secret"], ids=["public", "secret"])
@pytest.mark.parametrize(
    ("lab", "name", "line"),
    [
        ("reduction", "unsanitized_missing_sync.cu", 8),  # a race wearing no_sanitize_address
        ("reduction", "serial_builtin_copy.cu", 20),  # one thread's loads by __builtin_memcpy
        ("matmul-tiled", "asm_comment_shared.cu", 6),  # an asm whose text is a comment
        ("histogram", "asm_comment_atomics.cu", 7),
    ],
)
def test_a_file_the_grader_refuses_gets_the_cpu_backends_grade_on_a_gpu(lab, name, line, secret):
    """nvcc builds each file, and the GPU's cases may pass; the CPU model's build refuses
    the text with its line, and the GPU grading holds what the CPU backend's does: the
    refusal, once, no case graded, and no rule that measures the work counted as broken
    (timing waits for every case, so it does not run)."""
    path = labs.get(lab).home / "wrong" / name
    graded = {
        backend: check(lab, path, Options(backend=backend, secret=secret))
        for backend in ("cpu", "cuda")
    }
    on_cpu, on_gpu = graded["cpu"], graded["cuda"]
    assert on_gpu.score == on_cpu.score == 0 and on_gpu.performance is None
    assert on_gpu.status == on_cpu.status == Status.ERROR
    for result in (on_cpu, on_gpu):
        assert {(c.status, c.hint, len(c.diagnostics)) for c in result.cases} == {
            (Status.ERROR, REFUSED, 0)
        }
    assert [(d.kind, d.line) for d in on_gpu.diagnostics] == [
        (d.kind, d.line) for d in on_cpu.diagnostics
    ]
    [own] = [d for d in on_cpu.diagnostics if d.kind == Kind.COMPILE_ERROR]
    [refusal] = [d for d in on_gpu.diagnostics if d.refused]
    assert refusal.line == line and refusal.message.endswith(own.message)  # the CPU's sentence
