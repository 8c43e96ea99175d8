"""Checked timing, the parts that need no GPU: the generator the device and the host
share, the sampled coordinates, each lab's sampler against its full reference, the
verdicts on wrong and impossible timings, the two-run race verdict, and the VMM layout."""

from __future__ import annotations

import subprocess
from dataclasses import replace

import numpy as np
import pytest
import terms_kit as tk
from lab_kit import default_interface

from grader import defaults
from grader.backends.cuda import helpers, vmm
from grader.backends.timing import (
    SAMPLE_ELEMENTS,
    WARMUPS,
    Sample,
    TimingCheck,
    drawn_array,
    drawn_elements,
    drawn_values,
    launch_key,
    sample_axes,
    sample_counts,
    sample_elements,
    sample_launch,
)
from grader.grading.timing import (
    FEWEST_CHECKED,
    GRADING_INPUTS,
    LAUNCH_INPUTS,
    SMALLEST_SAMPLE,
    Expected,
    draw_ahead,
    expected_sample,
    first_wrong,
    impossible,
    inputs_read,
    judge,
    plan,
    reached,
    sample_inputs,
)
from grader.judge import cases
from grader.judge.compare import allowances, compare
from grader.judge.launch import launch_sizes, layout
from grader.judge.verdict import unsteady
from grader.labs import all_labs, get
from grader.model.lab import Case
from grader.model.launch import RunOutcome, Timing
from grader.model.result import Kind
from grader.toolchain import nvcc

# -- the generator ----------------------------------------------------------------------


def test_drawn_values_are_signed_and_away_from_zero():
    values = drawn_values((12345, 678), np.arange(200_000))
    magnitude = np.abs(values)
    assert magnitude.min() >= 0.5 and magnitude.max() < 1.0
    assert 0.45 < np.mean(values > 0) < 0.55
    assert abs(float(np.mean(magnitude)) - 0.75) < 0.01


def test_drawn_values_depend_on_the_key_and_not_on_how_they_are_asked_for():
    flat = np.arange(1000)
    one = drawn_values((1, 2), flat)
    assert np.array_equal(one[::7], drawn_values((1, 2), flat[::7]))
    assert np.mean(one == drawn_values((1, 3), flat)) < 0.01
    assert np.mean(one == drawn_values((2, 2), flat)) < 0.01


def test_every_launch_and_buffer_has_its_own_key():
    keys = {launch_key(99, n, name) for n in range(50) for name in ("M", "N")}
    assert len(keys) == 100
    assert launch_key(99, 3, "M") == launch_key(99, 3, "M")
    assert launch_key(98, 3, "M") != launch_key(99, 3, "M")


