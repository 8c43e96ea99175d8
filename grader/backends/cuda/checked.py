"""Checked timing on the GPU (see grader.backends.timing): before each timed launch, draw
the inputs afresh (or restore those the host drew and uploaded: a kernel that changes a
sparse matrix's structure changes it for itself alone) and poison the outputs; after it,
read a sample of its outputs back. The reference's launches get the same work around
them, and its launch n the same inputs as the student's launch n, so that both kernels
start from the same state of the GPU and do the same work; only the student's samples
are kept. And the ceilings the grader holds student times against: the fp32 peak and the
copy bandwidth, measured here."""

from __future__ import annotations

import time

import numpy as np

from grader.backends.cuda import helpers
from grader.backends.cuda.gpu import DeviceBuffer, Gpu, failures
from grader.backends.timing import TimingCheck, launch_key, sample_elements, sample_launch

THREADS = 256
# The ceilings are the best of many short runs: a run that shares the GPU with another
# process's kernels (a second `grader check`) measures a lower ceiling, and one too low
# would call an honest kernel impossibly fast.
PEAK_ITERATIONS = 1 << 13  # fma_peak loop trips: about 0.6 ms on an H200
PEAK_REPEATS = 12
COPY_REPEATS = 12
SCRATCH_BYTES = 256 << 20  # copied half to half: several times any L2
FMA_PARAMS = (np.float32(0.999), np.float32(1e-3))  # keeps every chain bounded
DRAWS = {"float": "draw", "word": "draw_words", "byte": "draw_bytes"}  # helpers' kernels


def helper_module(gpu: Gpu, nvcc: str, arch: str):
    """The grader's own kernels, compiled once per worker, their cubin cached."""
    if gpu.helper is None:
        gpu.helper = gpu.compiled(helpers.SOURCE, helpers.options(), arch, nvcc, "helpers")
    return gpu.helper


