"""The grader's side of timing: the student's kernel measured against the reference
(`measure`), its speed and points from the rounds' statistics (`performance_of`), and
the trust in the timed launches (see grader.backends.timing for what the GPU does):
every student launch's sampled output is compared with float64 values computed here for
exactly those elements, with the lab's own tolerance and the same precision test as a
case's (grader.judge.compare: a kernel that computes in half, bfloat16 or TF32 at the
timed size fails it), and the student's time is held against what the machine can do at
all. Any failure costs the speed points."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import secrets
import statistics
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np

from grader import defaults, machine
from grader.ahead import in_background
from grader.backends.base import Backend
from grader.backends.timing import (
    EVERY_SPEEDUP,
    SAMPLE_ELEMENTS,
    Sample,
    TimingCheck,
    drawn_array,
    drawn_elements,
    flat_indices,
    launch_key,
    sample_axes,
    sample_counts,
    summarise,
)
from grader.files import write_atomically
from grader.judge import cases as casegen
from grader.judge import hints
from grader.judge.compare import Allowance, Comparison, allowance, compare, counted, magnitudes
from grader.judge.launch import at_launch, layout, timing_launches
from grader.model.lab import Case, Lab, Read
from grader.model.launch import Build, Launch, Timing
from grader.model.profile import Counted, Profile, Roofline, RooflinePoint
from grader.model.result import Diagnostic, Kind, Performance
from grader.model.source import Submission, read_submission

CEILINGS = ("flops", "bytes")  # the fp32 peak and the copy bandwidth, per second
IMPOSSIBLE = 1.2  # a rate above this multiple of the machine's ceiling is not real
THREADS = 8  # at most, computing the samples' expected values
SPARE_CORES = 2  # left to the GPU worker, whose launches a busy CPU would delay
LAUNCH_INPUTS = 1 << 20  # input elements one launch's sample may read; fewer outputs past it
GRADING_INPUTS = 1 << 26  # input elements all of a grading's samples may read
# ... past FEWEST_CHECKED rounds. A brief kernel (scan, histogram, whose samples read the
# whole input) is timed until its median is known to defaults.TIMING_BRIEF_ERROR: scan's
# 1 Mi inputs a launch allow it 64 rounds, some 10 CPU-ms each; each of histogram's 32 MiB
# samples costs the host about 80 CPU-ms (H100 machine), so it stops at FEWEST_CHECKED,
# where five gradings lay within ±0.8 % of their median (H200). Most labs stop by their
# precision after 5 to 20.
FEWEST_CHECKED = 16
SMALLEST_SAMPLE = 256  # output elements, however many inputs each one reads


def plan(
    lab: Lab,
    case: Case,
    seed: int,
    host: dict[str, np.ndarray],
    scored: tuple[float, float] | None = EVERY_SPEEDUP,
) -> TimingCheck:
    """The timing check of `planned`."""
    return planned(lab, case, seed, host, scored)[0]


def planned(
    lab: Lab,
    case: Case,
    seed: int,
    host: dict[str, np.ndarray],
    scored: tuple[float, float] | None = EVERY_SPEEDUP,
) -> tuple[TimingCheck, int]:
    """The timing check, and the inputs the host draws to compute one launch's samples.
    Draw every input buffer but those the host drew (`host`, cases.timing_inputs),
    which are restored, and poison (or zero) every output and scratch buffer before
    each student launch; sample the outputs after it, where the lab can compute a
    sample; time no more rounds than the host can check, but at least FEWEST_CHECKED
    (stopping earlier where the ratios agree, or once they cannot change the points
    `scored`, TimingCheck.scored). `case` has the student's launch macros among its
    sizes."""
    inputs, restored, outputs, zeroed, samples, cost = [], [], [], [], [], 0
    for name, param in lab.buffers.items():
        if lab.is_input(name):
            (restored if name in host else inputs).append(name)
            continue
        (zeroed if lab.array(name).initial == "zero" else outputs).append(name)
        if lab.sampler is not None and any(o.name == name for o in lab.outputs):
            lay = layout(lab, param, case.sizes)
            sample, read = _sample(lab, case, name, lay, seed, host)
            samples.append(sample)
            cost += read
    rounds = max(FEWEST_CHECKED, min(defaults.TIMING_MAX_ROUNDS, GRADING_INPUTS // max(cost, 1)))
    check = TimingCheck(
        seed,
        tuple(inputs),
        tuple(outputs),
        tuple(samples),
        zeroed=tuple(zeroed),
        rounds=rounds,
        restored=tuple(restored),
        scored=scored,
    )
    return check, cost


def _sample(
    lab: Lab, case: Case, name: str, lay, seed: int, host: dict[str, np.ndarray]
) -> tuple[Sample, int]:
    """A sample of about SAMPLE_ELEMENTS outputs, fewer where they would read more than
    LAUNCH_INPUTS inputs (a block's sum reads thousands), but never under SMALLEST_SAMPLE;
    and the inputs it reads."""
    sample = Sample(name, lay.shape, lay.strides, sample_counts(lay.shape))
    cost = inputs_read(lab, case, sample, seed, host)
    if cost <= LAUNCH_INPUTS:
        return sample, cost
    total = max(SMALLEST_SAMPLE, SAMPLE_ELEMENTS * LAUNCH_INPUTS // cost)
    sample = Sample(name, lay.shape, lay.strides, sample_counts(lay.shape, total))
    return sample, inputs_read(lab, case, sample, seed, host)


def inputs_read(
    lab: Lab, case: Case, sample: Sample, seed: int, host: dict[str, np.ndarray]
) -> int:
    """Input elements the host draws to compute one launch's `sample` (those it drew
    once, `host`, cost nothing more)."""
    if lab.sampler.reads is not None:
        read = lab.sampler.reads(case.sizes, sample.counts)
        return sum(count for name, count in read.items() if name not in host)
    read = reader(lab, case, seed, host, 0)
    needs = lab.sampler.needs(case.sizes, sample_axes(sample, seed, 0), read)
    return sum(
        math.prod(lab.array_shape(name, case.sizes))
        if coords is None
        else math.prod(np.broadcast_shapes(*(np.shape(c) for c in coords)))
        for name, coords in needs.items()
        if name not in host
    )


class Expected:
    """What each checked launch's samples must hold: per sample, the float64 values and
    their Allowance. Threads compute them in launch order (numpy releases the interpreter's
    lock in its loops) from the moment the timing is made ready, while the cases still run
    (ready_ahead): the first `ahead` launches, and the rest once the timing says it made
    them (get_ready says how many ahead: those past where the timing stopped are cancelled
    then). A warm check of histogram, whose 32 MiB samples cost 80 CPU-ms each, waited 0.3
    to 0.5 s for them after the GPU's rounds, before they were computed ahead (H100
    machine). By default `ahead` is the launches most timings make
    (TimingCheck.usual_launches): computing every launch ahead (matmul-tiled: 34 at 28
    CPU-ms each) cost a batch up to 0.8 CPU-s a submission, mostly while it waited at the
    gate, for launches never made. `host` holds the inputs the host drew
    (cases.timing_inputs)."""

    def __init__(
        self,
        lab: Lab,
        case: Case,
        check: TimingCheck,
        host: dict[str, np.ndarray],
        ahead: int | None = None,
    ) -> None:
        self.lab, self.case, self.check, self.host = lab, case, check, host
        self.ahead = check.usual_launches if ahead is None else ahead
        threads = min(THREADS, max(1, machine.cores() - SPARE_CORES))
        self._pool = _Daemons(threads)
        self._futures: dict[int, Future] = {}

    def start(self) -> Expected:
        """Compute the first `ahead` launches; `close` stops what is left."""
        if self.check.samples:
            self.need(self.ahead)
        return self

    def __enter__(self) -> Expected:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Cancel what has not started; what runs still is short, and no one waits for it."""
        self._pool.shutdown()

    def need(self, launches: int) -> None:
        """Compute launches 0 to `launches` - 1, and no later one that has not started."""
        for launch, future in self._futures.items():
            if launch >= launches:
                future.cancel()
        for launch in range(launches):
            self._future(launch)

    def of(self, launch: int) -> list[tuple[np.ndarray, Allowance]]:
        return self._future(launch).result()

    def _future(self, launch: int) -> Future:
        """The launch's computation, submitted where it never was or was cancelled."""
        future = self._futures.get(launch)
        if future is None or future.cancelled():
            future = self._futures[launch] = self._pool.submit(self._compute, launch)
        return future

    def _compute(self, launch: int) -> list[tuple[np.ndarray, Allowance]]:
        return [
            expected_sample(
                self.lab,
                self.case,
                self.check,
                self.host,
                sample,
                sample_axes(sample, self.check.seed, launch),
                launch,
            )
            for sample in self.check.samples
        ]