@pytest.mark.parametrize(
    "function,dtype",
    [("drawn_bits", np.float32), ("drawn_word", np.uint32), ("drawn_byte", np.uint8)],
)
def test_the_cuda_generator_draws_what_the_host_computes(tmp_path, function, dtype):
    """helpers.SOURCE compiled for the host by nvcc, against grader.backends.timing, for
    float32 buffers, 4-byte integer buffers and byte buffers."""
    compiler = nvcc.find()
    if compiler is None:
        pytest.skip("nvcc is not installed")
    indices = [0, 1, 2, 3, 5, 1000, 123456789, 0xFFFFFFFF]
    keys = [(0, 0), (0xDEADBEEF, 0x12345678), (7, 0xFFFFFFFF)]
    calls = "\n".join(
        f'    printf("%u\\n", (unsigned){function}({i}u, {k0}u, {k1}u));'
        for k0, k1 in keys
        for i in indices
    )
    program = helpers.SOURCE + "\n#include <cstdio>\nint main() {\n" + calls + "\n}\n"
    (tmp_path / "draw.cu").write_text(program)
    build = subprocess.run(
        [compiler, *helpers.options(), "-o", str(tmp_path / "draw"), str(tmp_path / "draw.cu")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    printed = subprocess.run([str(tmp_path / "draw")], capture_output=True, text=True, timeout=60)
    device = np.array([int(line) for line in printed.stdout.split()], np.uint32)
    host = np.concatenate([drawn_elements(k, np.array(indices), dtype) for k in keys])
    assert np.array_equal(device, host.view(f"u{host.itemsize}").astype(np.uint32))


def test_a_whole_buffer_is_its_elements():
    for dtype, size in ((np.uint8, 1031), (np.float32, 77), (np.int32, 12)):
        whole = drawn_array((3, 4), size, dtype)
        assert whole.dtype == dtype and whole.size == size
        assert np.array_equal(whole, drawn_elements((3, 4), np.arange(size), dtype))


# -- samples ----------------------------------------------------------------------------


def test_sample_counts_make_a_grid_of_about_four_thousand():
    assert sample_counts((4096, 4096)) == (64, 64)
    assert sample_counts((256, 256, 256)) == (16, 16, 16)
    assert sample_counts((3, 8192)) == (3, 1366)
    assert sample_counts((5, 7)) == (5, 7)
    assert np.prod(sample_counts((8188, 8188))) >= SAMPLE_ELEMENTS


def test_sampled_coordinates_hold_the_first_and_last_and_change_with_the_launch():
    sample = Sample("P", (500, 300), (300, 1), (40, 30))
    rows, cols = sample_axes(sample, 5, 0)
    assert rows[0] == 0 and rows[-1] == 499 and cols[0] == 0 and cols[-1] == 299
    assert len(np.unique(rows)) == 40 and len(np.unique(cols)) == 30
    assert np.all(np.diff(rows) > 0)
    again = sample_axes(sample, 5, 0)
    assert all(np.array_equal(a, b) for a, b in zip((rows, cols), again, strict=True))
    later = sample_axes(sample, 5, 1)
    assert not np.array_equal(rows, later[0])


def test_the_reference_reads_its_sample_where_no_student_launch_does():
    # else, in a round the reference runs first, the student's coordinates and the right
    # values there would be on the GPU before its launch
    sample = Sample("P", (2048, 2048), (2048, 1), sample_counts((2048, 2048)))
    launches = TimingCheck(seed=7).launches
    student = {sample_launch(True, n) for n in range(launches)}
    reference = {sample_launch(False, n) for n in range(launches)}
    assert student == set(range(launches)) and student.isdisjoint(reference)
    for n in range(3):
        mine = sample_elements(sample, 7, sample_launch(True, n))
        theirs = sample_elements(sample, 7, sample_launch(False, n))
        assert np.mean(np.isin(mine, theirs)) < 0.01


def test_sample_elements_step_over_the_pitch():
    sample = Sample("P", (2, 3, 4), (3 * 8, 8, 1), (2, 3, 4))
    flat = sample_elements(sample, 0, 0)
    want = [z * 24 + y * 8 + x for z in range(2) for y in range(3) for x in range(4)]
    assert flat.tolist() == want


def test_check_round_trips_through_json():
    check = plan(get("conv3d-pitched"), cases.timing_case(get("conv3d-pitched")), 3, {})
    assert TimingCheck.from_json(check.to_json()) == check
    assert check.inputs == ("N",) and check.outputs == ("P",)
    [sample] = check.samples
    assert sample.strides[1] == cases.timing_case(get("conv3d-pitched")).sizes["pitchP"] // 4


def test_the_inputs_drawn_ahead_are_those_of_the_seed_and_a_fresh_seed_each_time():
    lab = get("spmv-csr")  # the host draws its structure
    seed, case, host = draw_ahead(lab, 11).result()
    want_case, want_host = cases.timing_inputs(lab, 11)
    assert seed == 11 and case == want_case and host.keys() == want_host.keys()
    assert all(np.array_equal(host[name], want_host[name]) for name in host)
    assert draw_ahead(lab, None).result()[0] != draw_ahead(lab, None).result()[0]


@pytest.mark.parametrize("name", sorted(all_labs()))
def test_what_the_host_recomputes_per_launch_and_per_grading_is_bounded(name):
    """A sample reads at most LAUNCH_INPUTS inputs unless it is already the smallest, and
    the rounds times that at most GRADING_INPUTS unless they are FEWEST_CHECKED."""
    lab = get(name)
    case, host = cases.timing_inputs(lab, 7)
    case = replace(case, sizes=launch_sizes(lab, case.sizes, default_interface(lab)))
    check = plan(lab, case, 7, host)
    costs = [inputs_read(lab, case, s, 7, host) for s in check.samples]
    for sample, cost in zip(check.samples, costs, strict=True):
        assert cost <= LAUNCH_INPUTS or (np.prod(sample.counts) < 2 * SMALLEST_SAMPLE)
        assert np.prod(sample.counts) >= min(np.prod(sample.extents), 256)
    assert FEWEST_CHECKED <= check.rounds <= defaults.TIMING_MAX_ROUNDS
    assert check.rounds * sum(costs) <= GRADING_INPUTS or (check.rounds == FEWEST_CHECKED)
    assert check.launches == 1 + WARMUPS + check.rounds


# -- each lab's sampler against its whole reference --------------------------------------


def _drawn_inputs(lab, case, check, host, launch):
    """Every input as the GPU would draw it at `launch` (or the host drew it), in its
    logical shape."""
    out = dict(host)
    params = {p.array_name: p for k in lab.kernels for p in k.params if p.is_pointer}
    for name in check.inputs:
        lay = layout(lab, params[name], case.sizes)
        key = launch_key(check.seed, launch, name)
        out[name] = lay.unpack(drawn_array(key, lay.elements, lay.dtype))
    return out


def _small_case(lab, seed: int) -> tuple[Case, dict]:
    """The largest public case, timed as if it were the timing size, with the lab's
    default launch macros; and the inputs the host draws for it."""
    public = max(cases.public_cases(lab), key=lambda c: np.prod(lab.extent(c.sizes)))
    case, host = cases.timing_inputs(lab, seed, replace(public, name="timing"))
    return replace(case, sizes=launch_sizes(lab, case.sizes, default_interface(lab))), host


@pytest.mark.parametrize("name", sorted(all_labs()))
def test_the_sample_matches_the_whole_reference(name):
    lab = get(name)
    case, constants = _small_case(lab, 11)
    check = plan(lab, case, 11, constants)
    for launch in (0, 3):
        inputs = _drawn_inputs(lab, case, check, constants, launch)
        want = lab.reference({k: cases.widened(v) for k, v in inputs.items()}, case.sizes)
        whole = allowances(lab, case, inputs)
        for sample in check.samples:
            axes = sample_axes(sample, check.seed, launch)
            expected, allowed = expected_sample(lab, case, check, constants, sample, axes, launch)
            grid = np.ix_(*axes)
            np.testing.assert_allclose(expected, want[sample.buffer][grid], rtol=1e-12, atol=1e-12)
            want_allowed = whole[sample.buffer]
            np.testing.assert_allclose(allowed.tolerance, want_allowed.tolerance[grid], rtol=1e-12)
            if want_allowed.magnitude is not None:
                np.testing.assert_allclose(allowed.magnitude, want_allowed.magnitude[grid])


# -- verdicts ---------------------------------------------------------------------------


def _timing_of(lab, case, check, constants, launches, spoil=None) -> Timing:
    """A Timing whose samples are the right float32 values, spoiled by `spoil`."""
    samples = {}
    for sample in check.samples:
        rows = []
        for launch in range(launches):
            axes = sample_axes(sample, check.seed, launch)
            want, _ = expected_sample(lab, case, check, constants, sample, axes, launch)
            got = want.astype(np.float32).reshape(-1)
            if spoil is not None:
                spoil(launch, got)
            rows.append(got)
        samples[sample.buffer] = np.stack(rows)
    return Timing([1.0] * launches, [1.0] * launches, checked=launches, samples=samples)


def _verdict(verdict, lab, case, check, constants, *args, **kwargs):
    """`verdict` with expectations computed ahead in threads, as grading does."""
    with Expected(lab, case, check, constants) as expected:
        return verdict(expected, *args, **kwargs)


def _setup(name="matmul-tiled"):
    lab = get(name)
    case, host = _small_case(lab, 5)
    return lab, case, plan(lab, case, 5, host), host


def test_right_samples_pass():
    lab, case, check, constants = _setup("conv2d-wrap")
    timing = _timing_of(lab, case, check, constants, 4)
    assert _verdict(first_wrong, lab, case, check, constants, timing) is None


def test_a_wrong_element_in_one_launch_is_named_with_the_timed_size():
    lab, case, check, constants = _setup()

    def spoil(launch, got):
        if launch == 2:
            got[5] += 1.0

    timing = _timing_of(lab, case, check, constants, 4, spoil)
    found = _verdict(first_wrong, lab, case, check, constants, timing)
    assert found is not None and found.kind == Kind.TIMING
    axes = sample_axes(check.samples[0], check.seed, 2)
    index = np.unravel_index(5, [len(a) for a in axes])
    where = f"P[{int(axes[0][index[0]])}, {int(axes[1][index[1]])}]"
    assert where in found.message and "timed launch 3 of 4" in found.message
    assert "Width=4096" in found.message and "1 of" in found.message


def test_an_output_left_poisoned_was_never_written():
    lab, case, check, constants = _setup()

    def spoil(launch, got):
        got[:] = np.array([0x7FC0FFEE], np.uint32).view(np.float32)[0]

    timing = _timing_of(lab, case, check, constants, 3, spoil)
    found = _verdict(first_wrong, lab, case, check, constants, timing)
    assert "never wrote P[0, 0]" in found.message and "timed launch 1 of 3" in found.message


@pytest.mark.parametrize("bits,launch", [(10, 1), (7, 0)])  # TF32 or half; bfloat16
def test_a_launch_in_lower_precision_is_named_and_costs_the_speed_points(bits, launch):
    lab, case, check, constants = _setup()
    sample = check.samples[0]

    def lower(at, got):
        if at == launch:
            axes = sample_axes(sample, check.seed, at)
            values = sample_inputs(lab, case, check, constants, axes, at)
            rounded = {k: tk.rounded(v, bits) for k, v in values.items()}
            got[:] = lab.sampler.combine(case.sizes, rounded, axes)["P"].reshape(-1)

    timing = _timing_of(lab, case, check, constants, 3, lower)
    found = _verdict(first_wrong, lab, case, check, constants, timing)
    assert found is not None and found.kind == Kind.TIMING
    assert "less precise than float32" in found.message
    assert f"timed launch {launch + 1} of 3" in found.message and "Width=4096" in found.message


def test_a_time_beyond_the_ceiling_is_impossible():
    lab, case = get("matmul-tiled"), cases.timing_case(get("matmul-tiled"))
    flops, moved = lab.work(case.sizes)
    ceilings = {"flops": 60e12, "bytes": 4e12}
    fastest_ms = flops / ceilings["flops"] * 1e3
    assert impossible(lab, case, fastest_ms, ceilings) is None
    assert impossible(lab, case, fastest_ms / 1.19, ceilings) is None
    found = impossible(lab, case, fastest_ms / 1.3, ceilings)
    assert found is not None and found.kind == Kind.TIMING
    assert "60.0 TFLOP/s" in found.message and "Width=4096" in found.message
    assert impossible(lab, case, 0.0, ceilings) is not None


def test_a_memory_bound_time_is_held_against_the_copy_bandwidth():
    lab, case = get("conv2d"), cases.timing_case(get("conv2d"))
    _, moved = lab.work(case.sizes)
    ceilings = {"flops": 60e12, "bytes": 4e12}
    found = impossible(lab, case, moved / 6e12 * 1e3, ceilings)
    assert found is not None and "GB/s" in found.message
    assert impossible(lab, case, moved / 4.5e12 * 1e3, ceilings) is None


def test_judge_collects_both_verdicts():
    lab, case, check, constants = _setup()

    def spoil(launch, got):
        got[0] = 0.0

    timing = _timing_of(lab, case, check, constants, 2, spoil)
    timing.ceilings = {"flops": 1.0, "bytes": 1.0}  # below the reference's 1 ms: raised to it
    found = _verdict(judge, lab, case, check, constants, timing, student_ms=0.5, reference_ms=1.0)
    assert len(found) == 2 and all(d.kind == Kind.TIMING for d in found)
    right = _timing_of(lab, case, check, constants, 2)
    right.ceilings = timing.ceilings
    assert (
        _verdict(judge, lab, case, check, constants, right, student_ms=1.0, reference_ms=1.0) == []
    )


def test_a_ceiling_below_what_the_reference_reached_is_raised_to_it():
    """Seen on the H200 under four gradings at once: a fp32 ceiling measured at 30.4
    TFLOP/s, and the matmul-tiled reference at 36.6 called impossibly fast."""
    lab, case = get("matmul-tiled"), cases.timing_case(get("matmul-tiled"))
    flops, _ = lab.work(case.sizes)
    reference_ms = flops / 36.6e12 * 1e3
    contended = {"flops": 30.4e12, "bytes": 4e12}
    assert impossible(lab, case, reference_ms, contended) is not None
    raised = reached(lab, case, contended, reference_ms)
    assert raised["flops"] == pytest.approx(36.6e12) and raised["bytes"] == 4e12
    assert impossible(lab, case, reference_ms, raised) is None
    assert impossible(lab, case, reference_ms / 1.3, raised) is not None
    alone = {"flops": 62e12, "bytes": 4e12}
    assert reached(lab, case, alone, reference_ms) == alone


def test_expected_values_are_the_same_ahead_and_on_demand():
    lab, case, check, constants = _setup("conv3d")
    with Expected(lab, case, check, constants) as ahead:
        ahead.need(3)  # cancels what has not started past the third
        computed = [ahead.of(launch) for launch in (0, 5, check.launches + 1)]
    for launch, found in zip((0, 5, check.launches + 1), computed, strict=True):
        axes = sample_axes(check.samples[0], check.seed, launch)
        want = expected_sample(lab, case, check, constants, check.samples[0], axes, launch)
        (values, allowed), (want_values, want_allowed) = found[0], want
        assert np.array_equal(values, want_values)
        assert np.array_equal(allowed.tolerance, want_allowed.tolerance)
        assert np.array_equal(allowed.magnitude, want_allowed.magnitude)


# -- two runs that disagree --------------------------------------------------------------


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


# -- where buffers go -------------------------------------------------------------------

GRANULE = 2 << 20


@pytest.mark.parametrize("nbytes", [4, 1_069_156, GRANULE, 3 * GRANULE + 4, 64 << 20])
def test_vmm_layouts_put_one_end_flush_against_unmapped_memory(nbytes):
    start = vmm.layout(nbytes, vmm.START, GRANULE)
    end = vmm.layout(nbytes, vmm.END, GRANULE)
    roomy = vmm.layout(nbytes, vmm.ROOMY, GRANULE)
    for lay in (start, end, roomy):
        assert lay.mapped % GRANULE == 0 and lay.guard >= lay.mapped
        assert lay.reserved == lay.mapped + 2 * lay.guard
        assert lay.offset % 4 == 0
    assert start.slack_before == 0 and start.slack_after(nbytes) >= GRANULE
    assert end.slack_after(nbytes) == 0 and end.slack_before >= GRANULE
    assert roomy.slack_before >= GRANULE and roomy.slack_after(nbytes) >= GRANULE


def test_an_end_flush_buffer_keeps_the_alignment_its_size_allows():
    """A float4 buffer (size a multiple of 16) starts 16-byte aligned."""
    for nbytes in (16 * 517, 4096 * 4096 * 4, 48):
        offset = vmm.layout(nbytes, vmm.END, GRANULE).offset
        assert offset % 16 == 0


def test_vmm_structures_have_the_driver_s_sizes():
    import ctypes

    assert ctypes.sizeof(vmm._Properties) == 32
    assert ctypes.sizeof(vmm._AccessDesc) == 12
