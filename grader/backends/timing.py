"""Timing, the part the grader and a backend's worker share: how long to keep timing a
pair of launches (Plan) and what the rounds say (summarise, where every statistic of them
is computed), and what checked timing computes on and which outputs it reads back. The
grader's side of timing is grader.grading.timing.

Each round times the student and the reference launch once, back to back, so the
per-round ratio reference/student cancels slow drifts of the clock. Timing stops once
the median of the ratios is known well enough (its standard error, estimated from their
interquartile range, is under the target share of it), once no more rounds could change
the points (every ratio past where they stop changing, or none to earn) and the median
shown is known to a looser share, or when the next round would not fit the budget.

Before every timed launch of the student's kernel, the GPU draws fresh inputs with a
counter-based generator: word i of an input is a hash of i and a 64-bit key. A float32
element i is word i made into a float in +-[0.5, 1.0) by bit operations alone; a 4-byte
integer element is word i itself; a 1-byte element i is byte i % 4 of word i / 4 (little
endian), so the host recomputes any element exactly. Each launch gets its own keys,
derived with SHA-256 from a seed drawn for the grading, so no output can be remembered
from an earlier launch or computed beforehand; the reference's launch of the same number
shares them, and its outputs are poisoned before the student's launch. Inputs whose
values matter (a sparse matrix's indices) are the exception: the host draws them with the
lab's own generator, once per grading, and they are uploaded, then restored before every
launch, so that a kernel that changes them changes nothing for the next. After the
launch, a sample of output elements (a grid of random rows and columns, the first and
last always among them) is read back; its coordinates come from the same seed and reach
the GPU only once the launch is over (the reference's launch of the same number reads
its sample elsewhere, sample_launch).

The grader and the GPU worker both import this module: the worker to draw and gather
and to know when to stop, the grader to recompute the sampled elements in float64 and to
report what the rounds say."""

from __future__ import annotations

import hashlib
import math
import statistics
from dataclasses import dataclass, field

import numpy as np

from grader import defaults
from grader.backends import generator

# The generator's constants, written once: its C++ (generator.h) gets them as macros.
GOLDEN = 0x9E3779B1
MIX = (0x7FEB352D, 0x846CA68B)
KEEP_BITS = 0x807FFFFF  # sign and mantissa of the hash
EXPONENT_BITS = 126 << 23  # exponent of [0.5, 1.0)

SAMPLE_ELEMENTS = 4096  # elements read back after each launch (fewer if the output is small)
# Words the host hashes at a time: few enough that a pass stays in the CPU's cache, and
# enough that threads computing several launches' samples at once seldom wait for the
# interpreter's lock between numpy calls (at 1 << 16, 8 of histogram's 32 MiB launches
# took as long on 8 threads as on 1; at 1 << 18, a half: H100 machine, 16 cores).
CHUNK = 1 << 18
REFERENCE_SAMPLES = 1 << 30  # the reference's sample numbers start here (sample_launch)


# For normal data sigma is IQR / 1.349, and the median's standard error is
# 1.2533 sigma / sqrt(n): this factor times the relative spread, over sqrt(n).
MEDIAN_ERROR_PER_SPREAD = 1.2533 / 1.349
# TimingCheck.scored where every speedup scores differently: points never stop a timing
EVERY_SPEEDUP = (0.0, math.inf)