class _Daemons:
    """`submit` as a ThreadPoolExecutor's, run in order on `workers` daemon threads, which a
    process that exits does not wait for: a grading's last launches computed ahead, past
    where its timing stopped, are read by no one (a thread pool's exit joined them, up to
    one launch of histogram, 0.2 s on a busy host)."""

    def __init__(self, workers: int) -> None:
        self._workers, self._started = workers, 0
        self._queue: deque[tuple[Future, Callable, tuple]] = deque()
        self._ready = threading.Condition()
        self._closed = False

    def submit(self, function: Callable, *args) -> Future:
        future: Future = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("submit after shutdown")
            self._queue.append((future, function, args))
            self._ready.notify()
            if self._started < self._workers:
                self._started += 1
                threading.Thread(target=self._work, name="grader-expected", daemon=True).start()
        return future

    def shutdown(self) -> None:
        """Cancel what has not started; the threads end once their work is done."""
        with self._ready:
            self._closed = True
            for future, _, _ in self._queue:
                future.cancel()
            self._queue.clear()
            self._ready.notify_all()

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._queue and not self._closed:
                    self._ready.wait()
                if not self._queue:
                    return
                future, function, args = self._queue.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(function(*args))
                except BaseException as error:  # noqa: BLE001 - of(launch) raises it
                    future.set_exception(error)


