"""The contract every backend keeps. Grading talks to a backend only through these
methods and the data of grader.model.launch, so the CPU path never imports PyCUDA and
neither backend knows which lab it runs."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod

from grader.backends.timing import TimingCheck
from grader.model.interface import LaunchDefaults
from grader.model.launch import Build, Launch, RunOutcome, Timing
from grader.model.profile import KernelProfile
from grader.model.result import Diagnostic
from grader.model.source import Submission


class BackendUnavailable(Exception):
    """This backend cannot run here; the message says why, as a sentence."""


_NOTING = threading.Lock()


class Backend(ABC):
    name: str
    notes: list[str]  # sentences every report from this backend must carry
    details: list[str]  # sentences of how it ran, for -v only (a sandbox at full strength)

    def __init__(self) -> None:
        self.notes = []
        self.details = []

    def note(self, sentence: str, detail: bool = False) -> None:
        """Add a sentence every report must carry, once (builds made at once may each);
        with `detail`, one that only -v shows."""
        kept = self.details if detail else self.notes
        with _NOTING:
            if sentence and sentence not in kept:
                kept.append(sentence)

    def concurrent_builds(self) -> int:
        """How many calls of `build` may run at once, each in a thread of its own: 1
        unless the backend's build is safe to call so."""
        return 1

    def concurrent_runs(self) -> int:
        """How many calls of `run_ahead` may run at once, each in a thread of its own: 1
        unless the backend's runs are safe to make so."""
        return 1

    def run_ahead(self, build: Build, launch: Launch, timeout: float) -> RunOutcome | None:
        """`run`, made while runs of earlier cases may still be going on: None where its
        outcome would depend on what they found, and the caller must `run` it in turn."""
        return self.run(build, launch, timeout)

    def run_in_grid_order(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        """`run` with the launch's blocks one after another in grid order, for a case
        whose outcome's `blocks_at_once` says they ran at once, where what they did may
        have depended on timing (grader.grading.grid_order), and a grade must not. Only a
        backend that sets `blocks_at_once` is asked."""
        raise BackendUnavailable(f"The {self.name} backend cannot choose its blocks' order.")

    def stop_runs(self) -> None:  # noqa: B027 - a backend without run_ahead has none
        """End every `run_ahead` now going on at once (its outcome is to be dropped); one
        called later runs as usual."""

    @abstractmethod
    def device(self) -> str:
        """A human description of where kernels run, e.g. 'NVIDIA H200 (driver 580.1)'."""

    @abstractmethod
    def build(
        self,
        submission: Submission,
        macros: dict[str, int],
        launch_defaults: LaunchDefaults,
        census: bool = False,
    ) -> Build:
        """Compile `submission` with `-DNAME=value` for each macro, and with the launch
        footer of grader.model.source (the lab's `launch_defaults`). Never raises for a
        student's mistake: a failed compile returns a Build with compile.ok False, a log
        on the student's own line numbers and a compile_error diagnostic. Builds are
        cached by content, so building the same source twice is cheap. With `census`,
        runs of the build also count what each kernel executed (RunOutcome.executed),
        where the backend can, at some cost in time."""

    @abstractmethod
    def run(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        """Run one launch in an isolated worker that never sees expected outputs. A
        crash or a hang (killed after `timeout` seconds) becomes a RunOutcome with a
        crash or timeout diagnostic; the next call then gets a fresh worker."""

    def profile(
        self, build: Build, launch: Launch, timeout: float
    ) -> tuple[RunOutcome, list[KernelProfile]]:
        """`run`, with each kernel's memory profile (grader.model.profile): its loads,
        stores and atomics as warp-level requests, by memory space, the busiest thread's
        share of the global loads, and its occupancy where the compiler's figures allow.
        The outcome is `run`'s, with what each kernel executed counted as a census build's
        runs count it; a kernel whose run did not go to its end has no profile. Slower
        than `run`: for one case."""
        raise BackendUnavailable(f"The {self.name} backend does not profile kernels.")

    def profile_ahead(
        self, build: Build, launch: Launch, timeout: float
    ) -> tuple[RunOutcome, list[KernelProfile]] | None:
        """`profile`, made while runs of earlier cases may still be going on, as
        `run_ahead` is: None where the caller must `profile` it in turn."""
        return None

    def nsight(self, runs: list[tuple[Build, Launch]], timeout: float) -> list:
        """What Nsight Compute counted in each (build, launch), by kernel
        (grader.backends.cuda.profiler.Measured): a GPU backend's, where asked (--profile)."""
        raise BackendUnavailable(f"The {self.name} backend has no Nsight Compute.")

    def prepare(self) -> None:  # noqa: B027 - most backends build nothing once per machine
        """Make what this backend builds once per machine, so that no grading's deadline
        pays for it (a batch's workers call it before they take a submission)."""

    def load(self, build: Build) -> None:  # noqa: B027 - most backends have nothing to load
        """Get ready to run `build` (a GPU worker started, its module loaded), so that a
        caller can do it outside a gate around the runs themselves. A failure is left for
        `run` to report."""

    def model_of(self, model: Backend) -> Backend:
        """`model`, the backend a GPU grading opens for the CPU model's profile runs
        (grader.grading.profiles), as this backend's caller sees it: a wrapper may time
        its calls (grader.course.stages)."""
        return model

    def measures_speed(self) -> bool:
        """Whether `time` works here: only a GPU's timings are scored."""
        return False

    def watches_races(self) -> bool:
        """Whether the census case's run (grader.judge.rules.census_case) watches every
        access that races among a block's threads, so that every lab has one."""
        return False

    def time(
        self,
        student: Build,
        reference: Build,
        launches: tuple[Launch, Launch],
        budget: float,
        check: TimingCheck | None = None,
    ) -> Timing:
        """Time student and reference launches interleaved on the same inputs. Their
        buffers may be `Repeated` or `Drawn`; the same Buffer in both launches is one
        device buffer. `check` draws the inputs and checks every student launch."""
        raise BackendUnavailable(f"The {self.name} backend does not measure speed.")

    def sanitize(
        self, build: Build, launches: list[Launch], timeout: float
    ) -> list[list[Diagnostic]]:
        """Run launches (smallest first) under a memory, race and barrier checker; return
        the findings of each launch, in the launches' order."""
        return [[] for _ in launches]

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to stop
        """Stop any worker processes."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Wrapper(Backend):
    """A backend that hands every call to `inner`; a subclass changes the calls it wraps
    (a batch's gate around GPU work, its clock around each stage)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.name = inner.name
        self.notes = inner.notes
        self.details = inner.details

    def device(self) -> str:
        return self.inner.device()

    def concurrent_builds(self) -> int:
        return self.inner.concurrent_builds()

    def build(
        self,
        submission: Submission,
        macros: dict[str, int],
        launch_defaults: LaunchDefaults,
        census: bool = False,
    ) -> Build:
        return self.inner.build(submission, macros, launch_defaults, census)

    def run(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        return self.inner.run(build, launch, timeout)

    def run_in_grid_order(self, build: Build, launch: Launch, timeout: float) -> RunOutcome:
        return self.inner.run_in_grid_order(build, launch, timeout)

    def profile(
        self, build: Build, launch: Launch, timeout: float
    ) -> tuple[RunOutcome, list[KernelProfile]]:
        return self.inner.profile(build, launch, timeout)

    def nsight(self, runs: list[tuple[Build, Launch]], timeout: float) -> list:
        return self.inner.nsight(runs, timeout)

    def prepare(self) -> None:
        self.inner.prepare()

    def load(self, build: Build) -> None:
        self.inner.load(build)

    def model_of(self, model: Backend) -> Backend:
        return self.inner.model_of(model)

    def measures_speed(self) -> bool:
        return self.inner.measures_speed()

    def watches_races(self) -> bool:
        return self.inner.watches_races()

    def time(
        self,
        student: Build,
        reference: Build,
        launches: tuple[Launch, Launch],
        budget: float,
        check: TimingCheck | None = None,
    ) -> Timing:
        return self.inner.time(student, reference, launches, budget, check)

    def sanitize(
        self, build: Build, launches: list[Launch], timeout: float
    ) -> list[list[Diagnostic]]:
        return self.inner.sanitize(build, launches, timeout)

    def close(self) -> None:
        self.inner.close()
