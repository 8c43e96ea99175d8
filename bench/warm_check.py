"""Where a warm `grader check` spends its wall time (issue 36: at most 1.0 s a lab on a
GPU, hidden cases off).

    python3 bench/warm_check.py [--labs LAB ...] [--backend cuda|cpu] [--top 25]

For each lab, grades its reference once to warm the caches, then once more in a fresh
process, as a student's `grader check LAB reference.cu --quiet` runs, with each step the
grading tells (grader.grading.progress: backend, compile, each case, timing) stamped on
the process's clock, and the grading's main thread profiled (cProfile, by cumulative
time: threads beside it, such as the timing inputs' draw or the CPU model's run, show
only as the waits they cost it). Prints the process's wall time, its imports, the steps
and the profile's top lines."""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import subprocess
import sys
import time
from pathlib import Path

STARTED = time.monotonic()
ROOT = Path(__file__).resolve().parents[1]


def child(lab: str, backend: str, top: int) -> None:
    """One check of `lab`'s reference in this process, its steps and profile printed."""
    import grader.grading.pipeline as pipeline
    from grader import labs
    from grader.cli import main

    steps: list[str] = []
    told = pipeline.tell

    def stamped(progress, stage, *args, **kwargs):
        steps.append(f"{stage}{args[:1] or ''}@{time.monotonic() - STARTED:.3f}")
        told(progress, stage, *args, **kwargs)

    pipeline.tell = stamped
    imported = time.monotonic() - STARTED
    reference = str(labs.get(lab).home / "reference.cu")
    profile = cProfile.Profile()
    profile.enable()
    with contextlib.suppress(SystemExit):  # the CLI's exit code: the grade
        main(["check", lab, reference, "--quiet", "--backend", backend])
    profile.disable()
    print(f"imports {imported:.3f} s, check ended at {time.monotonic() - STARTED:.3f} s")
    print("steps: " + "  ".join(steps))
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(top)
    lines = [line[:160] for line in out.getvalue().splitlines() if line.strip()]
    print("\n".join(lines[: top + 8]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labs", nargs="*", default=["spmv-csr", "spmv-jds", "scan"])
    parser.add_argument("--backend", default="cuda")
    parser.add_argument("--top", type=int, default=25, help="profile lines shown")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.backend, args.top)
        return 0
    from bench import warm_ab
    from bench.host import compile_bytecode
    from grader import defaults

    compile_bytecode()
    for lab in args.labs:
        warm_ab.check(ROOT, defaults.cache_dir(), lab, args.backend)  # the caches filled
        # as a module from the checkout, as `python -m grader` runs: the same import path,
        # so the same remembered CUDA probe (a script's own folder on it asked again: 0.34 s)
        command = [sys.executable, "-m", "bench.warm_check", "--child", lab]
        command += ["--backend", args.backend, "--top", str(args.top)]
        start = time.monotonic()
        made = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        print(f"=== {lab}: {time.monotonic() - start:.3f} s wall")
        print(made.stdout + made.stderr[-2000:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