def judge(
    expected: Expected, timing: Timing, student_ms: float, reference_ms: float
) -> list[Diagnostic]:
    """What makes the timing untrustworthy: a wrong timed output (or one less precise
    than float32), then a time the machine cannot reach. Empty when the speed may be
    scored."""
    found = []
    wrong = first_wrong(expected, timing)
    if wrong is not None:
        found.append(wrong)
    if timing.student_ms and timing.ceilings:
        lab, case = expected.lab, expected.case
        ceilings = reached(lab, case, timing.ceilings, reference_ms)
        fast = impossible(lab, case, student_ms, ceilings)
        if fast is not None:
            found.append(fast)
    return found


def first_wrong(expected: Expected, timing: Timing) -> Diagnostic | None:
    """The first checked launch whose sample holds a wrong element, or is less precise
    than float32, as a diagnostic."""
    check = expected.check
    expected.need(timing.checked)
    for launch in range(timing.checked):
        for sample, (want, allowed) in zip(check.samples, expected.of(launch), strict=True):
            got = timing.samples[sample.buffer][launch].reshape(want.shape)
            found = compare(sample.buffer, want, got, allowed.tolerance, allowed.magnitude)
            if found.ok:
                continue
            if found.bad.any() and not found.like_lower_precision:
                axes = sample_axes(sample, check.seed, launch)
                return _wrong(expected.lab, found, axes, launch, timing.checked)
            return _imprecise(expected.lab, found, launch, timing.checked)
    return None


def expected_sample(
    lab: Lab,
    case: Case,
    check: TimingCheck,
    host: dict[str, np.ndarray],
    sample: Sample,
    axes: tuple[np.ndarray, ...],
    launch: int,
) -> tuple[np.ndarray, Allowance]:
    """The float64 values of `sample`'s grid at the student's launch `launch`, and their
    Allowance."""
    sizes = case.sizes
    values = sample_inputs(lab, case, check, host, axes, launch)
    output = sample.buffer
    expected = lab.sampler.combine(sizes, values, axes)[output]
    if lab.array(output).exact:  # no tolerance, so no bound to compute
        none = np.zeros(np.shape(expected))
        return expected, allowance(lab, sizes, none, none, output)
    bound = lab.sampler.combine(sizes, magnitudes(values), axes)[output]
    terms = lab.sampler.combine(sizes, counted(values), axes)[output]
    return expected, allowance(lab, sizes, bound, terms, output)


