"""How far apart do gradings of one kernel show its speedup, and what would steady it?
Each kernel is timed against its lab's reference --seeds times at a fixed --rounds (the
traced worker of timing_policies.py keeps every run), optionally at another timed size
(LAB/FILE@n=33554432). Then each rule CAP:SHOWN[:TARGET[:LEAST[:BRIEF]]] (the most
rounds the host checks, as grading.timing sets it for whole-input samples, Plan's
shown_error, its target_error, its min_rounds and its brief_error where given, "-" for
no brief tier: a brief kernel's rounds are then timed as any short one's; after an @,
the milliseconds under which a round's kernels are brief, Plan's brief_round_s) is
replayed --trials times over five gradings whose rounds are drawn from the recorded ones,
each stopped where Plan, with the lab's points, stops it (a long round's first pair, which
Plan counts as a round, is drawn like the others: tests/gpu/test_timing.py holds it to
their median).

    python3 bench/timing_spread.py [--kernels histogram/reference.cu@n=8388608 ...]
        [--rules 16:0.01 32:0.006] [--seeds 8] [--rounds 32] [--json PATH]
    python3 bench/timing_spread.py --traces PATH [--rules ...]   (no GPU: replays PATH)
        [--per-seed]   (each grading of a set from one seed's rounds: a grading's own
                        inputs may bias it; the seed's own sampling noise counts twice
                        unless far more rounds are recorded than a grading times)

Per kernel: the kernel's median milliseconds and the seconds a recorded timing took
(host checks included); per rule: the mean rounds a grading times, and of the five
speedups' farthest from their median (gpu_labs.py's ±%), the mean and the share of sets
past 1 %. Needs an NVIDIA GPU and PyCUDA to record."""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.host import gpu_missing  # noqa: E402
from bench.timing_policies import (  # noqa: E402
    Trace,
    plan_stop,
    replay_rounds,
    traced_workers,
    traces_of,
)
from grader import defaults, labs  # noqa: E402
from grader.backends.cuda.timing import expected_round_s  # noqa: E402
from grader.backends.timing import Plan  # noqa: E402
from grader.grading import timing  # noqa: E402

GRADINGS = 5  # a set, as gpu_labs.py grades each lab
OFF = 0.01  # the spread the issue allows a set


def spec_lab(spec: str):
    """The lab and file of LAB/FILE[@NAME=VALUE,...], its timed sizes changed as given."""
    kernel, _, sizes = spec.partition("@")
    name, file = kernel.split("/")
    lab = labs.get(name)
    if sizes:
        changed = {k: int(v) for k, v in (item.split("=") for item in sizes.split(","))}
        lab = dataclasses.replace(lab, timing_sizes={**lab.timing_sizes, **changed})
    return lab, file


def record(specs: list[str], seeds: int, rounds: int) -> dict:
    """Per spec, `seeds` traces of `rounds` rounds and the seconds each timing took."""
    kept, timing.FEWEST_CHECKED = timing.FEWEST_CHECKED, rounds  # the host checks them all
    found = {}
    try:
        with traced_workers(rounds) as trace_file:
            for spec in specs:
                lab, file = spec_lab(spec)
                started = time.monotonic()
                traces = traces_of(lab, file, seeds, trace_file)
                seconds = (time.monotonic() - started) / seeds
                found[spec] = {
                    "seconds": seconds,
                    "traces": [dataclasses.asdict(t) for t in traces],
                }
                print(f"recorded {spec}: {seconds:.2f} s a timing", flush=True)
    finally:
        timing.FEWEST_CHECKED = kept
    return found


def grading(pool: list, plan: Plan, round_s: float, draw: random.Random) -> tuple[float, int]:
    """One grading of rounds drawn from `pool` (as many as `plan` times at most), replayed
    until `plan` stops it."""
    drawn = Trace((0.0, 0.0), [draw.choice(pool) for _ in range(plan.max_rounds)])
    outcome = replay_rounds(drawn, [], plan_stop(plan, round_s))
    return outcome.speedup, outcome.rounds


def brief_round_s(brief: str, brief_ms: str) -> float:
    """A rule's brief_round_s: none for "-", else its milliseconds or the default."""
    if brief == "-":
        return 0.0
    return float(brief_ms) / 1000 if brief_ms else defaults.TIMING_BRIEF_ROUND


def replay(
    spec: str, traces: list[Trace], rule: str, trials: int, per_seed: bool = False
) -> tuple[float, float, float]:
    """Mean rounds, mean farthest-from-median share, and the share of sets past OFF. Each
    grading draws from every recorded round, or (`per_seed`) from one seed's rounds, a
    different seed for each grading of a set, as each grading draws its own inputs."""
    lab, _ = spec_lab(spec)
    cap, shown, *rest = rule.split(":")
    target, least, brief = [*rest, "", "", ""][:3]
    brief, _, brief_ms = brief.partition("@")
    scored = (lab.scoring.zero_speedup, lab.scoring.target_speedup)
    plan = Plan(
        defaults.TIMING_BUDGET,
        target_error=float(target or defaults.TIMING_TARGET_ERROR),
        max_rounds=int(cap),
        shown_error=float(shown),
        min_rounds=int(least or defaults.TIMING_MIN_ROUNDS),
        scored=scored,
        brief_round_s=brief_round_s(brief, brief_ms),
        brief_error=float(brief) if brief not in ("", "-") else defaults.TIMING_BRIEF_ERROR,
    )
    round_s = statistics.median(expected_round_s(t.first) for t in traces)
    pool = [pair for t in traces for pair in t.rounds]
    draw = random.Random(1)
    rounds, farthest = [], []
    for _ in range(trials):
        pools = [t.rounds for t in draw.sample(traces, GRADINGS)] if per_seed else [pool] * GRADINGS
        found = [grading(one, plan, round_s, draw) for one in pools]
        middle = statistics.median(s for s, _ in found)
        farthest.append(max(abs(s / middle - 1) for s, _ in found))
        rounds += [n for _, n in found]
    off = sum(f > OFF for f in farthest) / trials
    return statistics.fmean(rounds), statistics.fmean(farthest), off


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", nargs="*", default=["histogram/reference.cu"])
    parser.add_argument("--rules", nargs="*", default=["16:0.01", "32:0.006"])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=32, help="recorded a timing")
    parser.add_argument("--trials", type=int, default=400, help="sets of five replayed")
    parser.add_argument("--json", type=Path, help="write the recorded runs here")
    parser.add_argument("--traces", type=Path, help="replay these recorded runs instead")
    parser.add_argument(
        "--per-seed", action="store_true", help="each grading of a set replays one seed's rounds"
    )
    args = parser.parse_args(argv)
    if args.traces:
        found = json.loads(args.traces.read_text())
    else:
        if gpu_missing(" to record (or --traces)"):
            return 2
        found = record(args.kernels, args.seeds, args.rounds)
        if args.json:
            args.json.write_text(json.dumps(found))
    print(f"{'kernel':40} {'ms':>7} {'s':>5} {'rule':>9} {'rounds':>6} {'±med':>6} {'>1%':>5}")
    for spec, entry in found.items():
        traces = [
            Trace(tuple(t["first"]), [tuple(p) for p in t["rounds"]]) for t in entry["traces"]
        ]
        ms = statistics.median(s for t in traces for s, _ in t.rounds)
        for rule in args.rules:
            rounds, farthest, off = replay(spec, traces, rule, args.trials, args.per_seed)
            print(
                f"{spec:40} {ms:7.4f} {entry['seconds']:5.2f} {rule:>9} {rounds:6.1f} "
                f"{100 * farthest:5.2f}% {100 * off:4.0f}%"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
