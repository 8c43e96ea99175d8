"""Which rule for stopping a timing costs the GPU least for the same score: every run of a
few timings recorded on a GPU, then each rule replayed over the same runs (issue 36: a
batch's exclusive window is the kernels' own runs, 160 of its 181 ms on the H200).

Each kernel is timed against the lab's reference --seeds times with a fixed number of
rounds (--rounds, at most what the host may check), every run's milliseconds kept, the
first pair included (a wrapper of the GPU worker records them). Then, per
rule, on those runs: the GPU milliseconds a timing would have spent, its rounds, and how
far its speedup and its points fall from the truth (the median of every round of every
seed). The rules:

    current        grader.backends.timing.Plan as it is (a long round's first pair is a
                   round, a short round's its warm-up: Plan.counts_first)
    score decided  also stop, after 3 rounds, once the median +-3 standard errors is past
                   the lab's target speedup or under its zero: no more rounds can change
                   the points
    reference once the reference timed once per batch (the other seeds' runs stand for it)
                   and each submission's own runs alone, one reference run a timing to
                   follow drift

    python3 bench/timing_policies.py [--kernels LAB/FILE ...] [--seeds 4] [--rounds 16]

Needs an NVIDIA GPU and PyCUDA."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

KERNELS = (
    "matmul-tiled/reference.cu",
    "matmul-tiled/baseline.cu",
    "histogram/reference.cu",
    "scan/reference.cu",
    "spmv-csr/reference.cu",
)
BUDGET_S = 60.0  # far past any trace's rounds: the rounds decide its length


# -- the worker's side: a GPU worker that times fixed rounds and records every run -------


def worker_main(argv: list[str]) -> None:
    """The GPU worker, with every timed run written to the trace file (one JSON line:
    student or not, milliseconds) and each timing made of `rounds` rounds. `argv` is
    --trace FILE --rounds N, then the worker's own arguments."""
    trace, rounds, rest = argv[1], int(argv[3]), argv[4:]
    from grader.backends.cuda import timing, worker

    untraced = timing._timed

    def traced(gpu, rig, run, checker, student, window) -> float:
        ms = untraced(gpu, rig, run, checker, student, window)
        with open(trace, "a") as out:
            out.write(json.dumps([student, ms]) + "\n")
        return ms

    worker.Plan, timing._timed = fixed_plan(rounds), traced
    worker.main(rest)


def fixed_plan(rounds: int) -> Callable:
    """A stand-in for the worker's Plan, called as the worker calls it, that times
    `rounds` rounds (fewer where the host checks fewer) whatever they say."""
    from grader.backends.timing import Plan

    def fixed(budget: float, max_rounds: int = rounds, scored=None) -> Plan:
        most = min(rounds, max_rounds)  # never stopped by the points (`scored` unused)
        return Plan(
            budget, target_error=0.0, min_rounds=most, max_rounds=most, long_min_rounds=most
        )

    return fixed


# -- the bench's side: traces of timings, then the rules replayed over them ----------------


@dataclass
class Trace:
    """One timing's runs: the first pair and the rounds after it, each pair (student ms,
    reference ms)."""

    first: tuple[float, float]
    rounds: list[tuple[float, float]]


def parse(runs: list[tuple[bool, float]]) -> Trace:
    """Pairs of a trace as time_pair made them: the first pair student first, the rounds
    alternating."""

    def pair(two: list[tuple[bool, float]]) -> tuple[float, float]:
        by = dict(two)
        return by[True], by[False]

    first, rest = pair(runs[:2]), runs[2:]
    return Trace(first, [pair(rest[i : i + 2]) for i in range(0, len(rest) - 1, 2)])


@dataclass
class Outcome:
    gpu_ms: float
    rounds: int
    speedup: float
    ran_out: bool = False  # the rule wanted more rounds than the trace has


def replay_rounds(trace: Trace, start: list, stop: Callable[[list, float], bool]) -> Outcome:
    """Rounds taken from the trace, after `start`, until `stop(samples, elapsed)`."""
    from grader.backends.cuda.timing import ROUND_OVERHEAD_S
    from grader.backends.timing import summarise

    spent = sum(trace.first)
    samples = list(start)
    for pair in trace.rounds:
        if stop(samples, spent / 1000):
            break
        samples.append(pair)
        spent += sum(pair) + 1000 * ROUND_OVERHEAD_S
    ran_out = not stop(samples, spent / 1000)
    student, reference = ([p[i] for p in samples] for i in (0, 1))
    return Outcome(spent, len(samples), summarise(student, reference).speedup, ran_out)


def plan_stop(plan, round_s: float, decided: Callable | None = None):
    """replay_rounds' `stop` for `plan` at rounds of `round_s` seconds, and, with
    `decided`, once it says so of the median speedup and its error."""
    from grader import defaults
    from grader.backends.timing import summarise

    def stop(samples: list, elapsed: float) -> bool:
        student, reference = [p[0] for p in samples], [p[1] for p in samples]
        if plan.stop_reason(student, reference, elapsed, round_s) is not None:
            return True
        if decided is None or len(samples) < defaults.TIMING_LONG_MIN_ROUNDS:
            return False
        summary = summarise(student, reference)
        return decided(summary.speedup, summary.error)

    return stop


def _counted(trace: Trace, decided: Callable | None = None) -> Outcome:
    """The rounds replayed as Plan starts them: with the first pair where it counts."""
    from grader import defaults
    from grader.backends.cuda.timing import expected_round_s
    from grader.backends.timing import Plan

    plan, round_s = Plan(defaults.TIMING_BUDGET), expected_round_s(trace.first)
    stop = plan_stop(plan, round_s, decided)
    return replay_rounds(trace, [trace.first] if plan.counts_first(round_s) else [], stop)


