"""How far float32 sums in the orders kernels add in, and sums in lower precision, are
from the exact sums, in the unit of grader.judge.compare's precision test: R, the root mean
square of error / (u sum|terms|) over an output's elements (u = 2^-24; a case fails, and
a timed launch earns no speed points, above compare.PRECISION).

    python3 bench/precision.py [--labs LAB ...]

For every lab with float outputs: its case whose elements sum the most terms (hidden
cases from a fixed secret), at the lab's default launch macros and at the largest it
accepts, and the grader's own sample of a timed launch. The float32 orders (each
element's own terms, listed by running the lab's sampler on symbols: tests/terms_kit.py)
and half sums are taken on a grid of up to 8 elements per axis, among them the one whose
terms are largest; half (and TF32, which keeps as many bits) and bfloat16 inputs on the
whole output or sample. "worst/tol" is the largest float32 error of any order over its
element's tolerance."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402
import terms_kit as tk  # noqa: E402
from lab_kit import default_interface  # noqa: E402

from grader.backends.timing import sample_axes  # noqa: E402
from grader.grading.timing import expected_sample, plan, sample_inputs  # noqa: E402
from grader.judge import cases  # noqa: E402
from grader.judge.compare import Allowance, allowances, compare, counted  # noqa: E402
from grader.labs import all_labs  # noqa: E402
from grader.model.lab import Case, Lab  # noqa: E402

SECRET = "bench-precision"
PER_AXIS = 8
ORDERS = ("sequential", "tree", "as atomics land", "fused")
COLUMNS = ("lab", "where", "terms", "elements", *ORDERS, "worst/tol", "half sums", "half", "bf16")


def launches(lab: Lab) -> dict[str, dict[str, int]]:
    """The launch macros of a file that defines none, and of one at the lab's limits."""
    default = dict(default_interface(lab).launch)
    return {"default": default, **({"largest": {**default, **lab.limits}} if lab.limits else {})}


def spread(extent: int, top: int) -> np.ndarray:
    return np.unique(np.r_[np.linspace(0, extent - 1, PER_AXIS).astype(int), top])


def precision(want, got, allowed: Allowance) -> float:
    got = np.asarray(got, np.float32)
    return compare("x", want, got, allowed.tolerance, allowed.magnitude).precision


def orders_row(lab, sizes, values, axes, output, want, allowed, rng) -> list[str]:
    """R of each float32 order and of half sums on the grid `axes`, and the worst error
    over tolerance."""
    sums = tk.sums_of(lab, sizes, values, axes, output, rng)
    row, worst = [], 0.0
    for order in ORDERS:
        if order not in sums.orders:
            row.append("-")
            continue
        got = sums.orders[order]
        row.append(f"{precision(want, got, allowed):.2f}")
        error = np.abs(got.astype(np.float64) - want)
        worst = max(worst, float(np.max(error / allowed.tolerance)))
    return [*row, f"{worst:.3f}", f"{precision(want, sums.half, allowed):.0f}"]


def lower_row(outputs, values, want, allowed) -> list[str]:
    """R of `outputs` (inputs -> the output) on `values` rounded to each lower precision."""
    out = []
    for bits in tk.LOWER.values():
        got = outputs({k: tk.rounded(v, bits) for k, v in values.items()})
        out.append(f"{precision(want, got, allowed):.0f}")
    return out


def most_terms(lab: Lab, sizes, values, outputs) -> int:
    """The most terms an element of a float output sums (`outputs`: the lab's reference,
    or its sampler on a grid)."""
    widened = {k: cases.widened(v) for k, v in values.items()}
    counts = outputs(counted(widened), sizes)
    return int(max(np.max(counts[o.name]) for o in lab.outputs if not o.exact))


def largest_case(lab: Lab, launch: dict[str, int]) -> tuple[Case, dict]:
    """The case whose elements sum the most terms, and its inputs."""
    found = []
    for case in cases.cases_for(lab, SECRET):
        case = Case(case.name, lab.full_sizes({**case.sizes, **launch}), seed=case.seed)
        inputs = cases.make_inputs(lab, case)
        found.append((most_terms(lab, case.sizes, inputs, lab.reference), case.name, case, inputs))
    _, _, case, inputs = max(found, key=lambda f: f[:2])
    return case, inputs


def case_rows(lab: Lab, rng) -> list[list[str]]:
    rows = []
    for label, launch in launches(lab).items():
        case, inputs = largest_case(lab, launch)
        expected = cases.expected_outputs(lab, case, inputs)
        allowed = allowances(lab, case, inputs)
        for out in (o.name for o in lab.outputs if not o.exact):
            a = allowed[out]
            top = np.unravel_index(int(np.argmax(a.magnitude)), a.magnitude.shape)
            axes = tuple(spread(n, t) for n, t in zip(a.magnitude.shape, top, strict=True))
            at = np.ix_(*axes)
            picked = Allowance(a.tolerance[at], a.magnitude[at])
            needs = lab.sampler.needs(case.sizes, axes, tk.reader(inputs))
            values = tk.values_at(inputs, needs)
            whole = lambda v: cases.expected_outputs(lab, case, v)[out]  # noqa: E731, B023
            rows.append(
                [
                    lab.name,
                    f"{case.name} ({label})",
                    str(most_terms(lab, case.sizes, inputs, lab.reference)),
                    str(expected[out].size),
                    *orders_row(lab, case.sizes, values, axes, out, expected[out][at], picked, rng),
                    *lower_row(whole, inputs, expected[out], a),
                ]
            )
    return rows


def timed_rows(lab: Lab, rng, seed: int = 5) -> list[list[str]]:
    rows = []
    timing, constants = cases.timing_inputs(lab, seed)
    for label, launch in launches(lab).items():
        case = replace(timing, sizes=lab.full_sizes({**timing.sizes, **launch}))
        check = plan(lab, case, seed, constants)
        for sample in (s for s in check.samples if not lab.array(s.buffer).exact):
            out = sample.buffer
            axes = sample_axes(sample, seed, 0)
            want, a = expected_sample(lab, case, check, constants, sample, axes, 0)
            values = sample_inputs(lab, case, check, constants, axes, 0)
            top = np.unravel_index(int(np.argmax(a.magnitude)), a.magnitude.shape)
            few = tuple(ax[spread(len(ax), t)] for ax, t in zip(axes, top, strict=True))
            at = np.ix_(*(np.searchsorted(ax, f) for ax, f in zip(axes, few, strict=True)))
            few_values = sample_inputs(lab, case, check, constants, few, 0)
            picked = Allowance(a.tolerance[at], a.magnitude[at])
            sampled = lambda v, s: lab.sampler.combine(s, v, axes)  # noqa: E731, B023
            rows.append(
                [
                    lab.name,
                    f"timed ({label})",
                    str(most_terms(lab, case.sizes, values, sampled)),
                    str(want.size),
                    *orders_row(lab, case.sizes, few_values, few, out, want[at], picked, rng),
                    *lower_row(lambda v: sampled(v, case.sizes)[out], values, want, a),  # noqa: B023
                ]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labs", nargs="*", help="the labs (default: every lab with floats)")
    args = parser.parse_args()
    labs = all_labs()
    floats = sorted(n for n, lab in labs.items() if not all(o.exact for o in lab.outputs))
    rng = np.random.default_rng(3)
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for name in args.labs or floats:
        for row in case_rows(labs[name], rng) + timed_rows(labs[name], rng):
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