def sample_inputs(
    lab: Lab,
    case: Case,
    check: TimingCheck,
    host: dict[str, np.ndarray],
    axes: tuple[np.ndarray, ...],
    launch: int,
) -> dict[str, np.ndarray]:
    """The inputs the elements on the grid `axes` read at the student's launch `launch`,
    shaped as the lab's sampler needs them."""
    read = reader(lab, case, check.seed, host, launch)
    return {
        name: read(name, coords)
        for name, coords in lab.sampler.needs(case.sizes, axes, read).items()
    }


def reader(lab: Lab, case: Case, seed: int, host: dict[str, np.ndarray], launch: int) -> Read:
    """read(name, coords) for the lab's sampler: input `name` at `coords` (None: all of
    it, as its logical array) at the student's launch `launch`, what the host drew or
    what the GPU drew for that launch; 0 outside the array. Floats come as float64,
    integers in their own type."""

    def read(name: str, coords) -> np.ndarray:
        shape = lab.array_shape(name, case.sizes)
        if name in host:
            values = np.asarray(host[name]).reshape(shape)
            return _widened(values) if coords is None else _float64(_at(values, coords))
        lay = layout(lab, lab.buffers[name], case.sizes)
        key = launch_key(seed, launch, name)
        if coords is None:  # drawn for this read alone: integers need no copy
            return _float64(lay.unpack(drawn_array(key, lay.elements, lay.dtype)))
        return _float64(_at(_DrawnBuffer(key, lay), coords))

    return read


class _DrawnBuffer:
    """A buffer as the GPU draws it, element by element: drawn[coords]."""

    def __init__(self, key: tuple[int, int], lay) -> None:
        self.key, self.lay = key, lay
        self.shape, self.dtype = lay.shape, np.dtype(lay.dtype)

    def __getitem__(self, coords) -> np.ndarray:
        flat = flat_indices(self.lay.strides, coords)
        return drawn_elements(self.key, flat, self.dtype)


def _at(values, coords) -> np.ndarray:
    """values[coords] (an array, or a _DrawnBuffer), 0 where a coordinate lies outside.
    Most axes' coordinates are small until they broadcast, and most are all inside:
    test and clip them first, and only those that need it."""
    shape = values.shape
    outside = [
        (c < 0) | (c >= extent)
        for c, extent in zip(coords, shape, strict=True)
        if np.size(c) and (np.min(c) < 0 or np.max(c) >= extent)
    ]
    if 0 in shape:  # an empty input: every coordinate lies outside
        return np.zeros(np.broadcast_shapes(*(np.shape(c) for c in coords)), values.dtype)
    if outside:
        coords = [np.clip(c, 0, n - 1) for c, n in zip(coords, shape, strict=True)]
    got = np.array(values[tuple(coords)], copy=True)
    if outside:
        got[np.logical_or.reduce(np.broadcast_arrays(*outside))] = 0
    return got


def _widened(values: np.ndarray) -> np.ndarray:
    """A copy of `values`, floats as float64, which the sampler may change."""
    return values.astype(np.float64) if values.dtype.kind == "f" else np.array(values)


def _float64(values: np.ndarray) -> np.ndarray:
    """Values no one else holds, floats as float64, contiguous: histogram's 32 MiB input,
    copied besides, cost its check a tenth more."""
    return values.astype(np.float64) if values.dtype.kind == "f" else np.ascontiguousarray(values)


def timed_size(lab: Lab) -> str:
    return ", ".join(f"{k}={v}" for k, v in lab.timing_sizes.items())


def _wrong(
    lab: Lab,
    found: Comparison,
    axes: tuple[np.ndarray, ...],
    launch: int,
    launches: int,
) -> Diagnostic:
    first = found.first_mismatch()
    index = [int(ax[i]) for ax, i in zip(axes, first.index, strict=True)]
    name = f"{found.name}{index}"
    if found.unwritten[first.index]:
        what = f"never wrote {name}"
    elif first.got is None:
        what = f"wrote NaN to {name}, where {first.expected:.6g} was expected"
    else:
        what = f"wrote {first.got:.6g} to {name}, where {first.expected:.6g} was expected"
    return Diagnostic(
        Kind.TIMING,
        f"At the timed size ({timed_size(lab)}), {lab.kernel.name} {what} "
        f"(timed launch {launch + 1} of {launches}; {found.mismatches} of "
        f"{found.bad.size} sampled elements were wrong). Every timed launch gets fresh "
        "random inputs and its output is checked like a case's, so this timing earns no "
        "speed points. Check the kernel at this size: an index that overflows an int, or "
        "a loop or tile count that stops short of large sizes.",
        kernel=lab.kernel.name,
    )


