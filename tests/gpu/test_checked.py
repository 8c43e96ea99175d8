"""On a real GPU: buffers flush against unmapped memory (out of bounds without the
sanitizer), two runs per case (a likely race), and checked timing (fresh inputs drawn on
the device, every timed output sampled, impossible speeds flagged)."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import gpu_kernels as k  # tests/gpu is on sys.path (pytest's rootdir-less import)
import numpy as np
import pytest

from grader import labs
from grader.backends.timing import (
    Sample,
    TimingCheck,
    drawn_values,
    launch_key,
    sample_counts,
    sample_elements,
    summarise,
)
from grader.grading.pipeline import Options, check
from grader.grading.timing import Expected, first_wrong, plan
from grader.judge import cases
from grader.judge.launch import at_launch, timing_launches
from grader.model.launch import POISON_BITS, Buffer, Drawn, Launch, Repeated, Scalar
from grader.model.launch import bits_as_float as as_float
from grader.model.result import Kind, Status
from grader.model.source import read_submission
from grader.validate import wrong_dir

ROOT = Path(__file__).resolve().parents[2]
CHEATS = wrong_dir("matmul-tiled")


def build(backend, text):
    built = backend.build(k.submission(text), {}, (16, 16, 1))
    assert built.ok, built.compile.log
    return built


def messages(outcome) -> str:
    return "\n".join(f"{d.kind}: {d.message}" for d in outcome.diagnostics)


# -- out of bounds without the sanitizer ---------------------------------------------------


def test_a_read_past_the_end_stops_the_kernel_and_names_the_buffer(backend):
    outcome = backend.run(build(backend, k.OUT_OF_BOUNDS_READ), k.matmul_launch(64), timeout=10)
    print(messages(outcome))
    assert outcome.crashed
    found = [d for d in outcome.diagnostics if d.kind == Kind.OUT_OF_BOUNDS]
    assert found, messages(outcome)
    assert any("past the end of M" in d.message or "past the end of N" in d.message for d in found)
    launch = k.matmul_launch(64)  # the next run gets a fresh worker and works
    done = backend.run(build(backend, k.NAIVE), launch, timeout=10)
    np.testing.assert_allclose(done.buffers["P"].data, k.expected_product(launch), atol=1e-4)


def test_a_read_before_the_start_names_the_buffer(backend):
    outcome = backend.run(build(backend, k.READ_BEFORE_START), k.matmul_launch(64), timeout=10)
    print(messages(outcome))
    found = [d for d in outcome.diagnostics if d.kind == Kind.OUT_OF_BOUNDS]
    assert found and any("before the start of N" in d.message for d in found), messages(outcome)


def test_a_correct_kernel_runs_twice_and_agrees(backend):
    launch = k.matmul_launch(517)
    outcome = backend.run(build(backend, k.TILED), launch, timeout=10)
    assert outcome.completed and outcome.diagnostics == []
    assert np.array_equal(outcome.again["P"], outcome.buffers["P"].data)


def test_two_runs_that_disagree_are_a_likely_race(tmp_path, backend):
    path = tmp_path / "drifts.cu"
    path.write_text(k.DRIFTS)
    result = check("matmul-naive", path, Options(backend="cuda", timing=False))
    races = [d for c in result.cases for d in c.diagnostics if d.kind == Kind.RACE]
    print("\n".join(d.message for d in races))
    # the clock differs between the CPU model's two runs of the profile case too, so its
    # finding may come first: either way the two runs' disagreement is what is reported
    gpu = [d.message for d in races if "Two runs of this case gave different results" in d.message]
    model = [d.message for d in races if "differs between two runs" in d.message]
    assert gpu or model, races
    assert all("--sanitize" in m for m in gpu)
    assert not any(c.passed for c in result.cases)  # a race fails every case


def test_shared_memory_no_thread_wrote_reads_the_same_fill_as_on_the_cpu(
    tmp_path, backend, gpu_alone
):
    """Left to itself a GPU's shared memory often holds zeros, which this kernel adds to
    right products: it would pass on the GPU and fail on the CPU. Alone, as a batch's runs
    are (grader.course.gpus): another process's kernel between the fill and the launch
    leaves zeros (3 points of 7 under pytest -n 4)."""
    path = tmp_path / "unwritten_shared.cu"
    path.write_text(k.UNWRITTEN_SHARED)
    scores = {
        name: check("matmul-naive", path, Options(backend=name, timing=False)).score
        for name in ("cuda", "cpu")
    }
    assert scores["cuda"] == scores["cpu"] == 0, scores


# -- checked timing --------------------------------------------------------------------------


def test_timing_draws_fresh_inputs_on_the_device_and_reads_the_sample_back(backend):
    width = 1024
    built = build(backend, k.COPY)
    poison = np.array([as_float(POISON_BITS)], np.float32)
    launch = Launch(
        "matmul",
        (math.ceil(width / 16), math.ceil(width / 16), 1),
        (16, 16, 1),
        0,
        [
            Buffer("M", Drawn(width * width), False),
            Buffer("N", Drawn(width * width), False),
            Buffer("P", Repeated(poison, width * width), True),
            Scalar("Width", "int", width),
        ],
        {},
    )
    sample = Sample("P", (width, width), (width, 1), sample_counts((width, width)))
    timing_check = TimingCheck(seed=1234, inputs=("M", "N"), outputs=("P",), samples=(sample,))
    timing = backend.time(built, built, (launch, launch), budget=2.0, check=timing_check)
    print(timing.note, timing.checked, timing.ceilings)
    assert timing.checked >= 3 and timing.samples["P"].shape == (timing.checked, 64 * 64)
    for n in range(timing.checked):
        flat = sample_elements(sample, timing_check.seed, n)
        drawn = drawn_values(launch_key(timing_check.seed, n, "M"), flat)
        assert np.array_equal(timing.samples["P"][n].view(np.uint32), drawn.view(np.uint32))
    first, second = timing.samples["P"][:2]
    assert not np.array_equal(first, second)  # every launch has its own inputs


def test_a_structure_the_host_drew_is_restored_before_every_timed_launch(backend):
    """spmv-csr's row_ptr and col_idx come from the host, once; a kernel that zeroes
    col_idx as it goes is right in every timed launch only if each starts from them."""
    lab = labs.get("spmv-csr")
    public = next(c for c in cases.public_cases(lab) if c.name == "power-law-1000x800")
    case, host = cases.timing_inputs(lab, 77, replace(public, name="timing"))
    student = backend.build(k.submission(k.CONSUMES_COL_IDX), {}, lab.launch_defaults)
    path = labs.get(lab.name).home / "reference.cu"
    reference = backend.build(read_submission(path)[0], {}, lab.launch_defaults)
    launches = timing_launches(lab, case, host, student.interface, reference.interface)
    sized = at_launch(lab, case, student.interface)
    timing_check = plan(lab, sized, 77, host)
    assert timing_check.restored == ("row_ptr", "col_idx")
    assert timing_check.inputs == ("values", "x")
    with Expected(lab, sized, timing_check, host) as expected:
        timing = backend.time(student, reference, launches, 1.0, timing_check)
        print(timing.note, timing.checked)
        assert timing.checked >= 3
        assert first_wrong(expected, timing) is None


def test_the_measured_ceilings_are_physical():
    ceilings = _ceilings()
    flops, copy = ceilings["flops"], ceilings["bytes"]
    print(f"fp32 peak {flops / 1e12:.1f} TFLOP/s, copy {copy / 1e9:.0f} GB/s")
    assert 5e12 < flops < 500e12 and 2e11 < copy < 2e13


# Another process keeps the GPU busy with matmuls until it is killed.
BUSY = f"""
import sys
sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}, {str(Path(__file__).parent)!r}]
import gpu_kernels as k
from grader.backends.cuda import CudaBackend
with CudaBackend() as cuda:
    built = cuda.build(k.submission(k.NAIVE), {{}}, (16, 16, 1))
    launch = k.matmul_launch(1024)
    cuda.run(built, launch, timeout=10)
    print("busy", flush=True)
    while True:
        cuda.run(built, launch, timeout=10)
