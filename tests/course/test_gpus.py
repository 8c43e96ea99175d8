"""GPU assignment: --gpus parsing, device numbers under CUDA_VISIBLE_DEVICES, and the gate
that keeps timing alone on its GPU."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from grader import labs
from grader.backends import window
from grader.backends.cpu import CpuBackend
from grader.backends.gate import alone_at
from grader.course import stages
from grader.course.gpus import Gate, GatedBackend, parse_gpus, physical_device
from grader.errors import UsageError
from grader.grading.pipeline import Options, grade
from grader.model.launch import RunOutcome, Timing


def test_gpus_parse():
    assert parse_gpus("0,1,3") == [0, 1, 3]
    assert parse_gpus(None) == [] and parse_gpus("") == []
    for text in ("0,0", "-1", "a", "1,,2"):
        with pytest.raises(UsageError, match="--gpus"):
            parse_gpus(text)


def test_indices_count_within_the_visible_devices(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert physical_device(2) == "2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,7")  # as Slurm hands out a node's GPUs
    assert physical_device(0) == "4" and physical_device(1) == "7"
    with pytest.raises(UsageError, match="only 2 are visible"):
        physical_device(2)


def test_timing_waits_for_runs_and_runs_queue_behind_timing(tmp_path):
    running, timing, later = (Gate(tmp_path, "gpu-0") for _ in range(3))
    events: list[str] = []

    def time_it():
        with timing.alone():
            events.append("timing")
            time.sleep(0.2)
            events.append("timing done")

    def run_later():
        with later.shared():
            events.append("run")

    with running.shared():
        threads = [threading.Thread(target=time_it)]
        threads[0].start()
        time.sleep(0.3)
        assert events == []  # timing waits while a run holds the GPU
        threads.append(threading.Thread(target=run_later))
        threads[1].start()
        time.sleep(0.3)
        assert events == []  # a new run waits behind the timing, it cannot starve it
    for thread in threads:
        thread.join(timeout=5)
    assert events == ["timing", "timing done", "run"]


def test_gates_of_different_gpus_are_independent(tmp_path):
    zero, one = Gate(tmp_path, "gpu-0"), Gate(tmp_path, "gpu-1")
    timed_on_one = threading.Event()

    def time_on_one():
        with one.alone():
            timed_on_one.set()

    with zero.alone():  # timing on GPU 0 does not hold GPU 1
        other = threading.Thread(target=time_on_one, daemon=True)
        other.start()
        assert timed_on_one.wait(timeout=5)
    other.join(timeout=5)


def test_a_correctness_run_holds_the_gpu_alone(tmp_path):
    """A run fills shared memory and then launches: another worker's run between the two
    would undo the fill, so two runs on one GPU never overlap (the module's docstring)."""
    spans: list[tuple[float, float]] = []

    class Runs(CpuBackend):
        def load(self, build) -> None:
            pass

        def run(self, build, launch, timeout):
            start = time.monotonic()
            time.sleep(0.2)
            spans.append((start, time.monotonic()))

    workers = [GatedBackend(Runs(), Gate(tmp_path, "gpu-0")) for _ in range(2)]
    threads = [threading.Thread(target=w.run, args=(None, None, 1.0)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=5)
    first, second = sorted(spans)
    assert first[1] <= second[0]


def test_a_gated_backend_grades_as_its_inner_backend(tmp_path):
    """Batch wraps every backend in a gate: a grading through it must not miss anything
    that grading asks of a backend (the CUDA batch once lost the backend's notes)."""
    lab = labs.get("matmul-naive")
    reference = labs.get(lab.name).home / "reference.cu"
    inner = CpuBackend()
    inner.notes.append("A note every report of this backend carries.")
    with GatedBackend(inner, Gate(tmp_path, "gpu-0")) as gated:
        result = grade(lab, reference, gated, Options(backend="cpu"))
    assert str(result.status) == "passed", [d.message for d in result.all_diagnostics()]
    assert "A note every report of this backend carries." in result.notes


def test_a_worker_is_told_once_it_holds_the_gate(tmp_path):
    """alone_at's `taken` (the cuda worker's word to the grader, whose deadline for the
    request starts again there) is called once the gate is held, and never without one."""
    gate, told = Gate(tmp_path, "gpu-0"), []

    def take() -> None:
        with alone_at(gate.paths, lambda: told.append(time.monotonic())):
            pass

    with Gate(tmp_path, "gpu-0").alone():
        taker = threading.Thread(target=take)
        taker.start()
        time.sleep(0.3)
        assert not told  # still waiting
        released = time.monotonic()
    taker.join(timeout=5)
    assert len(told) == 1 and told[0] >= released
    with alone_at(None, lambda: told.append(0.0)):
        pass
    assert len(told) == 1


def test_a_backend_whose_worker_takes_the_gate_gets_its_files_and_runs_ungated(tmp_path):
    """The cuda worker holds the gate alone from the shared-memory fill to the kernel's
    end (grader.backends.gate.alone_at): the grader holds nothing around the whole case,
    and the worker's hold excludes timing's as the grader's did."""
    gate = Gate(tmp_path, "gpu-0")

    class WorkerGated:
        name, notes, details, launch_gate = "cuda", [], [], None

        def load(self, build):
            pass

        def run(self, build, launch, timeout):
            with alone_at(self.launch_gate):
                events.append("kernel")
                time.sleep(0.3)
                events.append("kernel done")
            return RunOutcome(window={window.CASE_GATE: 0.05, window.CASE_HELD: 0.3})

    events: list[str] = []
    inner = WorkerGated()
    gated = GatedBackend(inner, gate)
    assert inner.launch_gate == gate.paths
    run = threading.Thread(target=gated.run, args=(None, None, 1.0))
    run.start()
    time.sleep(0.1)
    with Gate(tmp_path, "gpu-0").alone():  # timing waits for the kernel's end
        events.append("timing")
    run.join(timeout=5)
    assert events == ["kernel", "kernel done", "timing"]
    assert gate.waits[stages.CASES] == 0.05  # the worker's wait, which the grader counts


def test_a_worker_that_takes_the_gate_for_timing_says_how_long_it_waited_and_held_it(tmp_path):
    """The cuda worker holds the gate for the timed runs alone, not for placing their
    buffers: the grader takes none around the call, and counts the worker's figures."""
    waits: Counter[str] = Counter()
    gate = Gate(tmp_path, "gpu-0", waits)

    class WorkerTimes:
        name, notes, details, launch_gate = "cuda", [], [], None

        def load(self, build):
            pass

        def time(self, student, reference, launches, budget, check=None):
            with Gate(tmp_path, "gpu-0").alone():  # free: the grader holds nothing
                pass
            return Timing([1.0], [1.0], window={window.GATE: 0.25, window.HELD: 0.08})

    GatedBackend(WorkerTimes(), gate).time(None, None, (None, None), 1.0)
    assert waits[stages.TIMING] == 0.25 and waits[stages.HELD_ALONE] == 0.08
