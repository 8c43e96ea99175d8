"""What placing buffers against unmapped memory costs and finds on a GPU.

    python3 bench/guarded.py [--labs LAB ...] [--budget 2]

First table: the reference timed against itself at the timing size, with every buffer
flush against unmapped memory (CUDA VMM, as grading does) and with plain allocations
(GRADER_VMM=0), in one run: the reference's milliseconds under each and their ratio.
Second table: whole gradings (public and hidden cases, no timing) of kernels that stray
outside a buffer (per lab, the first known-wrong kernel its EXPECTED.toml says the GPU
stops out of bounds) and of the lab's reference: seconds, the cases that stopped at unmapped memory,
and the first out_of_bounds finding."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from grader import labs, validate
from grader.backends.cuda import CudaBackend, vmm
from grader.grading.pipeline import Options, check
from grader.grading.timing import plan
from grader.judge import cases
from grader.judge.launch import at_launch, timing_launches
from grader.labs import all_labs
from grader.model.result import Kind
from grader.model.source import read_submission

ROOT = Path(__file__).resolve().parents[1]


def straying(names: list[str]) -> list[tuple[str, Path]]:
    """Per lab, the first known-wrong kernel the GPU must stop out of bounds, and the
    reference (which strays nowhere)."""
    found = []
    for name in names:
        lab = all_labs()[name]
        for one in validate.checks(lab):
            wanted = one.expected.get("cuda", one.expected)
            if one.role == "wrong" and "out_of_bounds" in wanted.get("kinds", []):
                found += [(name, one.path), (name, lab.home / "reference.cu")]
                break
    return found


def reference_ms(lab, budget: float) -> float:
    """Median milliseconds of the reference timed against itself, in a fresh backend."""
    case, constants = cases.timing_inputs(lab, seed=3)
    with CudaBackend() as backend:
        path = labs.get(lab.name).home / "reference.cu"
        built = backend.build(
            read_submission(path)[0], lab.macro_values(case.sizes), lab.launch_defaults
        )
        launches = timing_launches(lab, case, constants, built.interface, built.interface)
        check = plan(lab, at_launch(lab, case, built.interface), 3, constants)
        timing = backend.time(built, built, launches, budget, check)
    return statistics.median(timing.reference_ms)


def timing_table(names: list[str], budget: float) -> None:
    print(f"{'lab':15} {'VMM ms':>9} {'plain ms':>9} {'VMM/plain':>9}")
    for name in names:
        lab = all_labs()[name]
        os.environ[vmm.SWITCH] = "1"
        guarded = reference_ms(lab, budget)
        os.environ[vmm.SWITCH] = "0"
        plain = reference_ms(lab, budget)
        os.environ[vmm.SWITCH] = "1"
        print(f"{name:15} {guarded:9.4f} {plain:9.4f} {guarded / plain:9.3f}", flush=True)


def fault_table(names: list[str]) -> None:
    print(f"\n{'kernel':45} {'cases':>5} {'stopped':>7} {'seconds':>7}  first finding")
    for lab, path in straying(names):
        started = time.monotonic()
        options = Options(backend="cuda", secret="bench-secret", timing=False)
        result = check(lab, path, options)
        seconds = time.monotonic() - started
        stopped = [
            c for c in result.cases if any(d.kind == Kind.OUT_OF_BOUNDS for d in c.diagnostics)
        ]
        first = next((d.message for c in stopped for d in c.diagnostics), "")
        print(
            f"{lab + '/' + path.name:45} {len(result.cases):5} "
            f"{len(stopped):7} {seconds:7.1f}  {first[:150]}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labs", nargs="*", default=list(all_labs()))
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--no-faults", action="store_true")
    args = parser.parse_args(argv)
    timing_table(args.labs, args.budget)
    if not args.no_faults:
        fault_table(args.labs)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main())
