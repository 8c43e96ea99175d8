"""Batch throughput: submissions graded per minute, end to end (discovery, compiles, every
case, timing on a GPU, reports, gradebook), and where the time went, stage by stage
(grader.course.stages), with the stages that hold the GPU on the cuda backend, and on a
GPU where each timing's and case run's exclusive window went, phase by phase
(grader.backends.window), with each kernel's median speedup (the same kernel's must not
move between two runs), and the CPU seconds a submission took, which cap a batch on this
machine's cores as the windows cap it on one GPU.

The course is the lab's reference and baseline kernels, each copy made distinct by a
comment unique to the run, so that no compile is served from the cache of an earlier run,
as with real students' files. First, unless --cold, one submission is graded apart and
untimed, as a TA's first batch on a machine grades its first: that fills what the build
cache keeps for every later batch (the sandbox, the runner and the shims, the host's
generator, the reference's sums of each case), which on a fresh cache cost a batch of 128
matmul-tiled submissions 0.4 s a submission of its workers' start (one H100 machine: 274.6
a minute with an empty cache, 310.5 after it).

    python bench/batch.py                                  # CPU backend, this machine
    python bench/batch.py --lab matmul-tiled --backend cuda --jobs 8 --gpus 0

Target (issue 4): >= 30 submissions per minute for matmul-tiled on one H200, timing
included."""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.cpu_backend import children_cpu, own_cpu  # noqa: E402
from bench.host import describe  # noqa: E402
from grader import defaults, labs, machine  # noqa: E402
from grader.backends import window  # noqa: E402
from grader.batch import BatchReport, run_batch  # noqa: E402
from grader.batch.state import REPORT_JSON, student_dir  # noqa: E402
from grader.course import stages  # noqa: E402
from grader.course.gpus import parse_gpus  # noqa: E402


