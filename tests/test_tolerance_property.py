"""No output passes without the work, and float32 passes in any order: for every lab the
registry finds, from the lab model alone (inputs -> reference -> Allowance -> compare;
no backend), so a new lab is covered as soon as it exists.

For every case (public, hidden with a fixed secret, random), at the lab's default launch
macros and at the largest it accepts:
- zeros fail, and so do a constant, the sum of half the inputs and each element's
  neighbour's right answer, unless one is the right answer itself;
- each element's own terms (listed by running the lab's sampler on symbols,
  tests/terms_kit.py) summed in float32 in the orders kernels add in pass, on a few
  elements where the sums are largest;
- lower precision fails the precision test wherever it cannot hide in float32's own
  rounding: the reference on inputs rounded to bfloat16, or to half (as TF32 rounds
  them) where no element sums more than HALF_INPUTS_SHOW terms, on outputs where at
  least JUDGED elements sum a term; and the sampled elements' products and sums in half
  precision, where they sum any.
At the timed size, on the grader's own timed sample, the same float32 sums pass and
the same lower precisions fail."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import numpy as np
import pytest
import terms_kit as tk  # tests/ is on sys.path
from lab_kit import default_interface

from grader.backends.timing import sample_axes
from grader.grading.timing import expected_sample, plan, sample_inputs
from grader.judge import cases
from grader.judge.compare import Allowance, Comparison, allowances, compare, counted
from grader.labs import all_labs
from grader.model.lab import Case, Lab

SECRET = "tolerance-property"
# On fewer elements (that sum any term) lower precision can be lucky: one element of 2^16
# terms with half inputs is off by about 12 u B, and by less than 6 u B one time in three.
JUDGED = 16
# Half (or TF32) inputs summed in float give R of 12 or more up to 2^16 terms an element,
# but only 6 to 11 at scan's 2^20, where float32's own rounding has grown as large;
# bfloat16 inputs give 100 or more, half sums 1500 or more (bench/precision.py).
HALF_INPUTS_SHOW = 1 << 16
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
    """`case` with the launch macros among its sizes (grader.judge.launch.at_launch)."""
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
        self.terms = lab.reference(counted(self._widened(self.inputs)), case.sizes)
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
        """Outputs that do not do the work, each of which must fail: those that are not
        the right answer itself, and zeros always (a case whose answer is all zeros gives
        points to a kernel that writes nothing but zeros)."""
        want = self.expected[name]
        out = {"zeros": np.zeros_like(want), "ones": np.ones_like(want)}
        if want.size > 1:
            out["the mean"] = np.full_like(want, want.mean())
        for axis, extent in enumerate(want.shape):
            if extent > 1:
                out[f"the neighbour along axis {axis}"] = np.roll(want, 1, axis)
        terms = self.terms[name]
        for input_name, values in self.inputs.items():
            if values.dtype.kind != "f" or values.size < 2:
                continue
            half = values * (rng.random(values.shape) < 0.5)
            changed = {**self.inputs, input_name: half}
            kept = self.lab.reference(counted(self._widened(changed)), self.case.sizes)[name]
            if np.any(kept != terms):  # some element lost a term
                out[f"half of {input_name}"] = self.reference(changed)[name]
        return {
            what: got
            for what, got in out.items()
            if what == "zeros" or not np.array_equal(got, want)
        }

    @staticmethod
    def _widened(inputs):
        return {k: cases.widened(v) for k, v in inputs.items()}


def verdict(found: Comparison) -> str:
    return f"{found.mismatches} elements wrong, R {found.precision:.3g}"


def largest_axes(magnitude: np.ndarray, rng) -> tuple[np.ndarray, ...]:
    """A small grid of elements: the first, the one whose terms are largest, a random one."""
    top = np.unravel_index(int(np.argmax(magnitude)), magnitude.shape)
    return tuple(
        np.unique([0, top[axis], int(rng.integers(extent))])
        for axis, extent in enumerate(magnitude.shape)
    )


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
            if np.count_nonzero(graded.allowed[output].magnitude) < JUDGED:
                continue  # too few elements sum any term
            for precision, bits in tk.LOWER.items():
                if shows(precision, graded.terms[output]):
                    inputs = {k: tk.rounded(v, bits) for k, v in graded.inputs.items()}
                    found = graded.judge(output, graded.reference(inputs)[output])
                    assert found.imprecise, f"{output} in {precision}: {verdict(found)}"


def shows(precision: str, terms: np.ndarray) -> bool:
    """Whether inputs rounded to `precision` must fail the precision test."""
    return precision != "half" or int(np.max(terms)) <= HALF_INPUTS_SHOW


def check_float32_orders(graded: Graded, output: str, rng) -> None:
    """A few elements, the largest among them, summed in float32 in every order, pass
    (where they read at most SYMBOLIC inputs)."""
    lab, sizes, allowed = graded.lab, graded.case.sizes, graded.allowed[output]
    axes = largest_axes(allowed.magnitude, rng)
    values = tk.values_at(graded.inputs, lab.sampler.needs(sizes, axes, tk.reader(graded.inputs)))
    if sum(v.size for v in values.values()) > SYMBOLIC:
        return
    grid = np.ix_(*axes)
    check_sums(
        tk.sums_of(lab, sizes, values, axes, output, rng),
        graded.expected[output][grid],
        Allowance(allowed.tolerance[grid], allowed.magnitude[grid]),
    )


def check_sums(sums: tk.Sums, want: np.ndarray, allowed: Allowance) -> None:
    """Float32 sums in every order pass, half sums fail the precision test."""
    np.testing.assert_allclose(sums.exact, want, rtol=1e-9, atol=1e-12)  # the terms are its own
    for order, got in sums.orders.items():
        found = compare("output", want, got, allowed.tolerance, allowed.magnitude)
        assert found.ok, f"summed {order}: {verdict(found)}"
    if not allowed.magnitude.any():
        return  # no element sums a term (empty rows): no precision to lack
    half = compare("output", want, sums.half, allowed.tolerance, allowed.magnitude)
    assert half.imprecise, f"half sums: {verdict(half)}"


@pytest.mark.parametrize("name", FLOAT_LABS)
def test_at_the_timed_size_float32_passes_and_half_and_bfloat16_do_not(name):
    """On the grader's own sample of a timed launch (inputs drawn as the GPU draws them)."""
    lab = all_labs()[name]
    seed = 5
    timing, constants = cases.timing_inputs(lab, seed)
    rng = np.random.default_rng(seed)
    seen = []
    for launch in launches(lab).values():
        case = sized(lab, timing, launch)
        check = plan(lab, case, seed, constants)
        for sample in check.samples:
            if lab.array(sample.buffer).exact:
                continue
            axes = sample_axes(sample, seed, 0)
            want, allowed = expected_sample(lab, case, check, constants, sample, axes, 0)
            if any(np.array_equal(allowed.magnitude, m) for m in seen):
                continue  # these launch macros change nothing the outputs sum
            seen.append(allowed.magnitude)
            values = sample_inputs(lab, case, check, constants, axes, 0)
            terms = lab.sampler.combine(case.sizes, counted(values), axes)[sample.buffer]
            for precision, bits in tk.LOWER.items():
                if not shows(precision, terms):
                    continue
                lower = {k: tk.rounded(v, bits) for k, v in values.items()}
                got = lab.sampler.combine(case.sizes, lower, axes)[sample.buffer]
                found = compare(sample.buffer, want, got, allowed.tolerance, allowed.magnitude)
                assert found.imprecise, f"{precision}: {verdict(found)}"
            # the first, middle and last sampled coordinates of each axis
            few = tuple(np.unique(ax[[0, len(ax) // 2, -1]]) for ax in axes)
            at = np.ix_(*(np.searchsorted(ax, f) for ax, f in zip(axes, few, strict=True)))
            values = sample_inputs(lab, case, check, constants, few, 0)
            check_sums(
                tk.sums_of(lab, case.sizes, values, few, sample.buffer, rng),
                want[at],
                Allowance(allowed.tolerance[at], allowed.magnitude[at]),
            )