@dataclass(frozen=True)
class Plan:
    """When to stop timing a pair: once the median speedup is known to `target_error`
    (a brief kernel's to `brief_error`), after at least the least rounds (least_rounds),
    at `max_rounds`, or before a round that would overrun the budget; or, after the least
    rounds, once the points are known (points_known) and the median to `shown_error` (a
    long round's to `long_shown_error`, a brief one's to `brief_error`). One rule sets
    whether the first pair is a round and the least rounds from what a round costs
    (long)."""

    budget_s: float
    target_error: float = defaults.TIMING_TARGET_ERROR
    shown_error: float = defaults.TIMING_SHOWN_ERROR
    long_shown_error: float = defaults.TIMING_LONG_SHOWN_ERROR
    min_rounds: int = defaults.TIMING_MIN_ROUNDS
    max_rounds: int = defaults.TIMING_MAX_ROUNDS
    long_round_s: float = defaults.TIMING_LONG_ROUND
    long_min_rounds: int = defaults.TIMING_LONG_MIN_ROUNDS
    scored: tuple[float, float] | None = EVERY_SPEEDUP  # TimingCheck.scored
    brief_round_s: float = defaults.TIMING_BRIEF_ROUND
    brief_error: float = defaults.TIMING_BRIEF_ERROR

    def long(self, round_s: float) -> bool:
        """Whether a round of `round_s` seconds is long: a slow kernel's. The first pair
        kept the GPU busy for half of it or more, 9 ms at least: time for the clocks to
        rise, and every page and the code were touched; the L2 is flushed before every
        run anyway, so that pair is a round like the rest (tests/gpu/test_timing.py holds
        it to the median). And such a run varies by a far smaller share of it than a
        short one's launch and event jitter: a few rounds tell its median."""
        return round_s >= self.long_round_s

    def counts_first(self, round_s: float) -> bool:
        """Whether the first pair of runs is a round, for rounds of `round_s` s: a long
        round's is (long); a short round's loaded the code and raised the clocks, its
        only warm-up. On the H200, one pair fewer moved no kernel's points, nor its worst
        speedup more than 0.2% further from the truth (bench/timing_policies.py), and a
        batch's window runs one pair fewer a submission (issue 36)."""
        return self.long(round_s)

    def brief(self, student_ms: list[float], reference_ms: list[float]) -> bool:
        """Whether the rounds are a brief kernel's: the two runs' median times together
        under `brief_round_s` (defaults.TIMING_BRIEF_ROUND says why it matters)."""
        if not student_ms:
            return False
        kernels_ms = statistics.median(student_ms) + statistics.median(reference_ms)
        return kernels_ms / 1000 < self.brief_round_s

    def errors(
        self, student_ms: list[float], reference_ms: list[float], round_s: float
    ) -> tuple[float, float]:
        """The precision of the median that stops timing, and the one that stops it
        once the points are known."""
        if self.long(round_s):
            return self.target_error, self.long_shown_error
        if self.brief(student_ms, reference_ms):
            return self.brief_error, self.brief_error
        return self.target_error, self.shown_error

    def least_rounds(self, round_s: float) -> int:
        """Rounds timed before the median's precision may stop timing."""
        if self.long(round_s):
            return min(self.min_rounds, self.long_min_rounds)
        return self.min_rounds

    def points_known(self, student_ms: list[float], reference_ms: list[float]) -> bool:
        """Whether more rounds could not change the points: none ride on the speed
        (`scored` None), or every round's speedup is past where they stop changing by
        TIMING_POINTS_MARGIN (below the zero, or above the target)."""
        if self.scored is None:
            return True
        ratios = speedups(student_ms, reference_ms)
        low, high = self.scored
        margin = 1 + defaults.TIMING_POINTS_MARGIN
        return bool(ratios) and (max(ratios) * margin <= low or min(ratios) >= high * margin)

    def stop_reason(
        self,
        student_ms: list[float],
        reference_ms: list[float],
        elapsed_s: float,
        round_s: float,
    ) -> str | None:
        """Why to stop now, or None to time another round. `round_s` is what one more
        round is expected to cost."""
        rounds = len(student_ms)
        if rounds >= self.least_rounds(round_s):
            error = summarise(student_ms, reference_ms).error
            target, shown_error = self.errors(student_ms, reference_ms, round_s)
            if error < target:
                return f"the median speedup is known to ±{error:.2%}"
            shown = error < shown_error
            if shown and self.points_known(student_ms, reference_ms):
                return (
                    "no more rounds could change the points, and the median speedup is "
                    f"known to ±{error:.2%}"
                )
        if rounds >= self.max_rounds:
            return f"reached {self.max_rounds} rounds"
        if elapsed_s + round_s > self.budget_s:
            return f"the {self.budget_s:g} s budget is spent"
        return None


