"""The grader's side of checked timing, the parts that need no GPU: the plan (samples,
rounds, inputs drawn ahead), each lab's sampler against its full reference, and the
verdicts on wrong and impossible timings."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import terms_kit as tk
from lab_kit import default_interface

from grader import defaults
from grader.backends.timing import (
    TimingCheck,
    drawn_array,
    launch_key,
    sample_axes,
)
from grader.grading import pipeline
from grader.grading.timing import (
    FEWEST_CHECKED,
    GRADING_INPUTS,
    LAUNCH_INPUTS,
    SMALLEST_SAMPLE,
    Expected,
    _Daemons,
    device_ceilings,
    draw_ahead,
    expected_sample,
    first_wrong,
    impossible,
    inputs_read,
    judge,
    performance_of,
    plan,
    reached,
    roofline,
    sample_inputs,
    traffic,
)
from grader.judge import cases
from grader.judge.compare import allowances
from grader.judge.launch import launch_sizes, layout
from grader.labs import all_labs, get
from grader.model.lab import Case
from grader.model.launch import Timing
from grader.model.profile import Counted, KernelProfile, Profile, Source, Traffic
from grader.model.result import Kind

# -- the plan ---------------------------------------------------------------------------


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
    assert check.launches == 1 + check.rounds


def test_a_whole_input_sample_of_a_mebi_inputs_is_checked_for_64_rounds():
    """Scan's sample reads its whole input (1 Mi floats): the host checks 64 rounds, as
    many as a brief kernel needs for its median to be known to TIMING_BRIEF_ERROR
    (defaults); histogram's 32 MiB samples stop at FEWEST_CHECKED."""
    for name, rounds in (("scan", 64), ("histogram", FEWEST_CHECKED)):
        lab = get(name)
        case, host = cases.timing_inputs(lab, 7)
        case = replace(case, sizes=launch_sizes(lab, case.sizes, default_interface(lab)))
        assert plan(lab, case, 7, host).rounds == rounds, name


@pytest.mark.parametrize(
    "name", sorted(n for n in all_labs() if get(n).sampler and get(n).sampler.reads)
)
def test_a_samplers_own_count_of_the_inputs_read_is_that_of_its_coordinates(name):
    lab = get(name)
    by_coordinates = replace(lab, sampler=replace(lab.sampler, reads=None))
    case, host = cases.timing_inputs(lab, 7)
    case = replace(case, sizes=launch_sizes(lab, case.sizes, default_interface(lab)))
    [sample] = plan(lab, case, 7, host).samples
    for counts in ((1,) * len(sample.counts), sample.counts, (3,) * len(sample.counts)):
        sized = replace(sample, counts=counts)
        want = inputs_read(by_coordinates, case, sized, 7, host)
        assert inputs_read(lab, case, sized, 7, host) == want > 0


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


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_a_timed_sample_of_nan_or_infinity_is_wrong(value):
    """NaN is no wildcard in a timed launch's sample either (the exploit of
    tests/exploit_kit.py that writes NaN everywhere)."""
    lab, case, check, constants = _setup()

    def spoil(launch, got):
        if launch == 1:
            got[:] = value

    timing = _timing_of(lab, case, check, constants, 3, spoil)
    found = _verdict(first_wrong, lab, case, check, constants, timing)
    assert found is not None and found.kind == Kind.TIMING, found
    assert "timed launch 2 of 3" in found.message


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


def test_only_the_launches_most_timings_make_are_computed_ahead():
    lab, case, check, constants = _setup("conv3d")
    assert check.usual_launches == 1 + defaults.TIMING_MIN_ROUNDS < check.launches
    with Expected(lab, case, check, constants) as ahead:
        assert sorted(ahead._futures) == list(range(check.usual_launches))
        ahead.need(check.usual_launches + 2)  # the timing made two more
        assert sorted(ahead._futures) == list(range(check.usual_launches + 2))


def test_a_lone_grading_computes_every_launch_it_may_check_ahead_until_the_timing_ends():
    lab, case, check, constants = _setup("conv3d")
    with Expected(lab, case, check, constants, ahead=check.launches) as ahead:
        assert sorted(ahead._futures) == list(range(check.launches))
        ahead.need(check.usual_launches)  # the timing stopped there
        dropped = [ahead._futures[n] for n in range(check.usual_launches, check.launches)]
        assert all(f.cancelled() or f.running() or f.done() for f in dropped)
        assert any(f.cancelled() for f in dropped)  # eight threads: most never started