def _imprecise(lab: Lab, found: Comparison, launch: int, launches: int) -> Diagnostic:
    return Diagnostic(
        Kind.TIMING,
        f"At the timed size ({timed_size(lab)}), in timed launch {launch + 1} of {launches} "
        f"of {lab.kernel.name}: {hints.less_precise_than_float32(found)} The timed "
        "launches are held to float32 as the cases are, so this timing earns no speed "
        "points.",
        kernel=lab.kernel.name,
    )


def reached(
    lab: Lab, case: Case, ceilings: dict[str, float], reference_ms: float
) -> dict[str, float]:
    """The measured ceilings, each raised to the rate the reference kernel reached in the
    same timing: measured while another process's kernels shared the GPU, a ceiling can
    come out below what the reference just did (half the H200's fp32 peak under four
    gradings at once), and would call an honest kernel impossibly fast. The reference's
    own time is no lever for a student's kernel, which runs apart from it."""
    if reference_ms <= 0:
        return ceilings
    flops, moved = lab.work(case.sizes)
    seconds = reference_ms / 1e3
    return {
        "flops": max(ceilings.get("flops", 0.0), flops / seconds),
        "bytes": max(ceilings.get("bytes", 0.0), moved / seconds),
    }


def impossible(
    lab: Lab, case: Case, student_ms: float, ceilings: dict[str, float]
) -> Diagnostic | None:
    """A diagnostic when the student's time implies more work per second than the GPU's
    measured fp32 peak or copy bandwidth allow, by more than IMPOSSIBLE."""
    flops, moved = lab.work(case.sizes)
    seconds = student_ms / 1e3
    checks = (
        ("fp32 arithmetic", flops, ceilings.get("flops", 0.0), 1e12, "TFLOP/s"),
        ("memory traffic", moved, ceilings.get("bytes", 0.0), 1e9, "GB/s"),
    )
    for what, work, ceiling, scale, unit in checks:
        if ceiling <= 0 or work <= 0:
            continue
        if seconds <= 0 or work / seconds > IMPOSSIBLE * ceiling:
            rate = f"{work / seconds / scale:.1f} {unit}" if seconds > 0 else "an infinite rate"
            return Diagnostic(
                Kind.TIMING,
                f"At the timed size ({timed_size(lab)}), {lab.kernel.name} took "
                f"{student_ms:.4g} ms: {rate} of {what}, more than {IMPOSSIBLE:g} times "
                f"this GPU's ceiling of {ceiling / scale:.1f} {unit} (measured, or what the "
                "reference kernel reached in the same timing where that is more). No kernel "
                "can do the lab's work that fast, so the timing cannot be trusted and earns "
                "no speed points.",
                kernel=lab.kernel.name,
            )
    return None


# -- measuring ---------------------------------------------------------------------------


Drawn = tuple[int, Case, dict[str, np.ndarray]]  # a timing's seed, case and host inputs


def draw_ahead(lab: Lab, seed: int | None) -> Future[Drawn]:
    """The timing's inputs from `seed` (a fresh one where None), drawn in a thread while
    the cases run: a sparse matrix's structure at the timed size costs the host 0.3 s."""
    seed = seed if seed is not None else secrets.randbits(63)
    pool = ThreadPoolExecutor(max_workers=1)
    drawn = pool.submit(lambda: (seed, *casegen.timing_inputs(lab, seed)))
    pool.shutdown(wait=False)
    return drawn


@dataclass
class Ready:
    """A timing made ready before its turn: the timing case at the drawn sizes, both
    kernels built at them, their launches, and the expected samples of the timed launches,
    being computed (Expected, started: `close` ends it)."""

    case: Case
    student: Build
    reference: Build
    launches: tuple[Launch, Launch]
    expected: Expected

    def close(self) -> None:
        self.expected.close()


