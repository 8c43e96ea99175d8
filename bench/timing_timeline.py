"""Where a GPU grading's timing spends its wall time: its making ready (from the kernel's
first build to its builds at the timed size, grading.timing.get_ready), each timed
launch's expected sample computed on the host (by which thread, from when to when), the
GPU's timing (CudaBackend.time: its rounds and the worker's own check seconds), and the
grader's wait for the host's samples after it (grading.timing.judge), on one clock from
the start of each grading. A lab's reference is graded --gradings times in one process,
the first to warm the caches. On an H100, histogram's reference at 32 MiB: the GPU's 11
rounds took 38 ms, then the grader waited 0.44-0.49 s for the host's bins (issue 36).

    python3 bench/timing_timeline.py [--labs histogram scan] [--gradings 3]

Needs an NVIDIA GPU and PyCUDA."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.host import describe, gpu_missing  # noqa: E402
from grader.grading import timing  # noqa: E402
from grader.grading.pipeline import Options, check  # noqa: E402
from grader.labs import get  # noqa: E402

Event = tuple[str, float, float]  # what, from, to (seconds since the grading began)


class Timeline:
    """The events of one grading, recorded by the wrappers `watch` puts in place."""

    def __init__(self) -> None:
        self.began = time.perf_counter()
        self.events: list[Event] = []

    def restart(self) -> None:
        self.began, self.events = time.perf_counter(), []

    def record(self, what: str, started: float) -> None:
        self.events.append((what, started - self.began, time.perf_counter() - self.began))


def watch(line: Timeline, backend_class) -> None:
    """Wrap the making ready, the host's expected samples, the backend's timing and the
    judging so that each call records an event on `line`."""

    def recorded(function, what):
        """`function`, each call recorded as the event what(*args)."""

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                line.record(what(*args), started)

        return wrapper

    timed = backend_class.time

    def gpu(self, *args, **kwargs):
        started = time.perf_counter()
        out = timed(self, *args, **kwargs)
        line.record(
            f"GPU timing: {out.checked} launches checked, worker's checks "
            f"{out.check_seconds:.3f} s",
            started,
        )
        return out

    timing.get_ready = recorded(
        timing.get_ready, lambda *_: "made ready: the kernel built, its builds at the timed size"
    )
    timing.Expected._compute = recorded(
        timing.Expected._compute,
        lambda _, launch: f"expected launch {launch} ({threading.current_thread().name})",
    )
    timing.judge = recorded(timing.judge, lambda *_: "judge: waits for the host's samples")
    backend_class.time = gpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labs", nargs="*", default=["histogram", "scan"])
    parser.add_argument("--gradings", type=int, default=3)
    args = parser.parse_args(argv)
    if gpu_missing():
        return 2
    from grader.backends.cuda import CudaBackend

    line = Timeline()
    watch(line, CudaBackend)
    print(describe(), flush=True)
    for name in args.labs:
        path = get(name).home / "reference.cu"
        for grading in range(args.gradings):
            line.restart()
            result = check(name, path, Options(backend="cuda"))
            total = time.perf_counter() - line.began
            rounds = result.performance.rounds if result.performance else 0
            print(f"{name}, grading {grading + 1}: {total:.3f} s, {rounds} rounds", flush=True)
            for what, start, end in sorted(line.events, key=lambda e: e[1]):
                print(f"  {start:7.3f} {end:7.3f} {end - start:6.3f}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