"""


def _ceilings() -> dict:
    """Measured by a new worker (each measures once)."""
    from grader.backends.cuda import CudaBackend

    with CudaBackend() as fresh:
        built = build(fresh, k.COPY)
        pair = (k.matmul_launch(256), k.matmul_launch(256))
        return fresh.time(built, built, pair, budget=1.0).ceilings


def test_the_ceilings_hold_beside_another_process_on_the_gpu():
    """Two students' `grader check` on one GPU: the ceilings measured beside another
    process's kernels must not fall so far that an honest kernel looks impossibly fast."""
    alone = _ceilings()
    busy = subprocess.Popen([sys.executable, "-c", BUSY], stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline().strip() == "busy"
        beside = _ceilings()
    finally:
        busy.kill()
        busy.wait()
    print(f"alone {alone}, beside another process {beside}")
    for what in ("flops", "bytes"):
        assert beside[what] > 0.8 * alone[what], (what, alone, beside)


def _timed_grade(path: Path):
    return check("matmul-tiled", path, Options(backend="cuda", timing=True))


@pytest.mark.parametrize(
    "name,launch", [("skips_timed_size.cu", 1), ("remembers_first_launch.cu", 2)]
)
def test_a_kernel_that_skips_the_timed_work_earns_no_speed_points(name, launch, backend):
    result = _timed_grade(CHEATS / name)
    assert all(c.passed for c in result.cases)
    perf = result.performance
    assert perf is not None and perf.score == 0.0, perf
    found = [d.message for d in result.diagnostics if d.kind == Kind.TIMING]
    print("\n".join(found))
    wrong = found[0]  # then, for a kernel that skips all the work, an impossible speed
    assert "never wrote P[" in wrong and f"timed launch {launch} of" in wrong
    assert "Width=4096" in wrong and "Not scored" in perf.note
    assert result.status == Status.FAILED


def test_the_reference_times_at_one_with_every_launch_checked(backend):
    result = _timed_grade(labs.get("matmul-tiled").home / "reference.cu")
    perf = result.performance
    print(perf.speedup, perf.spread, perf.note)
    assert result.diagnostics == [] and result.status == Status.PASSED
    # what the grade rests on is the median, which timing goes on measuring until it is
    # known to 0.5 % however much other processes on the GPU spread the single ratios
    error = summarise(perf.student_samples, perf.reference_samples).error
    assert 0.97 < perf.speedup < 1.03 and error < 0.01
    assert "timed launches of the kernel ran on fresh random inputs" in perf.note
