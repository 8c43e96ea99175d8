"""No output passes without the work, and float32 passes in any order: for every lab the
registry finds, from the lab model alone (inputs -> reference -> Allowance -> compare;
no backend), so a new lab is covered as soon as it exists.

For every case (public, hidden with a fixed secret, random), at the lab's default launch
macros and at the largest it accepts:
- zeros, a constant, the sum of half the inputs and each element's neighbour's right
  answer fail;
- each element's own terms (listed by running the lab's sampler on symbols,
  tests/terms_kit.py) summed in float32 in the orders kernels add in pass, on a few
  elements where the sums are largest;
- the reference on inputs rounded to half or bfloat16 fails the precision test,
  wherever the output has enough elements to judge.
At the timed size, on the grader's own timed sample, the same float32 sums pass and
the lower precisions fail."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import numpy as np
import pytest
import terms_kit as tk  # tests/ is on sys.path
from lab_kit import default_interface

from grader import cases, timing_check
from grader.backends import timed
from grader.compare import Comparison, allowances, compare, counted
from grader.labs import all_labs
from grader.labs.model import Case, Lab

SECRET = "tolerance-property"
# An output of fewer elements can be lucky: a single element rounded in half precision
# lands within float32's error once in a few dozen draws at the largest sums.
JUDGED = 16
# Inputs a case's few sampled elements may read to be summed as symbols (a second each
# per million); the timed size is summed whatever it reads.
SYMBOLIC = 1 << 18
FLOAT_LABS = sorted(n for n, lab in all_labs().items() if not all(o.exact for o in lab.outputs))


def launches(lab: Lab) -> dict[str, dict[str, int]]:
    """The launch macros of a file that defines none, and of one at the lab's limits."""
    default = dict(default_interface(lab).launch)
    out = {"default": default}
    if lab.limits:
        out["largest"] = {**default, **lab.limits}
    return out


def sized(lab: Lab, case: Case, launch: dict[str, int]) -> Case:
    """`case` with the launch macros among its sizes (grader.launch.at_launch)."""
    return replace(case, sizes=lab.full_sizes({**case.sizes, **launch}))


@cache
def lab_cases(name: str) -> list[Case]:
    return cases.cases_for(all_labs()[name], SECRET)


