"""What the memory profile costs a warm check (issue 31: at most 15% on the CPU backend,
at most 0.3 s on a GPU).

    python3 bench/profile_cost.py [--backend cpu|cuda] [--labs LAB,LAB] [--runs 3] [--timing]
        [--cli]

Grades each lab's reference as `grader check LAB reference.cu --backend B` does
(grader.grading.pipeline.check, in this process), with the profile and without it (the
CPU model made unavailable, as on a machine where it cannot run: no profile run, no
reference or baseline profile, no measured rules), interleaved, after one untimed
grading of each to warm the caches. Prints, per lab, the min and median seconds of each
and what the profile adds, in wall-clock seconds and in CPU seconds (this process's and
its ended children's, user and system: what other work on the machine does not inflate;
a GPU's worker, which outlives the check, is not counted); timing is off unless --timing
(the speed measurement's own seconds would drown the difference). With --cli, each
check is a `grader check` process, as a student runs it: its start and imports count."""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cpu_backend import children_cpu, own_cpu  # noqa: E402
from grader import labs  # noqa: E402
from grader.grading import pipeline, profiles  # noqa: E402

MODEL = profiles.model_backend


@contextlib.contextmanager
def _no_model(backend):
    yield "the CPU model was left out (bench/profile_cost.py)"


# `grader check` in a process of its own, the model left out as in this one where asked.
_CLI = """
import contextlib, sys
from grader.__main__ import main
if sys.argv.pop() == "0":
    from grader.grading import profiles
    profiles.model_backend = contextlib.contextmanager(lambda backend: iter(["left out"]))
raise SystemExit(main())
"""


def graded(
    lab: str, backend: str, timing: bool, profiled: bool, cli: bool = False
) -> tuple[float, float]:
    """Seconds and CPU seconds one check of the lab's reference took."""
    path = labs.get(lab).home / "reference.cu"
    start, cpu = time.perf_counter(), own_cpu() + children_cpu()
    if cli:
        argv = ["grader", "check", lab, str(path), "--backend", backend]
        argv += [] if timing else ["--no-timing"]
        code = [sys.executable, "-c", _CLI, *argv[1:], str(int(profiled))]
        done = subprocess.run(code, cwd=ROOT, capture_output=True, text=True)
        assert done.returncode in (0, 1), done.stderr
    else:
        profiles.model_backend = MODEL if profiled else _no_model
        result = pipeline.check(lab, path, pipeline.Options(backend=backend, timing=timing))
        assert result.profile is not None or not profiled, result.notes
    return time.perf_counter() - start, own_cpu() + children_cpu() - cpu


def _added(without: float, with_: float, digits: int) -> str:
    added = with_ - without
    return f"{added:+.{digits}f} {100 * added / without:+4.0f}%"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--labs", help="comma-separated labs (default: all)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timing", action="store_true", help="time the kernels too (GPU)")
    parser.add_argument("--cli", action="store_true", help="each check a grader process")
    args = parser.parse_args()
    names = args.labs.split(",") if args.labs else sorted(labs.all_labs())
    for name in names:
        for profiled in (False, True):
            graded(name, args.backend, args.timing, profiled, args.cli)  # warm the caches
    print(f"{'':16} {'wall-clock s: without':>22} {'with':>11} {'added':>12}", end="")
    print("   CPU-s: without  with  added")
    print(f"{'lab':16} {'min median':>22} {'min median':>11}{'':13}   {'median':>14} {'median':>5}")
    for name in names:
        made: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for _ in range(args.runs):
            for profiled in (False, True):
                made[profiled].append(graded(name, args.backend, args.timing, profiled, args.cli))
        low = {k: min(s for s, _ in v) for k, v in made.items()}
        mid = {k: statistics.median(s for s, _ in v) for k, v in made.items()}
        cpu = {k: statistics.median(c for _, c in v) for k, v in made.items()}
        print(
            f"{name:16} {low[False]:16.2f} {mid[False]:5.2f} {low[True]:5.2f} {mid[True]:5.2f}"
            f" {_added(mid[False], mid[True], 2)}   {cpu[False]:14.3f} {cpu[True]:5.3f}"
            f" {_added(cpu[False], cpu[True], 3)}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