def current(trace: Trace, scoring) -> Outcome:
    return _counted(trace)


def score_decided(trace: Trace, scoring) -> Outcome:
    def decided(speedup: float, error: float) -> bool:
        low, high = speedup * (1 - 3 * error), speedup * (1 + 3 * error)
        return low >= scoring.target_speedup or high <= scoring.zero_speedup

    return _counted(trace, decided)


def reference_once(trace: Trace, scoring, reference_ms: float) -> Outcome:
    """The student's runs alone, against `reference_ms` measured elsewhere: stop once
    the student's median is known to the plan's precision, after its least rounds."""
    from grader import defaults
    from grader.backends.cuda.timing import ROUND_OVERHEAD_S
    from grader.backends.timing import Plan, Summary, _spread

    plan = Plan(defaults.TIMING_BUDGET)
    spent = trace.first[0] + reference_ms  # the drift's run
    times: list[float] = []

    def known() -> bool:
        if len(times) < plan.least_rounds(trace.first[0] / 1000):
            return False
        middle = statistics.median(times)
        return Summary(len(times), middle, _spread(times, middle)).error < plan.target_error

    for student, _ in trace.rounds:
        if known():
            break
        times.append(student)
        spent += student + 1000 * ROUND_OVERHEAD_S / 2  # one run's flush and launches
    return Outcome(spent, len(times), reference_ms / statistics.median(times), not known())


RULES = {"current": current, "score decided": score_decided}


def traces_of(lab, file: str, seeds: int, trace_file: Path) -> list[Trace]:
    """`seeds` timings of `lab`'s `file` against its reference on the GPU, each recorded
    by a worker that traced_workers started."""
    from grader.backends.cuda import CudaBackend
    from grader.grading.timing import draw_ahead, measure, ready_ahead
    from grader.model.source import read_submission

    submission, _ = read_submission(lab.home / file)
    backend = CudaBackend()
    found = []
    for seed in range(1, seeds + 1):
        trace_file.write_text("")
        ready = ready_ahead(lab, submission, backend, draw_ahead(lab, seed))
        measure(lab, backend, BUDGET_S, ready)
        runs = [tuple(json.loads(line)) for line in trace_file.read_text().splitlines()]
        found.append(parse(runs))
    return found


@contextmanager
def traced_workers(rounds: int):
    """While open, every GPU worker this process starts times `rounds` rounds a timing
    and writes each run to the trace file it yields."""
    from grader import spawn

    with tempfile.TemporaryDirectory(prefix="grader-trace-") as tmp:
        trace_file = Path(tmp) / "trace.jsonl"
        untraced = spawn.python_module

        def traced(module: str, *rest: str) -> list[str]:
            if module != "grader.backends.cuda.worker":
                return untraced(module, *rest)
            extra = ("--trace", str(trace_file), "--rounds", str(rounds))
            return untraced("bench.timing_policies", *extra, *rest)

        spawn.python_module = traced
        try:
            yield trace_file
        finally:
            spawn.python_module = untraced


def table(kernel: str, traces: list[Trace]) -> list[tuple]:
    """Per rule: GPU ms a timing, rounds, the worst speedup's distance from the truth,
    and the worst points' distance from the truth's points (of the lab's speed points)."""
    from grader import labs
    from grader.backends.timing import summarise

    scoring = labs.get(kernel.split("/")[0]).scoring
    pooled = [p for t in traces for p in t.rounds]
    truth = summarise([p[0] for p in pooled], [p[1] for p in pooled]).speedup
    points = scoring.performance_points(truth)

    def batch_reference(i: int) -> float:  # the other timings' reference runs
        return statistics.median(p[1] for j, t in enumerate(traces) if j != i for p in t.rounds)

    rules = {name: (lambda i, t, rule=rule: rule(t, scoring)) for name, rule in RULES.items()}
    rules["reference once"] = lambda i, t: reference_once(t, scoring, batch_reference(i))
    rows = []
    for rule, apply in rules.items():
        outcomes = [apply(i, t) for i, t in enumerate(traces)]
        worst = max(abs(o.speedup / truth - 1) for o in outcomes)
        lost = max(abs(scoring.performance_points(o.speedup) - points) for o in outcomes)
        ms, rounds = (
            statistics.mean(getattr(o, k) for o in outcomes) for k in ("gpu_ms", "rounds")
        )
        more = "+" if any(o.ran_out for o in outcomes) else " "
        rows.append((kernel, rule, ms, f"{rounds:.1f}{more}", 100 * worst, lost, truth))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", nargs="*", default=list(KERNELS))
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=24, help="at most what the host may check")
    args = parser.parse_args(argv)
    from grader import labs

    rows = []
    with traced_workers(args.rounds) as trace_file:
        for kernel in args.kernels:
            name, file = kernel.split("/")
            traces = traces_of(labs.get(name), file, args.seeds, trace_file)
            rows += table(kernel, traces)
    print(
        f"{args.seeds} timings a kernel, up to {args.rounds} rounds each, every rule on the same "
        "runs; rounds marked + ran out of the trace (the rule wanted more: its GPU ms is less "
        "than it would spend)"
    )
    print(
        f"{'kernel':<28} {'rule':<16} {'GPU ms':>8} {'rounds':>7} "
        f"{'worst speedup':>14} {'worst points':>13} {'truth':>7}"
    )
    for kernel, rule, ms, rounds, worst, lost, truth in rows:
        print(
            f"{kernel:<28} {rule:<16} {ms:8.1f} {rounds:>7} {worst:13.2f}% "
            f"{lost:13.3f} {truth:7.4f}"
        )
    return 0


if __name__ == "__main__":
    if "--socket" in sys.argv:
        worker_main(sys.argv[1:])
    else:
        raise SystemExit(main())