class Checker:
    """Checked timing's work around each timed run, over the device buffers of one
    timing: the same for both kernels, but only the student's samples are kept."""

    def __init__(
        self, gpu: Gpu, module, check: TimingCheck, placed: dict[str, DeviceBuffer]
    ) -> None:
        self.gpu, self.check = gpu, check
        self.inputs = [placed[name] for name in check.inputs]
        self.outputs = [(placed[name], False) for name in check.outputs]
        self.outputs += [(placed[name], True) for name in check.zeroed]
        self.sampled = [(s, placed[s.buffer]) for s in check.samples]
        self.draws = {kind: module.get_function(name) for kind, name in DRAWS.items()}
        self.gathers = {1: module.get_function("gather_bytes"), 4: module.get_function("gather")}
        # launches so far of the student's kernel (True) and the reference's: launch n of
        # either gets launch n's inputs and sample
        self.runs = {True: 0, False: 0}
        self.pending: list[np.ndarray] = []  # the next sample's elements
        self.seconds = 0.0  # spent checking, outside the timed intervals
        self.values: list[list[np.ndarray]] = [[] for _ in check.samples]
        largest = max((int(np.prod(s.counts)) for s in check.samples), default=0)
        self.blocks = gpu.multiprocessors() * 8
        with failures("alloc"):
            self.index = gpu.cuda.mem_alloc(max(4 * largest, 4))
            self.picked = gpu.cuda.mem_alloc(max(4 * largest, 4))
            # a copy of each buffer the host uploaded, as uploaded
            self.kept = [
                (placed[n], gpu.cuda.mem_alloc(max(placed[n].nbytes, 1))) for n in check.restored
            ]
        with failures("copy"):
            for buffer, copy in self.kept:
                if buffer.nbytes:
                    gpu.cuda.memcpy_dtod(copy, buffer.address, buffer.nbytes)

    def before(self, student: bool) -> None:
        """Fresh inputs and poisoned outputs for the next launch, outside its timing."""
        started = time.perf_counter()
        number = self.runs[student]
        for placed in self.inputs:
            k0, k1 = launch_key(self.check.seed, number, placed.name)
            draw = self.draws[_draw_kind(placed.dtype)]
            with failures("draw"):
                draw(
                    np.uintp(placed.address),
                    np.uint64(placed.elements),
                    np.uint32(k0),
                    np.uint32(k1),
                    grid=(self.blocks, 1, 1),
                    block=(THREADS, 1, 1),
                )
        for placed, copy in self.kept:
            if placed.nbytes:
                with failures("copy"):
                    self.gpu.cuda.memcpy_dtod(placed.address, copy, placed.nbytes)
        for placed, zero in self.outputs:
            self.gpu.prepare(placed, zero)
        self.seconds += time.perf_counter() - started

    def prepare(self, student: bool) -> None:
        """The coordinates of the launch's sample, computed on the host once it is
        queued, while it runs: they reach the GPU only in after()."""
        started = time.perf_counter()
        self.pending = [
            sample_elements(
                sample, self.check.seed, sample_launch(student, self.runs[student])
            ).astype(np.uint32)
            for sample, _ in self.sampled
        ]
        self.seconds += time.perf_counter() - started

    def after(self, student: bool) -> None:
        """Read the launch's sample back; its coordinates reach the GPU only now. The
        reference's is read too, and dropped: a read after the student's runs alone
        made them 3% slower than the same kernel's (scan, on an H200)."""
        started = time.perf_counter()
        sampled = zip(self.sampled, self.values, self.pending, strict=True)
        for (_, placed), values, flat in sampled:
            got = np.empty(flat.size, placed.dtype)
            with failures("gather"):
                self.gpu.cuda.memcpy_htod(self.index, flat)
                self.gathers[placed.itemsize](
                    np.uintp(placed.address),
                    self.index,
                    self.picked,
                    np.int32(flat.size),
                    grid=(-(-flat.size // THREADS), 1, 1),
                    block=(THREADS, 1, 1),
                )
                self.gpu.cuda.memcpy_dtoh(got, self.picked)
            if student:
                values.append(got)
        self.runs[student] += 1
        self.seconds += time.perf_counter() - started

    def result(self) -> tuple[dict, list[np.ndarray]]:
        """The header entries and arrays of the reply: launches checked, and per sample
        an array of (launches, elements)."""
        arrays = [
            np.stack(v) if v else np.empty((0, int(np.prod(s.counts))), np.float32)
            for (s, _), v in zip(self.sampled, self.values, strict=True)
        ]
        head = {
            "checked": self.runs[True],
            "sampled": [s.buffer for s, _ in self.sampled],
            "check_seconds": self.seconds,
        }
        return head, arrays

    def free(self) -> None:
        self.index.free()
        self.picked.free()
        for _, copy in self.kept:
            copy.free()


def _draw_kind(dtype: np.dtype) -> str:
    """Which of the generator's kernels draws a buffer of `dtype` (grader.backends.timing)."""
    if dtype.itemsize == 1:
        return "byte"
    return "float" if dtype.kind == "f" else "word"


def ceilings(gpu: Gpu, module) -> dict:
    """The fp32 peak (flop/s) and the device-to-device copy bandwidth (bytes read and
    written per second), each the best of a few runs; measured once per worker."""
    if gpu.measured is None:
        with failures("alloc"):
            scratch = gpu.cuda.mem_alloc(SCRATCH_BYTES)
        try:
            gpu.measured = {
                "flops": _fp32_peak(gpu, module),
                "bytes": _copy_bandwidth(gpu, scratch, SCRATCH_BYTES),
            }
        finally:
            scratch.free()
    return gpu.measured


def _fp32_peak(gpu: Gpu, module) -> float:
    function = module.get_function("fma_peak")
    blocks = gpu.multiprocessors() * 8
    flops = 2.0 * helpers.FMA_CHAINS * PEAK_ITERATIONS * blocks * THREADS
    best = 0.0
    for _ in range(PEAK_REPEATS):
        ms = _event_ms(
            gpu,
            lambda: function(
                np.uintp(0),
                np.int32(PEAK_ITERATIONS),
                *FMA_PARAMS,
                grid=(blocks, 1, 1),
                block=(THREADS, 1, 1),
            ),
        )
        best = max(best, flops / (ms / 1e3))
    return best


def _copy_bandwidth(gpu: Gpu, scratch, scratch_bytes: int) -> float:
    half = scratch_bytes // 2
    source = int(scratch)
    best = 0.0
    for _ in range(COPY_REPEATS):
        ms = _event_ms(gpu, lambda: gpu.cuda.memcpy_dtod(source + half, source, half))
        best = max(best, 2.0 * half / (ms / 1e3))
    return best


def _event_ms(gpu: Gpu, work) -> float:
    start, end = gpu.cuda.Event(), gpu.cuda.Event()
    with failures("ceilings"):
        start.record()
        work()
        end.record()
    gpu.wait(end)
    with failures("ceilings"):
        return end.time_since(start)
