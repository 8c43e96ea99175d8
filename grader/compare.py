"""Comparing a kernel's output with the float64 reference.

Tolerance. Every output element is a sum of k products of float32 values. Summed in
float32 in any order, with or without FMA, the rounding error is at most
gamma_k * sum|a_i b_i| with gamma_k = k u / (1 - k u) and u = 2^-24 (Higham, Accuracy and
Stability of Numerical Algorithms, 3.1). The grader allows twice that bound, element by
element, computing sum|a_i b_i| by running the lab's reference on |inputs|. Inputs have
magnitudes in [0.5, 1), so one missing or extra product (at least 0.25) stands far above
the tolerance at every size the cases use. A lab may define its own tolerance from the
same bound (Lab.tolerance), and integer outputs are compared exactly."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.backends.base import POISON_BITS, as_bits, filled
from grader.cases import widened
from grader.labs.model import Case, Lab
from grader.result import Mismatch

UNIT_ROUNDOFF = 2.0**-24
SAFETY = 2.0
ABSOLUTE = 1e-6


def gamma(terms: int) -> float:
    ku = terms * UNIT_ROUNDOFF
    return ku / (1.0 - ku)


def tolerances(lab: Lab, case: Case, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    if all(out.exact for out in lab.outputs):  # no tolerance, so no bound to compute
        return {out.name: np.zeros(out.shape(case.sizes)) for out in lab.outputs}
    magnitudes = {name: np.abs(widened(values)) for name, values in inputs.items()}
    bound = lab.reference(magnitudes, case.sizes)
    return {name: tolerance(lab, case.sizes, b, name) for name, b in bound.items()}


def tolerance(lab: Lab, sizes, bound: np.ndarray, output: str) -> np.ndarray:
    """The tolerance of elements of `output` whose sums of |terms| are `bound`: none for
    an integer output, the lab's own where it has one, else twice the worst case of a
    float sum of lab.terms terms."""
    if lab.array(output).exact:
        return np.zeros(np.shape(bound))
    if lab.tolerance is not None:
        return np.asarray(lab.tolerance(sizes, bound), np.float64)
    return SAFETY * gamma(lab.terms(sizes)) * bound + ABSOLUTE


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

    @property
    def mismatches(self) -> int:
        return int(self.bad.sum())

    @property
    def ok(self) -> bool:
        return not self.bad.any()

    def first_mismatch(self) -> Mismatch | None:
        if self.ok:
            return None
        index = tuple(int(i) for i in np.argwhere(self.bad)[0])
        got = float(self.got[index])
        return Mismatch(index, float(self.expected[index]), None if np.isnan(got) else got)


def compare(name: str, expected: np.ndarray, got: np.ndarray, tol: np.ndarray) -> Comparison:
    """`got` as the kernel left it: float32, or an integer type compared exactly (an
    element that holds the poison and should not is unwritten)."""
    got = np.asarray(got)
    if got.dtype.kind not in "iu":
        got = got.astype(np.float32, copy=False)
    got = got.reshape(expected.shape)
    unwritten = poisoned(got)
    if got.dtype.kind in "iu":
        unwritten &= expected != filled(POISON_BITS, got.dtype)
    nan = np.isnan(got) & ~unwritten if got.dtype.kind == "f" else np.zeros(got.shape, bool)
    error = np.abs(got.astype(np.float64) - expected)
    finite = np.isfinite(error)
    bad = ~finite | (error > tol) | unwritten
    # NaN (or infinity) in the output makes the largest error NaN (or infinite): a finite
    # figure taken over the other elements would understate how wrong the output is
    max_error = float(error.max()) if error.size else None
    return Comparison(name, expected, got, bad, unwritten, nan, max_error)


def close(a: np.ndarray, b: np.ndarray, tol: np.ndarray) -> bool:
    """Whether `a` matches `b` everywhere within `tol` (same shapes)."""
    return a.shape == b.shape and bool(np.all(np.abs(a.astype(np.float64) - b) <= tol))