@dataclass(frozen=True)
class Summary:
    """What a timing's rounds say of the speedup, a round's being the reference's time over
    the student's: `rounds` such ratios (none from a round whose student time is not above
    zero), their median, and their relative spread (interquartile range over the median;
    infinite where no ratio, or a median of zero, leaves none to tell)."""

    rounds: int
    speedup: float
    spread: float

    @property
    def error(self) -> float:
        """The standard error of the median speedup, relative to it (a spread that no more
        rounds make smaller still gives a median as precise as wanted)."""
        if not self.rounds:
            return math.inf
        return MEDIAN_ERROR_PER_SPREAD * self.spread / math.sqrt(self.rounds)


def summarise(student_ms: list[float], reference_ms: list[float]) -> Summary:
    """The rounds' statistics, the one place they are computed: what the worker stops on
    and what the grader reports."""
    ratios = speedups(student_ms, reference_ms)
    if not ratios:
        return Summary(0, 0.0, math.inf)
    middle = statistics.median(ratios)
    return Summary(len(ratios), middle, _spread(ratios, middle))


def speedups(student_ms: list[float], reference_ms: list[float]) -> list[float]:
    """Each round's speedup, the reference's time over the student's (none from a round
    whose student time is not above zero)."""
    return [r / s for s, r in zip(student_ms, reference_ms, strict=True) if s > 0]


def _spread(values: list[float], middle: float) -> float:
    """Interquartile range over the median `middle` (the range itself below four values)."""
    if middle <= 0:
        return math.inf
    if len(values) < 4:
        return (max(values) - min(values)) / middle
    q1, _, q3 = statistics.quantiles(values, n=4)
    return (q3 - q1) / middle


@dataclass(frozen=True)
class Sample:
    """Which elements of one output are read back: a grid of `counts[a]` coordinates
    along each logical axis `a` (slowest first), in a buffer where one step along axis
    `a` is `strides[a]` elements."""

    buffer: str
    extents: tuple[int, ...]
    strides: tuple[int, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True)
class TimingCheck:
    """How timing keeps the student honest. Before each student launch the `inputs`
    are drawn afresh, the `restored` inputs (which the host drew and uploaded: a sparse
    matrix's structure) get their uploaded values back, and the outputs are poisoned;
    after it, each of `samples` is read back. Without samples, timing still draws its
    inputs. `scored`: the speedups between which the points change (Scoring's zero and
    target), or None where no speed earns points (a broken lab rule forfeits them):
    timing stops once more rounds could not change them (Plan.points_known)."""

    seed: int
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    samples: tuple[Sample, ...] = field(default_factory=tuple)
    zeroed: tuple[str, ...] = ()  # outputs that start at zero (accumulators), not poisoned
    rounds: int = defaults.TIMING_MAX_ROUNDS  # at most: what the host can check in time
    restored: tuple[str, ...] = ()
    scored: tuple[float, float] | None = EVERY_SPEEDUP

    @property
    def launches(self) -> int:
        """The most student launches a timing makes: the first, then rounds."""
        return 1 + self.rounds

    @property
    def usual_launches(self) -> int:
        """The student launches of a short round's timing that stops as soon as it may
        (Plan: the first, then the least rounds): most timings make no more, a slow
        kernel's fewer."""
        return min(self.launches, 1 + defaults.TIMING_MIN_ROUNDS)

    def to_json(self) -> dict:
        return {
            "seed": self.seed,
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "zeroed": list(self.zeroed),
            "rounds": self.rounds,
            "restored": list(self.restored),
            "scored": None if self.scored is None else list(self.scored),
            "samples": [
                {
                    "buffer": s.buffer,
                    "extents": list(s.extents),
                    "strides": list(s.strides),
                    "counts": list(s.counts),
                }
                for s in self.samples
            ],
        }

    @classmethod
    def from_json(cls, data: dict) -> TimingCheck:
        samples = tuple(
            Sample(s["buffer"], tuple(s["extents"]), tuple(s["strides"]), tuple(s["counts"]))
            for s in data["samples"]
        )
        scored = data.get("scored", EVERY_SPEEDUP)
        return cls(
            int(data["seed"]),
            tuple(data["inputs"]),
            tuple(data["outputs"]),
            samples,
            tuple(data.get("zeroed", ())),
            int(data.get("rounds", defaults.TIMING_MAX_ROUNDS)),
            tuple(data.get("restored", ())),
            None if scored is None else tuple(scored),
        )