def make_course(lab: str, count: int, folder: Path) -> None:
    kernels = sorted(labs.get(lab).home.glob("*.cu"))
    run = os.urandom(8).hex()
    for i in range(count):
        source = kernels[i % len(kernels)].read_text()
        (folder / f"student{i:03d}.cu").write_text(f"// student {i} of run {run}\n{source}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", default="matmul-naive")
    parser.add_argument("--count", type=int, default=20, help="submissions (default 20)")
    parser.add_argument("--backend", default="cpu", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--jobs", type=int, default=machine.cores())
    parser.add_argument("--gpus", default="", help="e.g. 0 or 0,1")
    parser.add_argument("--secret", help="also run the hidden cases")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--timeout", type=float, default=defaults.CASE_TIMEOUT)
    parser.add_argument("--keep", type=Path, help="grade into this folder and keep it")
    parser.add_argument(
        "--cold", action="store_true", help="no submission graded first: the cache as it is"
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
        if not args.cold:
            first = time.monotonic()
            graded(args, Path(tmp) / "first", 1, Path(tmp) / "first-out")
            print(f"first, one submission graded apart: {time.monotonic() - first:.1f} s")
        course, out = Path(tmp) / "course", args.keep or Path(tmp) / "out"
        started, cpu = time.monotonic(), own_cpu() + children_cpu()
        report = graded(args, course, args.count, out)
        seconds = time.monotonic() - started
        cpu = own_cpu() + children_cpu() - cpu
        timings = timings_of(report, out)
    statuses = sorted({row.status for row in report.rows})
    timed = sum(row.speedup is not None for row in report.rows)
    print(
        f"{args.lab}: {report.graded} submissions in {seconds:.1f} s = "
        f"{60 * report.graded / seconds:.1f} submissions/min "
        f"(backend {args.backend}, jobs {args.jobs}, gpus {args.gpus or '-'}, "
        f"timing {'off' if args.no_timing else 'on'}, {timed} timed, "
        f"hidden cases {'on' if args.secret else 'off'}, statuses {', '.join(statuses)})"
    )
    print_stages(report, args.jobs, args.backend)
    print_cpu(report, cpu)
    print(describe())
    if args.backend != "cpu" and not args.no_timing:
        print_window(report)
        print_speedups(timings, args.lab)
    return 0 if report.counts.errors == 0 else 1


def graded(args: argparse.Namespace, course: Path, count: int, out: Path) -> BatchReport:
    """A batch of `count` copies of the lab's kernels, graded from `course` into `out`."""
    course.mkdir()
    make_course(args.lab, count, course)
    return run_batch(
        args.lab,
        course,
        out,
        secret=args.secret,
        public_only=not args.secret,
        jobs=args.jobs,
        gpus=parse_gpus(args.gpus),
        timeout=args.timeout,
        backend=args.backend,
        timing=not args.no_timing,
        log=sys.stderr,
    )


def print_stages(report, jobs: int, backend: str) -> None:
    """The stages' seconds, summed over the workers (so more than the wall time when they
    run side by side), per submission, and their share of the stages in turn (those run
    beside them, stages.BESIDE, are shares of the same)."""
    total = sum(s for n, s in report.stages.items() if n not in stages.BESIDE) or 1.0
    count = max(1, report.graded)
    print(
        f"where the time went, summed over up to {jobs} workers at once "
        f"({report.seconds:.1f} s wall):"
    )
    print(f"  {'stage':<16} {'seconds':>8} {'per submission':>15} {'share':>6}  GPU (cuda)")
    for name in stages.STAGES:
        seconds = report.stages.get(name, 0.0)
        gpu = f"held {stages.GPU[name]}" if name in stages.GPU else "-"
        gpu = "- (beside the cases)" if name in stages.BESIDE else gpu
        print(
            f"  {name:<16} {seconds:8.1f} {seconds / count:15.2f} "
            f"{100 * seconds / total:5.0f}%  {gpu}"
        )
    if backend == "cpu":
        print("  (the cpu backend has no GPU: its cases hold none)")
        return
    alone = report.stages.get(stages.TIMING, 0.0)  # timings hold a GPU one at a time
    print(
        f"  a GPU was held alone for timing {alone:.1f} s in all, {alone / count:.2f} s per "
        f"submission: {100 * alone / max(report.seconds, 1e-9):.0f}% of the wall time on one GPU"
    )


def print_cpu(report, cpu_seconds: float) -> None:
    """The CPU seconds, user and system, of the batch and of every process it started
    that has ended (grading workers, compilers, GPU workers), per submission, and the
    most submissions a minute this machine's cores could grade at that cost."""
    count, cores = max(1, report.graded), machine.cores()
    per = cpu_seconds / count
    cap = f"at most {60 * cores / per:.0f} a minute on {cores} cores" if per > 0 else "none"
    print(f"CPU: {cpu_seconds:.1f} CPU-s in all, {per:.2f} per submission: {cap}")


def print_window(report) -> None:
    """The timings' and the case runs' phases on the GPU workers' clocks, per submission:
    those inside each exclusive window, and what of it they leave unaccounted."""
    count = max(1, report.graded)
    spent = report.window
    tables = (
        ("the timing window", window.GATE, window.INSIDE, window.HELD),
        ("the case runs' windows", window.CASE_GATE, window.CASE_INSIDE, window.CASE_HELD),
    )
    for title, gate, inside, held_name in tables:
        held = spent.get(held_name, 0.0)
        print(f"{title}, per submission (the GPU worker's clock):")
        print(f"  {'phase':<22} {'ms':>8} {'of held':>8}")
        for name in (gate, *inside, window.OTHER, held_name):
            mine = window.other(spent, inside, held_name) if name == window.OTHER else None
            seconds = spent.get(name, 0.0) if mine is None else mine
            share = f"{100 * seconds / held:7.0f}%" if name != gate and held else " " * 8
            print(f"  {name:<22} {1000 * seconds / count:8.1f} {share}")
    alone = report.stages.get(stages.TIMING, 0.0)  # the grader's clock where it holds the gate
    print(f"  (the stage table's timing, held alone: {1000 * alone / count:.1f} ms a submission)")
    both = spent.get(window.HELD, 0.0) + spent.get(window.CASE_HELD, 0.0)
    print(
        f"the gate held alone by timings and case runs together: {1000 * both / count:.1f} ms "
        f"a submission, {100 * both / max(report.seconds, 1e-9):.0f}% of the wall time"
    )


def timings_of(report, out: Path) -> list[tuple[int, dict]]:
    """Each timed submission's number and its report's performance (student i is the
    course's kernel i % kernels)."""
    found = []
    for row in report.rows:
        path = student_dir(out, row.student) / REPORT_JSON
        performance = json.loads(path.read_text()).get("performance") if path.exists() else None
        if performance:
            found.append((int(row.student.removeprefix("student")), performance))
    return found


def print_speedups(timings: list[tuple[int, dict]], lab: str) -> None:
    """Each kernel's median speedup over its copies, and the median of their rounds and
    of both kernels' milliseconds: what the window's runs cost."""
    kernels = sorted(labs.get(lab).home.glob("*.cu"))
    by_kernel: dict[str, list[dict]] = {}
    for number, performance in timings:
        by_kernel.setdefault(kernels[number % len(kernels)].name, []).append(performance)
    for name, found in sorted(by_kernel.items()):
        speedups = [p["speedup"] for p in found]
        middle = {
            k: statistics.median(p[k] for p in found)
            for k in ("rounds", "student_ms", "reference_ms")
        }
        rounds = [p["rounds"] for p in found]
        print(
            f"  speedup of {name}: median {statistics.median(speedups):.4f} over "
            f"{len(speedups)} copies, {min(speedups):.4f} to {max(speedups):.4f}; median "
            f"{middle['rounds']:g} rounds of {middle['student_ms']:.3f} ms against "
            f"{middle['reference_ms']:.3f} ms"
        )
        print(
            f"    rounds: mean {statistics.mean(rounds):.1f}, most {max(rounds)}; stopped "
            f"because: {_reasons(p.get('note', '') for p in found)}"
        )


def _reasons(notes) -> str:
    """How many timings stopped for each reason (the end of a timing's note, numbers
    dropped)."""
    counted = collections.Counter(
        re.sub(r"[0-9.]+", "N", note.rpartition("stopped because ")[2].split(";")[0])
        for note in notes
    )
    return ", ".join(f"{n}x {reason or '?'}" for reason, n in counted.most_common())


if __name__ == "__main__":
    raise SystemExit(main())