def get_ready(
    lab: Lab, submission: Submission, backend: Backend, drawn: Future[Drawn], shared: bool
) -> Ready:
    """The timing of `submission` made ready on the inputs `drawn` (draw_ahead). Every
    launch the timing may check is computed ahead (Expected) where each launch's samples
    read LAUNCH_INPUTS inputs or more (histogram's whole 32 MiB, scan's 1 Mi), unless
    other gradings `shared` the host's cores; else the launches most timings make. Cheap
    samples gain nothing from it (those left after the timing take milliseconds), and
    computed ahead by the hundred (conv2d's 164 launches at 3 ms, spmv-jds's 201 at 6 ms)
    they would cost up to a CPU-second for launches never made."""
    seed, case, host = drawn.result()
    macros = lab.macro_values(case.sizes)
    reference_sub, _ = read_submission(lab.home / "reference.cu")
    student = backend.build(submission, macros, lab.launch_defaults)
    reference = backend.build(reference_sub, macros, lab.launch_defaults)
    # One set of buffers for both kernels, so both read the same device memory.
    launches = timing_launches(lab, case, host, student.interface, reference.interface)
    sized = at_launch(lab, case, student.interface)
    check, read = planned(lab, sized, seed, host)
    costly = read >= LAUNCH_INPUTS and not shared
    ahead = check.launches if costly else check.usual_launches
    expected = Expected(lab, sized, check, host, ahead).start()
    return Ready(case, student, reference, launches, expected)


def ready_ahead(
    lab: Lab,
    submission: Submission,
    backend: Backend,
    drawn: Future[Drawn],
    shared: bool = False,
) -> Future[Ready]:
    """get_ready in a thread of its own, so that the builds at the timed size and the
    expected samples are made while the cases run."""
    return in_background(
        lambda: get_ready(lab, submission, backend, drawn, shared), name="grader-timing"
    )


def close_when_ready(ready: Future[Ready]) -> None:
    """Close the timing's Ready once it is made (at once if it is), stopping what it
    computes still: the grading ends, or will not time."""
    ready.add_done_callback(lambda made: made.exception() is None and made.result().close())


def measure(
    lab: Lab,
    backend: Backend,
    budget: float,
    ready: Future[Ready],
    profiles: tuple[Profile | None, Profile | None] = (None, None),
    forfeited: bool = False,
) -> tuple[Performance, list[Diagnostic], Roofline | None]:
    """The student's speed against the reference's, with every timed student launch
    checked (above), within `budget` seconds, as made `ready` (ready_ahead); what makes
    the timing untrustworthy, which costs the speed points; and, where the timing is
    trusted, the roofline of both kernels (their `profiles`, student's and reference's,
    where measured). Where the speed points are `forfeited` (a broken lab rule), timing
    stops after the least rounds: no more could change the points."""
    made = ready.result()
    case, expected = made.case, made.expected
    scoring = lab.scoring
    scored = None if forfeited else (scoring.zero_speedup, scoring.target_speedup)
    check = replace(expected.check, scored=scored)
    with expected:
        timing = backend.time(made.student, made.reference, made.launches, budget, check)
        performance = performance_of(lab, case, timing)
        untrusted = judge(expected, timing, performance.student_ms, performance.reference_ms)
    if untrusted:
        performance.score = 0.0
        performance.note = f"{performance.note} Not scored: {untrusted[0].message}".strip()
        return performance, untrusted, None
    if timing.checked:
        performance.note += (
            f" Each of the {timing.checked} timed launches of the kernel ran on fresh random "
            "inputs and its output was checked."
        )
    if not timing.student_ms or not timing.ceilings:
        return performance, untrusted, None
    ceilings = device_ceilings(backend.device(), timing.ceilings)
    return performance, untrusted, roofline(lab, case, performance, ceilings, profiles)


