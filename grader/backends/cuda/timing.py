"""What is CUDA's own in timing a pair of runs, in the GPU worker: the L2 flush before
each (its persisting lines made normal first, backends.cuda.l2), CUDA events around it,
a hold that keeps its launches queued until all are, what a round costs beyond the
kernels, and the note that says how it was timed. When to stop is
grader.backends.timing.Plan's, and what the rounds say grader.backends.timing's summarise."""

from __future__ import annotations

import time

import numpy as np

from grader.backends import window as phases
from grader.backends.cuda.gpu import Gpu, failures
from grader.backends.cuda.l2 import PersistingL2
from grader.backends.timing import Plan
from grader.backends.window import Window
from grader.model.launch import Launch

FLUSH_BYTES = 256 << 20  # cleared before every timed launch: several times any L2
ROUND_OVERHEAD_S = 0.002  # launches, events and the flush, beyond the kernels themselves
# The longest sleep between looks at a timed run's end event: gpu.wait's 1 ms overslept a
# run by half of it on average, 16 runs a timing, all inside the window.
WAIT_POLL_S = 1e-4


class Rig:
    """What every timing in a worker reuses: the flush buffer, the hold and the handle on
    the persisting L2. Made once, outside any timing's window, where they were made
    inside every timing's. Nothing of them carries from one timing to the next: the
    flush is cleared before each run, the hold's flag set before each, and the L2's
    set-aside cleared per timing."""

    def __init__(self, gpu: Gpu) -> None:
        with failures("alloc"):
            self.flush = gpu.cuda.mem_alloc(FLUSH_BYTES)
            self.hold = Hold(gpu)
        with failures("l2"):
            self.l2 = PersistingL2()


def expected_round_s(first: list[float] | tuple[float, float]) -> float:
    """What a round is expected to cost, in seconds, after the first pair's ms."""
    return sum(first) / 1000 + ROUND_OVERHEAD_S


def time_pair(
    gpu: Gpu,
    rig: Rig,
    runs: list[list[tuple[object, Launch, list]]],
    plan: Plan,
    checker,
    window: Window,
) -> dict:
    """Time two runs, each a list of launches (function, launch, args) timed as one,
    interleaved: round r starts with runs[r % 2]. L2 is flushed before every timed
    run. `checker` (a checked.Checker) prepares and samples every run alike, outside
    the timed intervals, and keeps the samples of runs[0], the student's. `window`
    gets the seconds of each phase. Everything queued has finished on return."""
    started = time.monotonic()
    lap = time.perf_counter()
    l2 = rig.l2
    with failures("l2"):
        l2.clear()
    window.lap(phases.L2, lap)
    try:

        def timed(which: int) -> float:
            return _timed(gpu, rig, runs[which], checker, which == 0, window)

        first = [timed(0), timed(1)]  # also loads lazily-loaded code
        round_s = expected_round_s(first)
        counted = plan.counts_first(round_s)  # else it was the warm-up
        samples: list[list[float]] = [[first[0]], [first[1]]] if counted else [[], []]
        reason = None
        while reason is None:
            reason = plan.stop_reason(*samples, time.monotonic() - started, round_s)
            if reason is not None:
                break
            order = (0, 1) if len(samples[0]) % 2 == 0 else (1, 0)
            for which in order:
                samples[which].append(timed(which))
        if not samples[0]:  # the budget spent by the first pair: it is the sample
            samples = [[first[0]], [first[1]]]
    finally:
        lap = time.perf_counter()
        # nothing of the runs left on the GPU once the gate opens; a failed launch left
        # the hold queued, and it reads the flag
        gpu.settle()
        window.lap(phases.SETTLE, lap)
    return {
        "student_ms": samples[0],
        "reference_ms": samples[1],
        "note": note(len(samples[0]), reason, l2),
    }


def _timed(
    gpu: Gpu,
    rig: Rig,
    run: list[tuple[object, Launch, list]],
    checker,
    student: bool,
    window: Window,
) -> float:
    lap = time.perf_counter()
    if checker is not None:  # the same work around both kernels' runs
        checker.before(student)
        lap = window.lap(phases.BEFORE, lap)
    with failures("l2"):
        rig.l2.reset()  # before the hold is queued: the driver may wait for the GPU
    lap = window.lap(phases.L2, lap)
    start, end = gpu.cuda.Event(), gpu.cuda.Event()
    hold = rig.hold
    hold.close()
    try:
        with failures("sync"):
            gpu.cuda.memset_d8_async(rig.flush, 0, FLUSH_BYTES)
            start.record()
        for function, launch, args in run:
            gpu.launch(function, launch, args)
        with failures("sync"):
            end.record()
            end.query()  # hands the queued launches to the GPU before the hold opens
    finally:
        hold.open()
        lap = window.lap(phases.LAUNCHES, lap)
    if checker is not None:  # on the host while the run is on the GPU, not after it
        checker.prepare(student)
        lap = window.lap(phases.PREPARE, lap)
    gpu.wait(end, longest=WAIT_POLL_S)
    with failures("sync"):
        ms = end.time_since(start)
    lap = window.lap(phases.WAITS, lap)
    if checker is not None:
        checker.after(student)
        window.lap(phases.AFTER, lap)
    return ms


class Hold:
    """The helpers' `hold` kernel and its flag in mapped host memory: closed, the stream
    waits while a timed run's launches are queued behind it; opened, they run back to
    back, so the host's time to launch a run of several kernels is never timed."""

    LIMIT_NS = 2_000_000_000  # the hold ends by itself after this, should the host stall

    def __init__(self, gpu: Gpu) -> None:
        self.flag = gpu.cuda.pagelocked_zeros(
            1, np.uint32, mem_flags=gpu.cuda.host_alloc_flags.DEVICEMAP
        )
        self.address = np.uintp(self.flag.base.get_device_pointer())
        self.kernel = gpu.helper.get_function("hold")

    def close(self) -> None:
        self.flag[0] = 0
        with failures("launch"):
            self.kernel(self.address, np.uint64(self.LIMIT_NS), grid=(1, 1, 1), block=(1, 1, 1))

    def open(self) -> None:
        self.flag[0] = 1


def note(rounds: int, reason: str, l2: PersistingL2) -> str:
    """How the pair was timed and why timing stopped: the grader adds what the rounds say
    (grader.grading.timing.performance_of)."""
    flushed = f"L2 flushed ({FLUSH_BYTES >> 20} MB memset) before every launch, {l2.said()}"
    return f"{rounds} interleaved rounds, CUDA events, {flushed}; stopped because {reason}"
