"""What the memory profile costs a warm check (issue 31: at most 15% on the CPU backend,
at most 0.3 s on a GPU).

    python3 bench/profile_cost.py [--backend cpu|cuda] [--labs LAB,LAB] [--runs 3] [--timing]

Grades each lab's reference as `grader check LAB reference.cu --backend B` does
(grader.grading.pipeline.check, in this process), with the profile and without it (the
CPU model made unavailable, as on a machine where it cannot run: no profile run, no
reference or baseline profile, no measured rules), interleaved, after one untimed
grading of each to warm the caches. Prints, per lab, the min and median seconds of each
and what the profile adds; timing is off unless --timing (the speed measurement's own
seconds would drown the difference)."""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader import labs  # noqa: E402
from grader.grading import pipeline, profiles  # noqa: E402

MODEL = profiles.model_backend


@contextlib.contextmanager
def _no_model(backend):
    yield "the CPU model was left out (bench/profile_cost.py)"


def graded(lab: str, backend: str, timing: bool, profiled: bool) -> float:
    """Seconds one check of the lab's reference took."""
    profiles.model_backend = MODEL if profiled else _no_model
    path = labs.get(lab).home / "reference.cu"
    start = time.perf_counter()
    result = pipeline.check(lab, path, pipeline.Options(backend=backend, timing=timing))
    seconds = time.perf_counter() - start
    assert result.profile is not None or not profiled, result.notes
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--labs", help="comma-separated labs (default: all)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timing", action="store_true", help="time the kernels too (GPU)")
    args = parser.parse_args()
    names = args.labs.split(",") if args.labs else sorted(labs.all_labs())
    for name in names:
        for profiled in (False, True):
            graded(name, args.backend, args.timing, profiled)  # warm the caches
    print(f"{'lab':16} {'without: min  median':>22} {'with: min  median':>20} {'added':>16}")
    for name in names:
        seconds: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(args.runs):
            for profiled in (False, True):
                seconds[profiled].append(graded(name, args.backend, args.timing, profiled))
        low = {k: min(v) for k, v in seconds.items()}
        mid = {k: statistics.median(v) for k, v in seconds.items()}
        added = mid[True] - mid[False]
        print(
            f"{name:16} {low[False]:10.2f} {mid[False]:8.2f}   {low[True]:10.2f} {mid[True]:8.2f}"
            f"   {added:+6.2f} s {100 * added / mid[False]:+5.0f}%",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
