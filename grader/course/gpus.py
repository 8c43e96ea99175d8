"""Which GPU each grading worker uses, and the gate that keeps timing alone on its GPU.

Several workers share a GPU for compiling and for the sanitizer. A correctness run
holds the GPU alone from the fill of shared memory to its kernel's end: the fill makes a
read of shared memory no thread wrote see NaN, as on the CPU backend, and another
worker's kernel between the fill and the launch would leave zeros there instead (a
matmul adding an unwritten shared array scored 3 points of 7 so under four test
processes, and 0 alone). On the cuda backend the GPU worker takes the gate itself for
the case's copies too (grader.backends.gate.alone_at). Timing holds it alone as well: a
kernel timed while another worker's kernel, or even its copies, run on the same GPU
looks slower than it is (the cuda worker takes it itself for the timing's buffers and
runs, and says how long it waited and held it). So each GPU has a gate (grader.backends.gate):
the sanitizer holds it shared, correctness runs and timing alone."""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from grader.backends import gate as gpu_gate
from grader.backends import window
from grader.backends.base import Backend, Wrapper
from grader.backends.timing import TimingCheck
from grader.course import stages
from grader.errors import SetupError, UsageError
from grader.model.launch import Build, Launch, RunOutcome, Timing
from grader.model.result import Diagnostic

DEVICES_ENV = "CUDA_VISIBLE_DEVICES"


def parse_gpus(text: str | None) -> list[int]:
    """`--gpus 0,1,3` as a list of GPU indices; None or "" for none given."""
    if not text:
        return []
    try:
        gpus = [int(part) for part in text.split(",")]
    except ValueError:
        gpus = [-1]
    if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
        raise UsageError(f"--gpus takes distinct GPU numbers separated by commas, not {text!r}.")
    return gpus


def require_gpus(gpus: list[int], backend: str) -> None:
    """Refuse GPUs that a batch would not use: --gpus with the cpu backend, or on a machine
    without a usable GPU (where auto would quietly grade on the CPU)."""
    if not gpus:
        return
    asked = f"--gpus {','.join(map(str, gpus))}"
    if backend == "cpu":
        raise UsageError(
            f"{asked} is for the cuda backend; --backend cpu grades without a GPU. Leave out "
            "--gpus, or use --backend cuda."
        )
    from grader.backends import gpu_status

    usable, why = gpu_status()
    if not usable:
        raise SetupError(
            f"{asked} asks for GPUs, but this machine has no usable NVIDIA GPU: "
            f"{why.rstrip('.')}. Leave out --gpus to grade on the CPU, or run the batch on a "
            "machine with a GPU (nvidia-smi should list it)."
        )


def physical_device(index: int) -> str:
    """What to put in a worker's CUDA_VISIBLE_DEVICES for GPU `index` of this process.
    When the batch itself was given a subset (as Slurm does), index counts within it."""
    visible = os.environ.get(DEVICES_ENV)
    if not visible:
        return str(index)
    names = [name.strip() for name in visible.split(",") if name.strip()]
    if index >= len(names):
        raise UsageError(
            f"--gpus names GPU {index}, but only {len(names)} are visible here "
            f"({DEVICES_ENV}={visible})."
        )
    return names[index]


def gate_name(gpu: int | None) -> str:
    return f"gpu-{gpu}" if gpu is not None else "gpu-default"


class Gate:
    """Shared for the sanitizer, alone for correctness runs and timing; see the module's
    docstring. `waits` adds up the seconds spent waiting for it, by the stage that
    waited, and those it was held alone (grader.course.stages)."""

    def __init__(self, folder: Path, name: str, waits: Counter[str] | None = None) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.paths = gpu_gate.paths(folder, name)
        self._turnstile, self._lock = gpu_gate.opened(self.paths)
        self.waits: Counter[str] = waits if waits is not None else Counter()

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        started = time.monotonic()
        with gpu_gate.shared(self._turnstile, self._lock):
            self.waits[stages.CASES] += time.monotonic() - started
            yield

    def held_for_timing(self, waited: float, held: float) -> None:
        """Count a timing's wait and hold of the gate where the GPU worker took it."""
        self.waits[stages.TIMING] += waited
        self.waits[stages.HELD_ALONE] += held

    def waited_for_case(self, waited: float) -> None:
        """Count a case's waits at the gate where the GPU worker took it."""
        self.waits[stages.CASES] += waited

    @contextlib.contextmanager
    def alone(self, stage: str = stages.TIMING) -> Iterator[None]:
        started = time.monotonic()
        with gpu_gate.alone(self._turnstile, self._lock):
            held = time.monotonic()
            self.waits[stage] += held - started
            try:
                yield
            finally:
                if stage == stages.TIMING:
                    self.waits[stages.HELD_ALONE] += time.monotonic() - held

    def close(self) -> None:
        os.close(self._turnstile)
        os.close(self._lock)


class GatedBackend(Wrapper):
    """A backend whose GPU work passes through a Gate; everything else is delegated."""

    def __init__(self, inner: Backend, gate: Gate) -> None:
        super().__init__(inner)
        self.gate = gate
        innermost = inner
        while isinstance(innermost, Wrapper):
            innermost = innermost.inner
        # a backend whose GPU worker takes the gate itself, for the fill and the kernel
        self._worker_takes_it = hasattr(innermost, "launch_gate")
        if self._worker_takes_it:
            innermost.launch_gate = gate.paths

    def run(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        self.inner.load(build)  # a worker's start holds no gate: it runs no kernel
        if self._worker_takes_it:
            outcome = self.inner.run(build, launch, timeout)
            self.gate.waited_for_case(outcome.window.get(window.CASE_GATE, 0.0))
            return outcome
        with self.gate.alone(stages.CASES):  # the fill of shared memory, then the kernel
            return self.inner.run(build, launch, timeout)

    def time(
        self,
        student: Build,
        reference: Build,
        launches: tuple[Launch, Launch],
        budget: float,
        check: TimingCheck | None = None,
    ) -> Timing:
        self.inner.load(student)
        self.inner.load(reference)
        if not self._worker_takes_it:
            with self.gate.alone():
                return self.inner.time(student, reference, launches, budget, check)
        timing = self.inner.time(student, reference, launches, budget, check)
        phases = timing.window
        self.gate.held_for_timing(phases.get(window.GATE, 0.0), phases.get(window.HELD, 0.0))
        return timing

    def sanitize(
        self, build: Build, launches: list[Launch], timeout: float
    ) -> list[list[Diagnostic]]:
        with self.gate.shared():
            return self.inner.sanitize(build, launches, timeout)

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            self.gate.close()