def generator_macros() -> dict[str, str]:
    """The constants of the device generator, as -D values for the worker's helper module."""
    values = {
        "GOLDEN": GOLDEN,
        "MIX_A": MIX[0],
        "MIX_B": MIX[1],
        "KEEP_BITS": KEEP_BITS,
        "EXPONENT_BITS": EXPONENT_BITS,
    }
    return {name: f"{value:#x}u" for name, value in values.items()}


def launch_key(seed: int, launch: int, buffer: str) -> tuple[int, int]:
    """The two 32-bit key words of `buffer` at launch number `launch` of either kernel:
    both kernels of a round compute on the same inputs, so that an input-dependent cost
    (a histogram's contended bins) weighs on both alike."""
    digest = _digest(seed, "input", launch, buffer)
    return int.from_bytes(digest[:4], "little"), int.from_bytes(digest[4:8], "little")


def drawn_values(key: tuple[int, int], flat: np.ndarray) -> np.ndarray:
    """The float32 values the device generator writes at buffer elements `flat`."""
    return drawn_elements(key, flat, np.float32)


def drawn_elements(key: tuple[int, int], flat: np.ndarray, dtype) -> np.ndarray:
    """The values the device generator writes at elements `flat` of a buffer of `dtype`."""
    dtype = np.dtype(dtype)
    flat = np.asarray(flat)
    if dtype.itemsize == 1:
        shift = (flat.astype(np.uint32) & np.uint32(3)) * np.uint32(8)
        words = _words(key, flat.astype(np.int64) >> 2)
        return ((words >> shift) & np.uint32(0xFF)).astype(np.uint8).view(dtype)
    return _typed(_words(key, flat), dtype)


def drawn_array(key: tuple[int, int], elements: int, dtype) -> np.ndarray:
    """A whole buffer of `elements` elements of `dtype` as the device generator draws it
    (for 1-byte types, four elements per word hashed)."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 1:
        words = _stream(key, -(-elements // 4)).astype("<u4", copy=False)
        return words.view(np.uint8)[:elements].view(dtype)
    return _typed(_stream(key, elements), dtype)


def _typed(words: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Words as the 4-byte elements the generator makes of them."""
    if dtype.kind == "f":
        return ((words & np.uint32(KEEP_BITS)) | np.uint32(EXPONENT_BITS)).view(np.float32)
    return words.view(dtype)


def _words(key: tuple[int, int], index: np.ndarray) -> np.ndarray:
    """Word `index` of the generator's stream under `key`."""
    index = np.asarray(index)
    flat = index.reshape(-1)
    out = np.empty(flat.size, np.uint32)
    scratch = np.empty(min(CHUNK, flat.size), np.uint32)
    for start in range(0, flat.size, CHUNK):
        x = out[start : start + CHUNK]
        x[...] = flat[start : start + CHUNK]  # wraps to 32 bits, as the device's index does
        _hash(x, key, scratch[: x.size])
    return out.reshape(index.shape)


def _stream(key: tuple[int, int], count: int) -> np.ndarray:
    """Words 0 to `count` - 1 of the generator's stream under `key`: the host's build of
    the generator where there is one, else numpy's (_hashed_stream)."""
    built = generator.words(key, count, generator_macros())
    return built if built is not None else _hashed_stream(key, count)


def _hashed_stream(key: tuple[int, int], count: int) -> np.ndarray:
    """_stream in numpy, with no index array."""
    out = np.empty(count, np.uint32)
    steps = np.arange(min(CHUNK, count), dtype=np.uint32)
    scratch = np.empty_like(steps)
    for start in range(0, count, CHUNK):
        x = out[start : start + CHUNK]
        np.add(steps[: x.size], np.uint32(start), out=x)
        _hash(x, key, scratch[: x.size])
    return out


