"""Comparing a kernel's output with the float64 reference.

Every float output element is a sum of k products of float32 inputs. k is what the
element really sums, counted by the lab's reference on inputs that are 1 where they are
not 0 (a term with a zero factor is exactly 0 and rounds nothing), so no launch macro of
the submission's can change it. B, the element's sum of |terms|, comes from the reference
on |inputs|. Two tests hold an output to what float32 arithmetic can do, u = 2^-24:

Tolerance, element by element. A float32 sum of k terms, in any order, with or without
FMA, is off by at most gamma_k B, gamma_k = k u / (1 - k u) (Higham, Accuracy and
Stability of Numerical Algorithms, 3.1). That worst case grows like k^2 u against a
random sum's sqrt(k), so an element may be off by min(2 gamma_k, LAMBDA sqrt(k) u) B +
ABSOLUTE. The second is Higham and Mary's probabilistic bound (SIAM J. Sci. Comput. 41,
2019, Theorem 3.1), which holds in any order and for any data under independent rounding
errors; float32 sums of the grader's inputs stay under 1.3 sqrt(k) u B (bench/
precision.py). Zeros, a constant, half of the sum, a neighbour's value or one product
more or less (each at least 0.25) stand far outside it.

Precision, over a whole output. On the grader's inputs (random signs, magnitudes in
[0.5, 1)) a float32 sum in any order that does not depend on the data is off by about
0.3 u B whatever k (summing one term after the other, the worst natural order; a tree
much less), so R, the root mean square of error / (u B) over an output, stays under
PRECISION. Half, bfloat16 or TF32 values, products or sums give R from tens to thousands
(docs/precision.md has the figures). A lab with its own tolerance (Lab.tolerance) has no
precision test, and integer outputs are compared exactly."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from grader.judge.cases import widened
from grader.model.lab import Case, Lab
from grader.model.launch import POISON_BITS, as_bits, filled
from grader.model.result import Mismatch

UNIT_ROUNDOFF = 2.0**-24
SAFETY = 2.0  # times the worst case, gamma_k
LAMBDA = 5.0  # of the probabilistic bound
ABSOLUTE = 1e-6
# The largest R allowed. One float32 element's error / (u B) passes 2 once in 5000 and 3
# once in 200000, each further unit some 60 times more rarely: 6 about once in 10^11.
PRECISION = 6.0
# An output computed in lower precision is typically (the median element) off by more
# than float32's rounding, more than u B, and yet right to a few bits, within 1/16 of
# its value, where a wrong sum is off by about its own size.
LOWER_PRECISION = (1.0, 1.0 / 16)


@dataclass(frozen=True)
class Allowance:
    """What float32 arithmetic may get wrong in one output: `tolerance`, element by
    element, and `magnitude`, each element's sum of |terms|, the unit of the precision
    test (None: an exact output, or a lab's own tolerance, which has none)."""

    tolerance: np.ndarray
    magnitude: np.ndarray | None = None


def gamma(terms) -> np.ndarray:
    """gamma_k for each k of `terms`; infinite where k u >= 1, where no bound is left."""
    ku = np.asarray(terms, np.float64) * UNIT_ROUNDOFF
    return np.divide(ku, 1.0 - ku, out=np.full(ku.shape, np.inf), where=ku < 1.0)


def magnitudes(values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """|inputs|: the reference on them gives each element's sum of |terms|."""
    return {name: np.abs(v) for name, v in values.items()}


def counted(values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """1 for each float input that is not 0, integers (indices, counts) as they are: the
    reference on them counts each element's terms."""
    return {
        name: (v != 0).astype(np.float64) if v.dtype.kind == "f" else v
        for name, v in values.items()
    }


@dataclass(frozen=True)
class Sums:
    """The lab's reference on one case's inputs, the three ways a verdict needs it: as
    they are (`expected`, each output's float64 values), made positive (`bound`, each
    element's sum of |terms|) and made 1 (`terms`, its count of terms). `bound` and
    `terms` are empty where every output is exact: no tolerance, so no bound."""

    expected: dict[str, np.ndarray]
    bound: dict[str, np.ndarray]
    terms: dict[str, np.ndarray]


def sums(lab: Lab, case: Case, inputs: dict[str, np.ndarray]) -> Sums:
    """The reference's three sums of `case` (its sizes with the launch macros) on `inputs`."""
    values = {name: widened(v) for name, v in inputs.items()}
    return Sums(lab.reference(values, case.sizes), *_bound_and_terms(lab, case, values))


def _bound_and_terms(lab: Lab, case: Case, values: dict[str, np.ndarray]) -> tuple[dict, dict]:
    if all(out.exact for out in lab.outputs):
        return {}, {}
    return lab.reference(magnitudes(values), case.sizes), lab.reference(counted(values), case.sizes)


def allowances(lab: Lab, case: Case, inputs: dict[str, np.ndarray]) -> dict[str, Allowance]:
    """Each output's Allowance, from the reference on the case's inputs made positive and
    made 1."""
    values = {name: widened(v) for name, v in inputs.items()}
    return allowed(lab, case, Sums({}, *_bound_and_terms(lab, case, values)))


def allowed(lab: Lab, case: Case, found: Sums) -> dict[str, Allowance]:
    """Each output's Allowance from the sums the reference `found` for `case`."""
    if not found.bound:  # every output exact
        return {out.name: Allowance(np.zeros(out.shape(case.sizes))) for out in lab.outputs}
    return {
        name: allowance(lab, case.sizes, b, found.terms[name], name)
        for name, b in found.bound.items()
    }


def allowance(lab: Lab, sizes, bound: np.ndarray, terms: np.ndarray, output: str) -> Allowance:
    """The Allowance of elements of `output` whose sums of |terms| are `bound` and that
    sum `terms` terms: none for an integer output, the lab's own tolerance where it has
    one, else the float32 bound."""
    if lab.array(output).exact:
        return Allowance(np.zeros(np.shape(bound)))
    if lab.tolerance is not None:
        return Allowance(np.asarray(lab.tolerance(sizes, bound, terms), np.float64))
    k = np.asarray(terms, np.float64)
    factor = np.minimum(SAFETY * gamma(k), LAMBDA * np.sqrt(k) * UNIT_ROUNDOFF)
    bound = np.asarray(bound, np.float64)
    return Allowance(factor * bound + ABSOLUTE, bound)


def poisoned(values: np.ndarray) -> np.ndarray:
    """Elements still holding the poison the grader wrote before the run (a float32
    buffer unless the values say otherwise)."""
    values = np.asarray(values)
    if values.dtype.kind != "f" and values.dtype.itemsize in (1, 4):
        return values == filled(POISON_BITS, values.dtype)
    return as_bits(np.asarray(values, np.float32)) == POISON_BITS


@dataclass
class Comparison:
    name: str
    expected: np.ndarray
    got: np.ndarray
    bad: np.ndarray  # outside tolerance, NaN or unwritten
    unwritten: np.ndarray
    nan: np.ndarray  # NaN that is not the poison
    max_abs_error: float | None
    # error / (u * sum|terms|) of each finite element that has terms; None without a
    # precision test
    rounding: np.ndarray | None = None

    @property
    def mismatches(self) -> int:
        return int(self.bad.sum())

    @property
    def precision(self) -> float:
        """R: the root mean square of `rounding`, 0 without one."""
        if self.rounding is None or not self.rounding.size:
            return 0.0
        return float(np.sqrt(np.mean(np.square(self.rounding))))

    @property
    def imprecise(self) -> bool:
        """Further from the float64 values, over the whole output, than float32 gets."""
        return self.precision > PRECISION

    @property
    def like_lower_precision(self) -> bool:
        """Imprecise the way arithmetic in lower precision is, not the way a wrong sum is
        (LOWER_PRECISION)."""
        if not self.imprecise:
            return False
        rounding, relative = LOWER_PRECISION
        error = np.abs(self.got.astype(np.float64) - self.expected)
        counts = np.isfinite(error) & ~self.unwritten & (self.expected != 0)
        if not counts.any():
            return False
        typical = np.median(error[counts] / np.abs(self.expected[counts]))
        return bool(np.median(self.rounding) > rounding and typical <= relative)

    @property
    def ok(self) -> bool:
        return not self.bad.any() and not self.imprecise

    def first_mismatch(self) -> Mismatch | None:
        if not self.bad.any():
            return None
        index = tuple(int(i) for i in np.argwhere(self.bad)[0])
        got = float(self.got[index])
        return Mismatch(
            index=index, expected=float(self.expected[index]), got=None if np.isnan(got) else got
        )


def compare(
    name: str,
    expected: np.ndarray,
    got: np.ndarray,
    tol: np.ndarray,
    magnitude: np.ndarray | None = None,
) -> Comparison:
    """`got` as the kernel left it: float32, or an integer type compared exactly (an
    element that holds the poison and should not is unwritten). With `magnitude`, each
    element's sum of |terms|, the output also takes the precision test."""
    got = np.asarray(got)
    if got.dtype.kind not in "iu":
        got = got.astype(np.float32, copy=False)
    got = got.reshape(expected.shape)
    unwritten = poisoned(got)
    if got.dtype.kind in "iu":
        unwritten &= expected != filled(POISON_BITS, got.dtype)
    nan = np.isnan(got) & ~unwritten if got.dtype.kind == "f" else np.zeros(got.shape, bool)
    with np.errstate(invalid="ignore"):  # a signalling NaN the kernel wrote stays a NaN
        error = np.abs(got.astype(np.float64) - expected)
    finite = np.isfinite(error)
    bad = ~finite | (error > tol) | unwritten
    # NaN (or infinity) in the output makes the largest error NaN (or infinite): a finite
    # figure taken over the other elements would understate how wrong the output is
    max_error = float(error.max()) if error.size else None
    rounding = None
    if magnitude is not None:
        counts = finite & ~unwritten & (magnitude > 0)
        rounding = error[counts] / (UNIT_ROUNDOFF * magnitude[counts])
    return Comparison(name, expected, got, bad, unwritten, nan, max_error, rounding)


def close(a: np.ndarray, b: np.ndarray, tol: np.ndarray) -> bool:
    """Whether `a` matches `b` everywhere within `tol` (same shapes)."""
    return a.shape == b.shape and bool(np.all(np.abs(a.astype(np.float64) - b) <= tol))