def test_the_timing_is_made_ready_from_the_first_build_until_a_case_fails(monkeypatch):
    """grader.grading.pipeline.Grading: the timing is made ready from the kernel's first
    build on (Grading.build_for calls start_ready), while the cases run, a batch's
    worker computing fewer launches ahead; a failed case, after which nothing is timed,
    stops it, and nothing is made ready after one."""
    started, stopped = [], []

    def ready_ahead(*made, shared):
        started.append(shared)
        return f"ready {len(started)}"

    monkeypatch.setattr(pipeline, "ready_ahead", ready_ahead)
    monkeypatch.setattr(pipeline, "close_when_ready", stopped.append)
    passed, failed = SimpleNamespace(passed=True), SimpleNamespace(passed=False)

    def grading(drawn="drawn", **options) -> pipeline.Grading:
        made = pipeline.Grading(
            get("scan"), None, None, pipeline.Options(**options), SimpleNamespace(cases=[])
        )
        made.drawn = drawn
        return made

    batch = grading(shared_host=True)
    assert batch.start_ready() == "ready 1" and started == [True]
    for result in (passed, passed, failed):
        batch.add_case(result)
    assert batch.start_ready() == "ready 1" and stopped == ["ready 1"]  # made once
    late = grading()
    late.add_case(failed)
    assert late.start_ready() is None and started == [True]
    untimed = grading(drawn=None)  # --no-timing, or a backend that measures no speed
    assert untimed.start_ready() is None and started == [True]
    lone = grading()
    lone.add_case(passed)
    assert lone.start_ready() == "ready 2" and started == [True, False]


@pytest.mark.parametrize(
    "name, shared, every",
    [("histogram", False, True), ("histogram", True, False), ("conv2d", False, False)],
)
def test_every_launch_is_computed_ahead_where_samples_are_costly_and_the_cores_free(
    name, shared, every
):
    """grader.grading.timing.get_ready, with the kernel built by the CPU backend (timing
    needs no GPU to be made ready): histogram's samples read its whole 32 MiB input, so a
    lone check computes every launch it may check ahead, a batch's worker the usual ones;
    conv2d's cost 3 ms, and computed by the hundred they kept the cases waiting."""
    from grader.backends.cpu.backend import CpuBackend
    from grader.grading.timing import get_ready
    from grader.model.source import read_submission

    lab = get(name)
    submission, _ = read_submission(lab.home / "reference.cu")
    with CpuBackend(jobs=1) as backend:
        ready = get_ready(lab, submission, backend, draw_ahead(lab, 3), shared)
        try:
            check = ready.expected.check
            assert check.usual_launches < check.launches
            assert ready.expected.ahead == (check.launches if every else check.usual_launches)
            assert ready.student.ok and ready.reference.ok
        finally:
            ready.close()


def test_the_expected_threads_run_in_order_and_hand_back_what_failed():
    pool = _Daemons(1)
    order: list[int] = []
    futures = [pool.submit(order.append, n) for n in range(5)]
    failed = pool.submit(lambda: 1 / 0)
    assert [f.result(timeout=10) for f in futures] == [None] * 5 and order == list(range(5))
    with pytest.raises(ZeroDivisionError):
        failed.result(timeout=10)
    pool.shutdown()


def test_closing_cancels_the_launches_not_started_and_lets_the_running_one_end():
    gate = threading.Event()
    pool = _Daemons(1)
    running = pool.submit(gate.wait, 10)
    queued = pool.submit(lambda: "never")
    while not running.running():
        time.sleep(0.01)
    pool.shutdown()
    assert queued.cancelled()
    gate.set()
    assert running.result(timeout=10) is True
    with pytest.raises(RuntimeError):
        pool.submit(lambda: 0)


