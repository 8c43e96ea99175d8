"""Where a batch's time goes: each stage of grading a submission, summed over the course.

A worker times its backend's calls (`Clocked`): compiles, case runs (the sanitizer's and
the profile run's too) and timing, and on a GPU the CPU model's builds and profile runs
(grader.grading.profiles opens a CPU backend of its own for them), and the rest of the
grading (inputs, expected outputs, judging) is what is left of it. The CPU model runs
beside the cases (BESIDE): its seconds are not part of that sum, and the rest of grading
holds what the grading waited for it after its cases. The batch times the workers'
start-up and the writing of each submission's reports. On a GPU, a case run holds the
GPU alone from its buffers' placing to their freeing, and timing holds it alone
(grader.course.gpus); the waits at that gate are a stage of their own (the cuda worker
takes the gate itself and says how long it waited). A timing and a case run also say
where their seconds went, phase by phase, on the GPU worker's clock
(grader.backends.window): the batch sums those too. Only figures for `bench/batch.py`:
nothing here changes a grade."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from grader.backends import window
from grader.backends.base import Backend, Wrapper
from grader.backends.timing import TimingCheck
from grader.model.interface import LaunchDefaults
from grader.model.launch import Build, Launch, RunOutcome, Timing
from grader.model.profile import KernelProfile
from grader.model.result import Diagnostic
from grader.model.source import Submission

WORKER_START = "worker start"
COMPILE = "compile"
CASES = "cases"
TIMING = "timing"
WAITING = "waiting at gate"
HELD_ALONE = "held alone"  # not a stage: the part of timing's seconds inside the gate
CPU_MODEL = "CPU model"  # on a GPU: the model's census builds and profile runs, on the CPU
GRADING = "rest of grading"
REPORTS = "reports"
STAGES = (WORKER_START, COMPILE, CASES, TIMING, WAITING, CPU_MODEL, GRADING, REPORTS)
BESIDE = (CPU_MODEL,)  # stages run beside the others: their seconds overlap the others'
# the stages that hold a GPU, and how (gpus.Gate)
GPU = {CASES: "alone: buffers to freeing", TIMING: "alone"}
TIMED = (COMPILE, CASES, TIMING)  # what a worker's backend times
# a timing's and the case runs' phases, beside the stages (not a share of the wall)
WINDOW = window.PHASES + window.CASE_PHASES


class Clocked(Wrapper):
    """A backend whose builds, runs and timings are timed, by stage. Builds made at
    once (grader.ahead) add up their own times."""

    def __init__(self, inner: Backend, waits: Counter[str] | None = None) -> None:
        super().__init__(inner)
        self.seconds: Counter[str] = Counter()
        # seconds the stages' calls waited at the GPU's gate, by stage (grader.course.gpus)
        self.waits: Counter[str] = waits if waits is not None else Counter()
        self.window: Counter[str] = Counter()  # the timings' phases (grader.backends.window)

    @contextmanager
    def _stage(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] += time.monotonic() - start

    def build(
        self,
        submission: Submission,
        macros: dict[str, int],
        launch_defaults: LaunchDefaults,
        census: bool = False,
    ) -> Build:
        with self._stage(COMPILE):
            return self.inner.build(submission, macros, launch_defaults, census)

    def run(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        with self._stage(CASES):
            return self._phases(self.inner.run(build, launch, timeout))

    def run_in_grid_order(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        with self._stage(CASES):
            return self._phases(self.inner.run_in_grid_order(build, launch, timeout))

    def profile(
        self, build: Build, launch: Launch, timeout: float
    ) -> tuple[RunOutcome, list[KernelProfile]]:
        with self._stage(CASES):
            outcome, profiles = self.inner.profile(build, launch, timeout)
        return self._phases(outcome), profiles

    def _phases(self, outcome: RunOutcome) -> RunOutcome:
        self.window.update(outcome.window)
        return outcome

    def model_of(self, model: Backend) -> Backend:
        return ModelClocked(self.inner.model_of(model), self)

    def time(
        self,
        student: Build,
        reference: Build,
        launches: tuple[Launch, Launch],
        budget: float,
        check: TimingCheck | None = None,
    ) -> Timing:
        with self._stage(TIMING):
            timing = self.inner.time(student, reference, launches, budget, check)
        self.window.update(timing.window)
        return timing

    def sanitize(
        self, build: Build, launches: list[Launch], timeout: float
    ) -> list[list[Diagnostic]]:
        with self._stage(CASES):
            return self.inner.sanitize(build, launches, timeout)

    def take(self, graded: float) -> dict[str, float]:
        """The stages of the grading that took `graded` seconds, since the last take, and
        its timings' phases (WINDOW)."""
        stages = {name: self.seconds[name] - self.waits[name] for name in TIMED}
        if HELD_ALONE in self.waits:  # timing's module loads before the gate are grading's
            stages[TIMING] = self.waits[HELD_ALONE]
        stages[WAITING] = sum(self.waits[name] for name in TIMED)
        stages[GRADING] = max(0.0, graded - sum(stages.values()))
        stages[CPU_MODEL] = self.seconds[CPU_MODEL]  # BESIDE: not part of the sum
        phases = {name: self.window[name] for name in WINDOW if name in self.window}
        self.seconds.clear()
        self.waits.clear()
        self.window.clear()
        return {**stages, **phases}


class ModelClocked(Clocked):
    """The CPU model's backend on a GPU grading (Backend.model_of): its builds and profile
    runs are the CPU_MODEL stage of the grading's clock, not its compiles and cases."""

    def __init__(self, inner: Backend, grading: Clocked) -> None:
        super().__init__(inner)
        self.seconds = grading.seconds

    def _stage(self, name: str):
        return super()._stage(CPU_MODEL)


def read(message: object) -> dict[str, float]:
    """A worker's stages and timings' phases as it sent them, with anything else left
    out."""
    return window.read(message, STAGES + WINDOW)