def performance_of(lab: Lab, case: Case, timing: Timing) -> Performance:
    """The speed of `timing` at the timing case's sizes (those shown), from its rounds'
    statistics (summarise); the backend's note on how it timed them ends with their
    spread."""
    sizes = case.shown_sizes
    if not timing.student_ms:
        return Performance(
            student_ms=0.0,
            reference_ms=0.0,
            speedup=0.0,
            spread=0.0,
            score=0.0,
            max_score=lab.scoring.performance,
            sizes=dict(sizes),
            note=timing.note or "Timing failed.",
        )
    summary = summarise(timing.student_ms, timing.reference_ms)
    return Performance(
        student_ms=statistics.median(timing.student_ms),
        reference_ms=statistics.median(timing.reference_ms),
        speedup=summary.speedup,
        spread=summary.spread if summary.rounds else 0.0,  # no round compared, no spread
        score=lab.scoring.performance_points(summary.speedup),
        max_score=lab.scoring.performance,
        sizes=dict(sizes),
        rounds=len(timing.student_ms),
        student_samples=list(timing.student_ms),
        reference_samples=list(timing.reference_ms),
        note=f"{timing.note}; the per-round speedup spread {summary.spread:.2%}.",
    )


# -- the roofline ------------------------------------------------------------------------


def roofline(
    lab: Lab,
    case: Case,
    performance: Performance,
    ceilings: dict[str, float],
    profiles: tuple[Profile | None, Profile | None] = (None, None),
) -> Roofline | None:
    """The timed kernels against the device's ceilings: each one's useful FLOPs and
    global-memory bytes at the timed size (`case`, with the sizes its draw defined) over
    its median time. None without both ceilings."""
    if ceilings.get("flops", 0.0) <= 0 or ceilings.get("bytes", 0.0) <= 0:
        return None
    flops = lab.work(case.sizes)[0]
    times = (performance.student_ms, performance.reference_ms)
    student, reference = (
        RooflinePoint(ms, flops, *traffic(lab, case, profile))
        for ms, profile in zip(times, profiles, strict=True)
    )
    return Roofline(ceilings["flops"], ceilings["bytes"], student, reference)


def traffic(lab: Lab, case: Case, profile: Profile | None) -> tuple[float, Counted]:
    """A launch's global-memory bytes at `case`, and which bytes they are. From a profile:
    DRAM's, where Nsight Compute counted them at these very sizes; otherwise the bytes
    its loads and stores asked for (cache hits among them: at least what DRAM moves),
    counted at the profile's case and scaled to this one by the lab's useful FLOPs, per
    which a kernel's requests do not change with the size (by its least traffic, where
    the lab counts no FLOPs). Without a profile, the lab's least traffic: each input read
    once and each output written once, at most what DRAM moves."""
    flops, least = lab.work(case.sizes)
    if profile is None:
        return least, Counted.LEAST
    if profile.dram_bytes is not None and dict(profile.sizes) == case.shown_sizes:
        return profile.dram_bytes, Counted.DRAM
    asked = profile.total("global_loads").bytes + profile.total("global_stores").bytes
    if flops > 0 and profile.useful_flops > 0:
        return asked * flops / profile.useful_flops, Counted.REQUESTED
    try:
        least_there = lab.work(profile.sizes)[1]
    except KeyError:  # a size the lab's draw defined, which a profile does not keep
        return least, Counted.LEAST
    return (asked * least / least_there if least_there > 0 else least), Counted.REQUESTED


def device_ceilings(device: str, measured: dict[str, float]) -> dict[str, float]:
    """The best fp32 peak and copy bandwidth `device` has measured so far, `measured`
    among them, kept in the grader's cache: a timing that shared the GPU with other work
    measures lower ceilings, which would put a kernel nearer its roof than it is. What
    judges a time possible (`reached`) takes the timing's own, as before."""
    digest = hashlib.sha256(device.encode()).hexdigest()[:32]
    path = defaults.cache_dir() / "ceilings" / f"{digest}.json"
    try:
        known = json.loads(path.read_text())
        best = {k: max(float(known[k]), float(measured.get(k, 0.0))) for k in CEILINGS}
    except (OSError, ValueError, TypeError, KeyError):
        known, best = None, {k: float(measured.get(k, 0.0)) for k in CEILINGS}
    if best != known:
        with contextlib.suppress(OSError):
            write_atomically(path, json.dumps(best))
    return best
