"""Where a batch's time goes (grader.course.stages): a worker's clock around its
backend, and what the batch takes of a worker's figures."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Iterator

from grader.backends import window
from grader.backends.base import Backend
from grader.course import stages
from grader.course.gpus import Gate, GatedBackend
from grader.model.launch import RunOutcome, Timing


class Slow(Backend):
    """Builds take 0.1 s, runs 0.2 s: a stand-in whose only behaviour is its time."""

    name = "slow"

    def device(self) -> str:
        return "nothing"

    def build(self, submission, macros, launch_defaults, census=False):
        time.sleep(0.1)

    def run(self, build, launch, timeout):
        time.sleep(0.2)
        return RunOutcome()


def test_a_workers_clock_splits_a_grading_into_its_stages_and_starts_again():
    clocked = stages.Clocked(Slow())
    clocked.build(None, {}, (1, 1, 1))
    clocked.run(None, None, 1.0)
    clocked.run(None, None, 1.0)
    taken = clocked.take(graded=5.0)
    assert set(taken) == {
        stages.COMPILE, stages.CASES, stages.TIMING, stages.WAITING, stages.CPU_MODEL,
        stages.GRADING,
    }  # fmt: skip
    assert 0.1 <= taken[stages.COMPILE] < taken[stages.CASES] and taken[stages.CASES] >= 0.4
    assert taken[stages.TIMING] == taken[stages.WAITING] == taken[stages.CPU_MODEL] == 0
    assert abs(sum(taken.values()) - 5.0) < 1e-9
    assert clocked.take(graded=0.0) == dict.fromkeys(taken, 0.0)


class Profiled(Slow):
    """A profile run takes 0.2 s, as a run does."""

    def profile(self, build, launch, timeout):
        time.sleep(0.2)
        return RunOutcome(), []


def test_the_cpu_models_builds_and_profile_runs_on_a_gpu_are_a_stage_of_their_own():
    clocked = stages.Clocked(Slow())
    model = clocked.model_of(Profiled())  # the CPU backend a GPU grading opens for it
    model.build(None, {}, (1, 1, 1))
    model.profile(None, None, 1.0)
    clocked.run(None, None, 1.0)
    taken = clocked.take(graded=2.0)
    assert taken[stages.COMPILE] == 0 and taken[stages.CASES] >= 0.2
    assert taken[stages.CPU_MODEL] >= 0.3  # the model's build and profile run
    in_turn = sum(s for name, s in taken.items() if name not in stages.BESIDE)
    assert abs(in_turn - 2.0) < 1e-9 and taken[stages.GRADING] > 1.5  # the model beside


def test_the_cpu_backends_own_profile_run_is_a_case():
    clocked = stages.Clocked(Profiled())
    clocked.profile(None, None, 1.0)
    taken = clocked.take(graded=1.0)
    assert taken[stages.CASES] >= 0.2 and taken[stages.CPU_MODEL] == 0


def test_the_batch_keeps_only_stages_it_knows_with_finite_seconds():
    sent = {"compile": 1.5, "cases": "2", "timing": float("nan"), "reports": -1, "mine": 3}
    assert stages.read(sent) == {"compile": 1.5}
    assert stages.read(["compile", 1.0]) == {}
    assert stages.read({window.LAUNCHES: 0.5, window.HELD: -1}) == {window.LAUNCHES: 0.5}


class Windowed(Slow):
    """Each timing says where its window went: 10 ms of launches, 40 ms held."""

    def time(self, student, reference, launches, budget, check=None):
        return Timing([], [], window={window.LAUNCHES: 0.01, window.HELD: 0.04})


def test_a_workers_clock_sums_its_timings_phases_apart_from_the_stages():
    clocked = stages.Clocked(Windowed())
    clocked.time(None, None, (None, None), 1.0)
    clocked.time(None, None, (None, None), 1.0)
    taken = clocked.take(graded=1.0)
    assert taken[window.LAUNCHES] == 0.02 and taken[window.HELD] == 0.08
    assert abs(sum(taken[name] for name in stages.STAGES if name in taken) - 1.0) < 1e-9
    assert window.LAUNCHES not in clocked.take(graded=0.0)


class CaseWindowed(Slow):
    """Each case run says where its window went: 5 ms placing buffers, 12 ms held."""

    def run(self, build, launch, timeout):
        return RunOutcome(window={window.CASE_PLACE: 0.005, window.CASE_HELD: 0.012})


def test_a_workers_clock_sums_its_case_runs_phases_beside_its_timings():
    clocked = stages.Clocked(CaseWindowed())
    for _ in range(3):
        clocked.run(None, None, 1.0)
    taken = clocked.take(graded=1.0)
    assert abs(taken[window.CASE_PLACE] - 0.015) < 1e-12
    assert abs(taken[window.CASE_HELD] - 0.036) < 1e-12
    assert window.CASE_HELD in stages.WINDOW and window.CASE_HELD not in stages.STAGES
    assert stages.read({window.CASE_HELD: 0.5}) == {window.CASE_HELD: 0.5}


@contextlib.contextmanager
def timing_elsewhere(folder, seconds: float) -> Iterator[None]:
    """Another worker's timing holds the GPU's gate alone for `seconds`, from now on."""
    gate, held = Gate(folder, "gpu-0"), threading.Event()

    def time_alone() -> None:
        with gate.alone():
            held.set()
            time.sleep(seconds)

    other = threading.Thread(target=time_alone)
    other.start()
    held.wait()
    try:
        yield
    finally:
        other.join()


def test_a_run_waiting_at_the_gate_counts_as_waiting_not_as_cases(tmp_path):
    waits: Counter[str] = Counter()
    clocked = stages.Clocked(GatedBackend(Slow(), Gate(tmp_path, "gpu-0", waits)), waits)
    with timing_elsewhere(tmp_path, 0.5):
        clocked.run(None, None, 1.0)
    taken = clocked.take(graded=1.0)
    assert taken[stages.WAITING] >= 0.4
    assert 0.15 <= taken[stages.CASES] < 0.4  # the run's own 0.2 s


class SlowToLoad(Slow):
    """A GPU worker's start takes 0.5 s, made by load or else by the first run."""

    loaded = False

    def load(self, build) -> None:
        if not self.loaded:
            time.sleep(0.5)
            self.loaded = True

    def run(self, build, launch, timeout):
        self.load(build)
        return super().run(build, launch, timeout)


def test_a_workers_start_overlaps_the_wait_for_another_workers_timing(tmp_path):
    gated = GatedBackend(SlowToLoad(), Gate(tmp_path, "gpu-0"))
    with timing_elsewhere(tmp_path, 0.6):
        started = time.monotonic()
        gated.run(None, None, 1.0)
    assert time.monotonic() - started < 1.15  # 0.6 + 0.2 overlapped; 0.5 + 0.6 + 0.2 not


def test_timing_counts_only_its_seconds_inside_the_gate(tmp_path):
    class TimesSlowly(SlowToLoad):
        def measures_speed(self) -> bool:
            return True

        def time(self, student, reference, launches, budget, check=None):
            time.sleep(0.2)
            return Timing([], [])

    waits: Counter[str] = Counter()
    clocked = stages.Clocked(GatedBackend(TimesSlowly(), Gate(tmp_path, "gpu-0", waits)), waits)
    clocked.time(None, None, (None, None), 1.0)  # loads for 0.5 s first, outside the gate
    taken = clocked.take(graded=1.0)
    assert 0.15 <= taken[stages.TIMING] < 0.4 and taken[stages.GRADING] >= 0.45
