"""Does timing more rounds steady a lab's speedup, and at what cost? The reference graded
against itself with the floor on the rounds a timing checks (grading.timing.FEWEST_CHECKED)
set to each value given, the values taking turns within each set of gradings so that the
machine's drift falls on all of them alike. Histogram times that floor, since each of its
samples needs the whole input recomputed on the host.

    python3 bench/timing_rounds.py [--labs histogram scan] [--fewest 16 48] [--gradings 6]

Per lab and value: the speedups, their mean, their spread (half the range over the mean,
and the farthest from the median, gpu_labs.py's ±%), the median rounds timed, and the
median seconds a grading took and spent checking its timed launches. Needs an NVIDIA GPU
and PyCUDA; the grader's own constant is patched in this process alone."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_labs import _counted, gradings  # noqa: E402
from grader.backends import gpu_status  # noqa: E402
from grader.backends.cuda import CudaBackend  # noqa: E402
from grader.grading import timing  # noqa: E402
from grader.labs import all_labs  # noqa: E402
from grader.model.lab import Lab  # noqa: E402


def graded(lab: Lab, fewest: int) -> tuple[float, int, float, float]:
    """One grading of `lab`'s reference with the floor at `fewest` rounds (gpu_labs.py's
    gradings): its speedup, the rounds timed, its seconds, and the seconds spent checking
    timed launches."""
    timing.FEWEST_CHECKED = fewest
    started = time.monotonic()
    found, checking, rounds = gradings(lab, 1)
    return found[0], rounds[0], time.monotonic() - started, checking[0]


def row(lab: str, fewest: int, runs: list[tuple[float, int, float, float]]) -> str:
    speedups = [r[0] for r in runs]
    mean, middle = statistics.fmean(speedups), statistics.median(speedups)
    half_range = 100 * (max(speedups) - min(speedups)) / 2 / mean
    farthest = 100 * max(abs(s - middle) for s in speedups) / middle
    shown = ", ".join(f"{s:.3f}" for s in speedups)
    rounds = statistics.median(r[1] for r in runs)
    seconds = statistics.median(r[2] for r in runs)
    checking = statistics.median(r[3] for r in runs)
    return (
        f"{lab:12} {fewest:>6} {mean:6.3f} {half_range:6.1f} {farthest:6.1f} {rounds:6.0f} "
        f"{seconds:6.2f} {checking:7.3f}  {shown}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labs", nargs="*", default=["histogram", "scan"])
    parser.add_argument("--fewest", nargs="*", type=int, default=[16, 48])
    parser.add_argument("--gradings", type=int, default=6, help="per lab and value")
    args = parser.parse_args(argv)
    usable, why = gpu_status()
    if not usable:
        print(f"needs a usable NVIDIA GPU: {why}", file=sys.stderr)
        return 2
    CudaBackend.time = _counted(CudaBackend.time, gpu_side=True)
    timing.judge = _counted(timing.judge, gpu_side=False)
    kept = timing.FEWEST_CHECKED
    print(
        f"{'lab':12} {'fewest':>6} {'mean':>6} {'±½rng':>6} {'±med':>6} {'rounds':>6} "
        f"{'s':>6} {'check s':>7}  speedups",
        flush=True,
    )
    for lab in args.labs:
        runs: dict[int, list] = {fewest: [] for fewest in args.fewest}
        for _ in range(args.gradings):
            for fewest in args.fewest:  # in turn, so that drift falls on every value
                runs[fewest].append(graded(all_labs()[lab], fewest))
        for fewest in args.fewest:
            print(row(lab, fewest, runs[fewest]), flush=True)
    timing.FEWEST_CHECKED = kept
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