class Graded:
    """One case of a lab at one launch: its inputs, float64 outputs and Allowances."""

    def __init__(self, lab: Lab, case: Case) -> None:
        self.lab, self.case = lab, case
        self.inputs = cases.make_inputs(lab, case)
        self.expected = cases.expected_outputs(lab, case, self.inputs)
        self.allowed = allowances(lab, case, self.inputs)
        self.outputs = [o.name for o in lab.outputs if not o.exact]

    def same_sums(self, other: Graded) -> bool:
        """Whether every output sums the same terms as in `other` (other launch macros)."""
        return all(
            np.array_equal(self.allowed[n].magnitude, other.allowed[n].magnitude)
            for n in self.outputs
        )

    def judge(self, name: str, got: np.ndarray) -> Comparison:
        a, want = self.allowed[name], self.expected[name]
        return compare(name, want, np.asarray(got, np.float32), a.tolerance, a.magnitude)

    def reference(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return cases.expected_outputs(self.lab, self.case, inputs)

    def wrong_outputs(self, name: str, rng) -> dict[str, np.ndarray]:
        """Outputs that do not do the work, each of which must fail."""
        want = self.expected[name]
        out = {"zeros": np.zeros_like(want), "ones": np.ones_like(want)}
        if want.size > 1:
            out["the mean"] = np.full_like(want, want.mean())
        for axis, extent in enumerate(want.shape):
            if extent > 1:
                out[f"the neighbour along axis {axis}"] = np.roll(want, 1, axis)
        terms = self.lab.reference(counted(self._widened(self.inputs)), self.case.sizes)[name]
        for input_name, values in self.inputs.items():
            if values.dtype.kind != "f" or values.size < 2:
                continue
            half = values * (rng.random(values.shape) < 0.5)
            changed = {**self.inputs, input_name: half}
            kept = self.lab.reference(counted(self._widened(changed)), self.case.sizes)[name]
            if np.any(kept != terms):  # some element lost a term
                out[f"half of {input_name}"] = self.reference(changed)[name]
        return out

    @staticmethod
    def _widened(inputs):
        return {k: cases.widened(v) for k, v in inputs.items()}


def verdict(found: Comparison) -> str:
    return f"{found.mismatches} elements wrong, R {found.precision:.3g}"


def values_at(inputs: dict[str, np.ndarray], needs) -> dict[str, np.ndarray]:
    """The inputs at the coordinates the sampler needs (None: all), 0 outside."""
    out = {}
    for name, coords in needs.items():
        values = cases.widened(inputs[name])
        if coords is None:
            out[name] = values
            continue
        shape = values.shape
        inside = np.logical_and.reduce(
            np.broadcast_arrays(*((c >= 0) & (c < n) for c, n in zip(coords, shape, strict=True)))
        )
        clipped = tuple(np.clip(c, 0, n - 1) for c, n in zip(coords, shape, strict=True))
        out[name] = np.where(inside, values[clipped], 0)
    return out


def largest_axes(magnitude: np.ndarray, rng) -> tuple[np.ndarray, ...]:
    """A small grid of elements: the first, the one whose terms are largest, a random one."""
    top = np.unravel_index(int(np.argmax(magnitude)), magnitude.shape)
    return tuple(
        np.unique([0, top[axis], int(rng.integers(extent))])
        for axis, extent in enumerate(magnitude.shape)
    )


def float32_results(lab: Lab, sizes, values: dict[str, np.ndarray], axes, output: str, rng):
    """The sampled elements' float32 sums in every order, and their exact sums."""
    symbolic = {k: tk.symbols(v) if v.dtype.kind == "f" else v for k, v in values.items()}
    grid = lab.sampler.combine(sizes, symbolic, axes)[output]
    listed = [tk.terms(element) for element in np.ravel(grid)]
    exact = tk.padded([e for e, _ in listed], np.float64)
    products = tk.padded([r for _, r in listed], np.float32)
    sums = tk.float32_sums(exact, products, rng)
    shape = np.shape(grid)
    exact_sums = exact.sum(axis=1).reshape(shape)
    return {order: got.reshape(shape) for order, got in sums.items()}, exact_sums


CASES = [(name, case.name) for name in FLOAT_LABS for case in lab_cases(name)]


@pytest.mark.parametrize("name,case_name", CASES)
def test_no_output_passes_without_the_work_and_float32_passes_in_any_order(name, case_name):
    lab = all_labs()[name]
    case = next(c for c in lab_cases(name) if c.name == case_name)
    seen = []
    for launch in launches(lab).values():
        graded = Graded(lab, sized(lab, case, launch))
        if any(graded.same_sums(other) for other in seen):
            continue  # these launch macros change nothing the outputs sum
        seen.append(graded)
        rng = np.random.default_rng(case.seed)
        for output in graded.outputs:
            for what, got in graded.wrong_outputs(output, rng).items():
                assert graded.judge(output, got).bad.any(), f"{output} as {what} passes"
            check_float32_orders(graded, output, rng)
            for precision, bits in tk.LOWER.items():
                inputs = {k: tk.rounded(v, bits) for k, v in graded.inputs.items()}
                found = graded.judge(output, graded.reference(inputs)[output])
                judged = found.rounding.size >= JUDGED
                assert found.imprecise or not judged, f"{output} in {precision}: {verdict(found)}"


def check_float32_orders(graded: Graded, output: str, rng) -> None:
    """A few elements, the largest among them, summed in float32 in every order, pass
    (where they read at most SYMBOLIC inputs)."""
    lab, sizes, allowed = graded.lab, graded.case.sizes, graded.allowed[output]
    axes = largest_axes(allowed.magnitude, rng)
    values = values_at(graded.inputs, lab.sampler.needs(sizes, axes))
    if sum(v.size for v in values.values()) > SYMBOLIC:
        return
    sums, exact = float32_results(lab, sizes, values, axes, output, rng)
    grid = np.ix_(*axes)
    want = graded.expected[output][grid]
    np.testing.assert_allclose(exact, want, rtol=1e-9, atol=1e-12)  # the terms are its own
    for order, got in sums.items():
        found = compare(output, want, got, allowed.tolerance[grid], allowed.magnitude[grid])
        assert found.ok, f"{output} summed {order}: {verdict(found)}"


@pytest.mark.parametrize("name", FLOAT_LABS)
def test_at_the_timed_size_float32_passes_and_half_and_bfloat16_do_not(name):
    """On the grader's own sample of a timed launch (inputs drawn as the GPU draws them)."""
    lab = all_labs()[name]
    timing, seed = cases.timing_case(lab), 5
    constants = cases.timing_constants(lab, timing, seed)
    rng = np.random.default_rng(seed)
    seen = []
    for launch in launches(lab).values():
        case = sized(lab, timing, launch)
        check = timing_check.plan(lab, case, seed)
        for sample in check.samples:
            if lab.array(sample.buffer).exact:
                continue
            axes = timed.sample_axes(sample, seed, 0)
            want, allowed = timing_check.expected_sample(
                lab, case, check, constants, sample, axes, 0
            )
            if any(np.array_equal(allowed.magnitude, m) for m in seen):
                continue  # these launch macros change nothing the outputs sum
            seen.append(allowed.magnitude)
            values = timing_check.sample_inputs(lab, case, check, constants, axes, 0)
            for precision, bits in tk.LOWER.items():
                lower = {k: tk.rounded(v, bits) for k, v in values.items()}
                got = lab.sampler.combine(case.sizes, lower, axes)[sample.buffer]
                found = compare(sample.buffer, want, got, allowed.tolerance, allowed.magnitude)
                assert found.imprecise, f"{precision}: {verdict(found)}"
            # the first, middle and last sampled coordinates of each axis
            few = tuple(np.unique(ax[[0, len(ax) // 2, -1]]) for ax in axes)
            at = np.ix_(*(np.searchsorted(ax, f) for ax, f in zip(axes, few, strict=True)))
            values = timing_check.sample_inputs(lab, case, check, constants, few, 0)
            sums, exact = float32_results(lab, case.sizes, values, few, sample.buffer, rng)
            np.testing.assert_allclose(exact, want[at], rtol=1e-9, atol=1e-12)
            for order, got in sums.items():
                found = compare(
                    sample.buffer, want[at], got, allowed.tolerance[at], allowed.magnitude[at]
                )
                assert found.ok, f"summed {order}: {verdict(found)}"
