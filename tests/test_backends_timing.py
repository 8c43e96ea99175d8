"""What the grader and the GPU worker share in timing, the parts that need no GPU: the
generator the device and the host share, the sampled coordinates, and the rounds (when
to stop, and their statistics)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from grader import defaults
from grader.backends import generator, timing
from grader.backends.cuda import helpers
from grader.backends.timing import (
    CHUNK,
    EVERY_SPEEDUP,
    SAMPLE_ELEMENTS,
    Plan,
    Sample,
    TimingCheck,
    drawn_array,
    drawn_elements,
    drawn_values,
    generator_macros,
    launch_key,
    sample_axes,
    sample_counts,
    sample_elements,
    sample_launch,
    summarise,
)
from grader.errors import SetupError
from grader.toolchain import cxx, nvcc

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


@pytest.mark.parametrize("count", [0, 1, 7, CHUNK - 1, 3 * CHUNK + 5])
def test_the_host_build_of_the_generator_draws_what_numpy_computes(count):
    """generator.h built with g++ (what a timing's check draws whole buffers with) against
    numpy's copy, across the chunks numpy hashes in."""
    for key in ((0, 0), (0xDEADBEEF, 0x12345678), (7, 0xFFFFFFFF)):
        built = generator.words(key, count, generator_macros())
        assert built is not None, "the host could not build generator.cpp"
        assert built.dtype == np.uint32
        assert np.array_equal(built, timing._hashed_stream(key, count))


def test_without_a_compiler_whole_buffers_come_from_numpy(monkeypatch):
    def missing():
        raise SetupError("no compiler")

    monkeypatch.setattr(cxx, "compiler", missing)
    generator._library.cache_clear()
    try:
        assert generator.words((3, 4), 10, generator_macros()) is None
        assert np.array_equal(drawn_array((3, 4), 10, np.uint32), timing._hashed_stream((3, 4), 10))
    finally:
        generator._library.cache_clear()


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


# -- the rounds -------------------------------------------------------------------------


def _spread(ratios: list[float]) -> float:
    """The spread summarise finds in rounds whose ratios are `ratios`."""
    return summarise([1.0] * len(ratios), ratios).spread


def test_spread_is_interquartile_range_over_median():
    assert _spread([1.0, 1.0, 1.0, 1.0, 1.0]) == 0.0
    values = [0.9, 1.0, 1.0, 1.0, 1.1, 1.0, 1.0, 1.0]
    q1, _, q3 = np.percentile(values, [25, 50, 75], method="weibull")
    assert _spread(values) == pytest.approx((q3 - q1) / 1.0)
    assert _spread([1.0, 1.2]) == pytest.approx(0.2 / 1.1)
    assert _spread([]) == float("inf")


def test_speedup_is_median_of_per_round_ratios():
    assert summarise([2.0, 2.0, 4.0], [1.0, 1.0, 1.0]).speedup == 0.5
    assert summarise([], []).speedup == 0.0


def test_a_round_with_no_student_time_has_no_ratio():
    summary = summarise([0.0, 2.0, 1.0], [1.0, 1.0, 1.0])
    assert summary.rounds == 2 and summary.speedup == 0.75
    nothing = summarise([0.0, 0.0], [1.0, 1.0])
    assert nothing.rounds == 0 and nothing.error == float("inf")


def test_plan_stops_on_a_precise_median_only_after_the_minimum_rounds():
    plan = Plan(budget_s=10, target_error=0.005, min_rounds=5, max_rounds=50)
    steady = [1.0] * 4
    assert plan.stop_reason(steady, steady, elapsed_s=0.1, round_s=0.01) is None
    steady = [1.0] * 5
    assert "known" in plan.stop_reason(steady, steady, elapsed_s=0.1, round_s=0.01)


def test_a_noisier_speedup_takes_more_rounds_to_stop():
    """Ratios spread by 1.7 % (spmv-csr on an H200) need about ten rounds for a median
    known to 0.5 %, where a stop on the spread alone never came before 200."""
    plan = Plan(budget_s=10, target_error=0.005, min_rounds=5, max_rounds=200)
    ratios = [1.0, 0.983, 1.017, 0.9915, 1.0085] * 40
    stops = [n for n in range(5, 201) if plan.stop_reason([1.0] * n, ratios[:n], 0, 0)]
    assert 8 <= stops[0] <= 14
    error = [summarise([1.0] * n, ratios[:n]).error for n in (stops[0], 7)]
    assert error[0] < 0.005 <= error[1]


def test_plan_stops_before_a_round_that_would_overrun_the_budget():
    plan = Plan(budget_s=2, target_error=0.005, min_rounds=5, max_rounds=50)
    noisy_s, noisy_r = [1.0, 2.0, 1.0], [1.0, 1.0, 2.0]
    assert plan.stop_reason(noisy_s, noisy_r, elapsed_s=1.0, round_s=0.5) is None
    assert "budget" in plan.stop_reason(noisy_s, noisy_r, elapsed_s=1.6, round_s=0.5)
    noisy_s, noisy_r = [1.0, 2.0] * 25, [2.0, 1.0] * 25
    assert "50 rounds" in plan.stop_reason(noisy_s, noisy_r, elapsed_s=0, round_s=0)


SHORT_ROUND_S, LONG_ROUND_S = 0.009, 0.032  # reference against itself; the naive baseline


def test_a_short_rounds_first_pair_is_its_warmup_and_it_takes_the_least_rounds():
    plan = Plan(budget_s=8)
    assert not plan.long(SHORT_ROUND_S)
    assert not plan.counts_first(SHORT_ROUND_S)
    steady = [3.6] * (defaults.TIMING_MIN_ROUNDS - 1)
    assert plan.stop_reason(steady, steady, elapsed_s=0.1, round_s=SHORT_ROUND_S) is None
    steady.append(3.6)
    assert "known" in plan.stop_reason(steady, steady, elapsed_s=0.1, round_s=SHORT_ROUND_S)


def test_a_long_rounds_first_pair_is_a_round_of_fewer_with_the_same_precision_rule():
    """A slow kernel's rounds agree to ±0.1 %: three tell its median to ±0.5 %; a
    spread that does not say so still takes more rounds, as in a short round."""
    plan = Plan(budget_s=8)
    assert plan.long(LONG_ROUND_S) and plan.long(defaults.TIMING_LONG_ROUND)
    assert plan.counts_first(LONG_ROUND_S)
    least = defaults.TIMING_LONG_MIN_ROUNDS
    assert plan.least_rounds(LONG_ROUND_S) == least < plan.least_rounds(SHORT_ROUND_S)
    student, reference = [26.0, 26.02, 25.99], [3.6, 3.601, 3.598]
    early = plan.stop_reason(student[:-1], reference[:-1], 0.1, LONG_ROUND_S)
    assert early is None
    assert "known" in plan.stop_reason(student, reference, 0.1, LONG_ROUND_S)
    noisy = [3.6, 3.7, 3.55]  # a range of 4 %: the median is not known to 0.5 %
    assert plan.stop_reason(student, noisy, 0.1, LONG_ROUND_S) is None
    assert plan.stop_reason(student, noisy, 7.99, LONG_ROUND_S) is not None  # the budget


def test_the_least_rounds_of_a_long_round_never_exceed_the_plans_own_least():
    assert Plan(budget_s=8, min_rounds=2).least_rounds(LONG_ROUND_S) == 2


def test_a_forfeited_speed_is_timed_until_the_speedup_shown_is_known_to_shown_error():
    """A broken lab rule forfeits the speed points (scoring): no round can change them,
    so timing stops at the least rounds where the median speedup it shows is known to
    TIMING_SHOWN_ERROR (0.6 %), a long round's to TIMING_LONG_SHOWN_ERROR (1 %), not to
    the 0.5 % that points need."""
    assert defaults.TIMING_TARGET_ERROR < defaults.TIMING_SHOWN_ERROR == 0.006
    assert defaults.TIMING_LONG_SHOWN_ERROR == 0.01
    forfeited, scored = Plan(budget_s=8, scored=None), Plan(budget_s=8)
    student, reference = [26.0, 26.3, 25.9], [3.6] * 3  # the median known to ±0.82 %
    assert forfeited.stop_reason(student[:2], reference[:2], 0.1, LONG_ROUND_S) is None
    reason = forfeited.stop_reason(student, reference, 0.1, LONG_ROUND_S)
    assert reason.startswith("no more rounds could change the points") and "±0.82%" in reason
    assert scored.stop_reason(student, reference, 0.1, LONG_ROUND_S) is None
    spread = [26.0, 29.0, 25.1]  # ±7.5 %: the speedup shown would be off
    assert forfeited.stop_reason(spread, reference, 0.1, LONG_ROUND_S) is None
    assert forfeited.stop_reason([1.0] * 4, NEAR[:4], 0.1, SHORT_ROUND_S) is None
    assert "change the points" in forfeited.stop_reason([1.0] * 5, NEAR, 0.1, SHORT_ROUND_S)
    assert scored.stop_reason([1.0] * 5, NEAR, 0.1, SHORT_ROUND_S) is None
    wider = [1.0, 1.012, 0.99, 1.006, 0.995]  # ±0.69 %: a long round's would stop here
    assert forfeited.stop_reason([1.0] * 5, wider, 0.1, SHORT_ROUND_S) is None
    assert "change the points" in forfeited.stop_reason([1.0] * 5, wider, 0.1, LONG_ROUND_S)


NEAR = [1.0, 1.009, 0.993, 1.006, 0.996]  # ±0.54 % at 5 rounds: shown, short of points


def test_a_brief_kernel_is_timed_until_its_median_is_known_to_the_brief_error():
    """Runs of 14 µs (scan's) are brief, as are spmv-csr's 144 µs, and two of 0.6 ms are
    not (defaults.TIMING_BRIEF_ROUND): a median known to ±0.54 % stops neither for the
    points (all of them, at twice the target) nor for the target, where runs of 1 ms
    stop; one known to ±0.19 % stops."""
    plan = Plan(budget_s=8, scored=(0.15, 0.6))
    assert defaults.TIMING_BRIEF_ERROR < defaults.TIMING_TARGET_ERROR
    brief = [0.028 * r for r in NEAR]
    assert plan.brief([0.014] * 5, brief) and not plan.brief([1.0] * 5, NEAR)
    assert plan.brief([0.144] * 5, [0.144] * 5) and not plan.brief([0.6] * 5, [0.6] * 5)
    assert plan.errors([0.014] * 5, brief, SHORT_ROUND_S) == (defaults.TIMING_BRIEF_ERROR,) * 2
    assert plan.stop_reason([0.014] * 5, brief, 0.1, SHORT_ROUND_S) is None
    slow = [2 * r for r in NEAR]
    assert "change the points" in plan.stop_reason([1.0] * 5, slow, 0.1, SHORT_ROUND_S)
    tighter = [0.014 * r for r in [1.0, 1.004, 0.997, 1.003, 0.998] * 4]  # ±0.19 % at 20
    reason = plan.stop_reason([0.014] * 20, tighter, 0.1, SHORT_ROUND_S)
    assert reason is not None and reason.startswith("the median speedup is known to ±0.")
    assert Plan(budget_s=8, brief_round_s=0.0).errors([0.014] * 5, brief, SHORT_ROUND_S) == (
        defaults.TIMING_TARGET_ERROR,
        defaults.TIMING_SHOWN_ERROR,
    )


def test_timing_stops_once_every_round_is_past_where_the_points_change():
    plan = Plan(budget_s=8, scored=(0.25, 1.0))
    assert plan.stop_reason([1.0] * 5, NEAR, 0.1, SHORT_ROUND_S) is None
    slow = [0.2 * r for r in NEAR]  # 0.199 to 0.202: no points, whatever more rounds say
    assert "change the points" in plan.stop_reason([1.0] * 5, slow, 0.1, SHORT_ROUND_S)
    fast = [1.06 * r for r in NEAR]  # all the points, each 5 % past the target
    assert "change the points" in plan.stop_reason([1.0] * 5, fast, 0.1, SHORT_ROUND_S)
    edge = [1.057 * r for r in NEAR]  # one round (1.0496) inside the margin: not yet known
    assert plan.stop_reason([1.0] * 5, edge, 0.1, SHORT_ROUND_S) is None
    assert plan.stop_reason([1.0] * 4, slow[:4], 0.1, SHORT_ROUND_S) is None  # least rounds


def test_where_every_speedup_scores_differently_the_points_never_stop_timing():
    plan = Plan(budget_s=8)  # scored (0, inf): the default, as before
    assert not plan.points_known([1.0] * 5, [1e-9] * 5)
    assert not plan.points_known([1e-9] * 5, [1.0] * 5)
    assert plan.stop_reason([1.0] * 5, [0.5, 0.6, 0.4, 0.55, 0.45], 0.1, SHORT_ROUND_S) is None


@pytest.mark.parametrize("scored", [None, (0.25, 1.0), EVERY_SPEEDUP])
def test_a_timing_check_carries_where_the_points_change_to_the_worker(scored):
    check = TimingCheck(7, scored=scored)
    assert TimingCheck.from_json(json.loads(json.dumps(check.to_json()))).scored == scored
