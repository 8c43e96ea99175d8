"""Timing a pair on the GPU worker (grader.backends.cuda.timing.time_pair), with stand-ins for
the GPU: the runs interleaved with the same checks around both, nothing allocated inside
the window (the worker's Rig is reused), the window's phases counted, and everything
queued settled even when a launch fails. The real GPU's figures: tests/gpu/."""

from __future__ import annotations

import contextlib

import pytest

from grader import defaults
from grader.backends import window
from grader.backends.cuda import timing
from grader.backends.timing import Plan
from grader.backends.window import Window


@pytest.fixture(autouse=True)
def _no_pycuda(monkeypatch) -> None:
    """PyCUDA's errors are never raised by the stand-ins: none to turn into sentences."""
    monkeypatch.setattr(timing, "failures", contextlib.nullcontext)


class Event:
    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu, self.at = gpu, 0.0

    def record(self) -> None:
        self.at = self.gpu.clock_ms

    def query(self) -> bool:
        return True

    def time_since(self, start: Event) -> float:
        return self.at - start.at


class Cuda:
    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu

    def Event(self) -> Event:  # noqa: N802 (PyCUDA's name)
        return Event(self.gpu)

    def memset_d8_async(self, *args) -> None:
        self.gpu.log.append("flush")

    def mem_alloc(self, nbytes: int):
        raise AssertionError("allocated inside the timing's window")


class FakeGpu:
    """Each launch's function is its kernel's milliseconds on a clock of its own."""

    def __init__(self) -> None:
        self.cuda, self.clock_ms, self.settled, self.log = Cuda(self), 0.0, 0, []

    def launch(self, function, launch, args) -> None:
        if function is None:
            raise RuntimeError("refused")
        self.clock_ms += function
        self.log.append(f"kernel {function:g}")

    def wait(self, event, longest: float) -> None:
        assert longest <= 1e-3
        self.log.append("wait")

    def settle(self) -> None:
        self.settled += 1


class Hold:
    def close(self) -> None:
        pass

    def open(self) -> None:
        pass


class L2:
    def clear(self) -> None:
        pass

    def reset(self) -> None:
        pass

    def said(self) -> str:
        return "this GPU keeps no persisting L2 lines"


class Rig:
    flush, hold, l2 = 0, Hold(), L2()


class Checker:
    """Logs each call with whose run it was for."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def before(self, student: bool) -> None:
        self.log.append(f"before {student}")

    def prepare(self, student: bool) -> None:
        self.log.append(f"prepare {student}")

    def after(self, student: bool) -> None:
        self.log.append(f"after {student}")


def test_a_pair_is_timed_interleaved_with_the_same_checks_around_both_and_nothing_allocated():
    gpu, spent = FakeGpu(), Window()
    runs = [[(1.0, None, [])], [(2.0, None, [])]]
    rig = Rig()
    for _ in range(2):  # the second timing reuses the rig: mem_alloc would fail
        gpu.log.clear()
        found = timing.time_pair(gpu, rig, runs, Plan(budget_s=5), Checker(gpu.log), spent)
    assert found["student_ms"] == [1.0] * 5 and found["reference_ms"] == [2.0] * 5
    assert "5 interleaved rounds" in found["note"]
    runs_made = 2 + 2 * 5  # the first pair warms up
    for who in (True, False):
        for step in ("before", "prepare", "after"):
            assert gpu.log.count(f"{step} {who}") == runs_made / 2
    # the sample's coordinates are computed once the run is queued, before its wait
    first = gpu.log[: gpu.log.index("after True") + 1]
    assert first == ["before True", "flush", "kernel 1", "prepare True", "wait", "after True"]
    assert gpu.settled == 2
    for phase in (window.BEFORE, window.L2, window.LAUNCHES, window.PREPARE, window.WAITS):
        assert spent.seconds[phase] > 0, phase
    assert spent.seconds[window.HELD] == 0  # the worker's, around the gate


def test_a_slow_pair_is_timed_in_fewer_interleaved_rounds_its_first_pair_one_of_them():
    """Round r still starts with runs[r % 2], and both kernels run as often."""
    gpu = FakeGpu()
    runs = [[(26.0, None, [])], [(3.6, None, [])]]
    found = timing.time_pair(gpu, Rig(), runs, Plan(budget_s=5), Checker(gpu.log), Window())
    rounds = defaults.TIMING_LONG_MIN_ROUNDS
    assert found["student_ms"] == pytest.approx([26.0] * rounds)
    assert found["reference_ms"] == pytest.approx([3.6] * rounds)
    order = [entry for entry in gpu.log if entry.startswith("kernel")]
    student, reference = "kernel 26", "kernel 3.6"
    assert order == [student, reference, reference, student, student, reference]


def test_a_refused_launch_still_settles_everything_queued():
    gpu = FakeGpu()
    runs = [[(None, None, [])], [(2.0, None, [])]]
    with pytest.raises(RuntimeError):
        timing.time_pair(gpu, Rig(), runs, Plan(budget_s=5), Checker(gpu.log), Window())
    assert gpu.settled == 1