def _hash(x: np.ndarray, key: tuple[int, int], scratch: np.ndarray) -> None:
    """Indices `x` made into the generator's words, in place, a chunk at a time: the passes
    then stay in the CPU's cache and allocate nothing, three times faster than whole
    arrays of temporaries (histogram's check hashes 8 Mi words per launch)."""
    x *= np.uint32(GOLDEN)
    x += np.uint32(key[0])
    _mix(x, scratch)
    x ^= np.uint32(key[1])
    _mix(x, scratch)


def _mix(x: np.ndarray, scratch: np.ndarray) -> None:
    """The generator's finalizer, applied to `x` in place."""
    for multiplier, shift in ((MIX[0], 16), (MIX[1], 15), (None, 16)):
        np.right_shift(x, np.uint32(shift), out=scratch)
        x ^= scratch
        if multiplier is not None:
            x *= np.uint32(multiplier)


def sample_counts(extents: tuple[int, ...], total: int = SAMPLE_ELEMENTS) -> tuple[int, ...]:
    """Coordinates per axis for a grid of about `total` elements: the same number along
    every axis, all of an axis that is shorter, the rest spread over the longer ones."""
    counts = [0] * len(extents)
    left, axes = float(total), sorted(range(len(extents)), key=lambda a: extents[a])
    for done, axis in enumerate(axes):
        share = left ** (1.0 / (len(axes) - done))
        counts[axis] = max(1, min(extents[axis], math.ceil(share)))
        left /= counts[axis]
    return tuple(counts)


def sample_axes(sample: Sample, seed: int, launch: int) -> tuple[np.ndarray, ...]:
    """The sampled coordinates along each axis for the student's launch `launch`:
    sorted, distinct, always with the first and the last."""
    words = np.frombuffer(_digest(seed, "sample", launch, sample.buffer), "<u8")
    rng = np.random.default_rng(words)
    axes = []
    for extent, count in zip(sample.extents, sample.counts, strict=True):
        if count >= extent:
            axes.append(np.arange(extent, dtype=np.int64))
            continue
        inner = 1 + rng.choice(extent - 2, size=max(count - 2, 0), replace=False)
        ends = [0, extent - 1] if count >= 2 else [0]
        axes.append(np.unique(np.concatenate([ends, inner]).astype(np.int64)))
    return tuple(axes)


def grid(axes: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """The axes shaped to broadcast into the sampled grid."""
    n = len(axes)
    return tuple(ax.reshape([-1 if a == i else 1 for a in range(n)]) for i, ax in enumerate(axes))


def flat_indices(strides: tuple[int, ...], index) -> np.ndarray:
    """Buffer elements of logical coordinates `index` (arrays that broadcast together)."""
    shape = np.broadcast_shapes(*(np.shape(i) for i in index))
    flat = np.zeros((), np.int64)
    for c, stride in zip(index, strides, strict=True):
        c = np.asarray(c, np.int64)
        flat = flat + (c if stride == 1 else c * stride)  # the small axes multiply first
    return np.broadcast_to(flat, shape)


def sample_launch(student: bool, launch: int) -> int:
    """The number whose sample coordinates launch `launch` of a kernel reads. The
    reference's launch n reads its own, far from any the student's launches use: were
    they the student's launch n's, those coordinates and the reference's right values
    there would sit on the GPU before the student's launch in every round the reference
    runs first."""
    return launch if student else REFERENCE_SAMPLES + launch


def sample_elements(sample: Sample, seed: int, launch: int) -> np.ndarray:
    """The buffer elements read back after launch `launch`, in the grid's C order."""
    return flat_indices(sample.strides, grid(sample_axes(sample, seed, launch))).reshape(-1)


def _digest(seed: int, purpose: str, launch: int, name: str) -> bytes:
    text = f"{seed}/{purpose}/{launch}/{name}".encode()
    return hashlib.sha256(text).digest()