def test_a_check_exits_without_waiting_for_a_launch_computed_past_its_timing():
    """The threads are daemons: a thread pool's exit joined the launches computed ahead
    that no one would read (histogram: up to one launch, 0.2 s on a busy host)."""
    code = (
        "import time; from grader.grading.timing import _Daemons; pool = _Daemons(2); "
        "pool.submit(time.sleep, 60); time.sleep(0.2); pool.shutdown(); print('closed')"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "closed" in done.stdout, done.stderr
    assert time.monotonic() - started < 30


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


# -- the speed --------------------------------------------------------------------------


def test_the_speed_is_the_median_ratio_and_the_note_ends_with_their_spread():
    lab = get("matmul-tiled")
    timing = Timing([1.0, 2.0, 1.0, 1.0, 0.5], [1.1, 2.0, 0.9, 1.0, 0.5], "5 rounds")
    perf = performance_of(lab, cases.timing_case(lab), timing)
    assert perf.speedup == 1.0 and perf.spread == pytest.approx(0.1)
    assert perf.rounds == 5 and perf.student_ms == perf.reference_ms == 1.0
    assert perf.note == "5 rounds; the per-round speedup spread 10.00%."
    unmeasured = performance_of(lab, cases.timing_case(lab), Timing([0.0], [1.0], "1 round"))
    assert unmeasured.speedup == 0.0 and unmeasured.spread == 0.0  # no ratio to spread


# -- the roofline -----------------------------------------------------------------------


def loads_profile(lab_name: str, sizes: dict, loaded: int, stored: int, dram=None) -> Profile:
    kernel = KernelProfile(
        "k", global_loads=Traffic(1, 1, loaded, 32), global_stores=Traffic(1, 1, stored, 32)
    )
    lab = get(lab_name)
    return Profile(Source.CPU_MODEL, "small", sizes, 1, lab.work(sizes)[0], [kernel],
                   dram_bytes=dram)  # fmt: skip


def test_without_a_profile_the_roofline_counts_the_labs_least_traffic():
    lab = get("matmul-tiled")
    case = cases.timing_case(lab)
    width = case.sizes["Width"]
    timing = Timing([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], "3 rounds")
    found = roofline(lab, case, performance_of(lab, case, timing), {"flops": 6e13, "bytes": 4e12})
    assert found.student.counted == Counted.LEAST and found.student.bytes == 12.0 * width**2
    assert found.student.flops_per_second == pytest.approx(2.0 * width**3 / 2e-3)
    assert found.reference.flops_per_second == 2 * found.student.flops_per_second
    assert found.student.intensity == pytest.approx(width / 6)
    assert found.ridge == 15.0
    assert roofline(lab, case, performance_of(lab, case, timing), {"flops": 1.0}) is None


def test_a_profiles_requested_bytes_scale_to_the_timed_size_by_its_flops():
    lab = get("matmul-naive")
    case = cases.timing_case(lab)
    width = case.sizes["Width"]
    naive = loads_profile("matmul-naive", {"Width": 64}, 8 * 64**3, 4 * 64**2)  # 2W^3 loads
    moved, counted = traffic(lab, case, naive)
    assert counted == Counted.REQUESTED
    assert moved == pytest.approx((8 * 64**3 + 4 * 64**2) * (width / 64) ** 3)
    measured = loads_profile("matmul-naive", case.shown_sizes, 100, 28, dram=64.0)
    assert traffic(lab, case, measured) == (64.0, Counted.DRAM)  # counted at the timed size
    elsewhere = loads_profile("matmul-naive", {"Width": 64}, 100, 28, dram=64.0)
    assert traffic(lab, case, elsewhere)[1] == Counted.REQUESTED  # DRAM's do not scale


def test_where_the_lab_counts_no_flops_requested_bytes_scale_by_its_least_traffic():
    lab = get("histogram")
    case = cases.timing_case(lab)
    small = {**case.sizes, "n": case.sizes["n"] // 4}
    profile = loads_profile("histogram", small, small["n"], 0)
    moved, counted = traffic(lab, case, profile)
    least_there, least = lab.work(small)[1], lab.work(case.sizes)[1]
    assert counted == Counted.REQUESTED and moved == pytest.approx(small["n"] * least / least_there)
    spmv = get("spmv-csr")
    timed, _ = cases.timing_inputs(spmv, 1)
    shown = loads_profile("spmv-csr", dict(timed.sizes), 100, 28)
    # as if the lab counted no flops: the sizes its draw defined (nnz) are not kept
    shown.sizes, shown.useful_flops = timed.shown_sizes, 0.0
    assert traffic(spmv, timed, shown) == (spmv.work(timed.sizes)[1], Counted.LEAST)


def test_the_ceilings_are_the_best_this_device_has_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_CACHE", str(tmp_path))
    assert device_ceilings("H200", {"flops": 5.0, "bytes": 3.0}) == {"flops": 5.0, "bytes": 3.0}
    assert device_ceilings("H200", {"flops": 2.0, "bytes": 4.0}) == {"flops": 5.0, "bytes": 4.0}
    assert device_ceilings("H100", {"flops": 1.0, "bytes": 1.0}) == {"flops": 1.0, "bytes": 1.0}
    for path in (tmp_path / "ceilings").iterdir():
        path.write_text("not json")
    assert device_ceilings("H200", {"flops": 1.0, "bytes": 1.0}) == {"flops": 1.0, "bytes": 1.0}
