"""The tolerance accepts any float32 summation order and rejects one wrong product; the
precision test accepts float32 and rejects half, bfloat16 and TF32 inputs."""

import math

import numpy as np
import pytest
import terms_kit as tk  # tests/ is on sys.path

from grader.judge import cases
from grader.judge.compare import PRECISION, allowances, compare, gamma, poisoned
from grader.labs import get
from grader.model.lab import Case
from grader.model.launch import POISON_BITS, bits_as_float


def matmul_case(width):
    lab = get("matmul-naive")
    case = Case(f"w{width}", {"Width": width}, seed=width)
    inputs = cases.make_inputs(lab, case)
    return lab, case, inputs, cases.expected_outputs(lab, case, inputs)["P"]


def compared(lab, case, inputs, want, got):
    allowed = allowances(lab, case, inputs)["P"]
    return compare("P", want, got, allowed.tolerance, allowed.magnitude)


def float32_sum(m, n, order):
    """P = M N summed in float32 along k in the given order."""
    acc = np.zeros((m.shape[0], n.shape[1]), np.float32)
    for k in order:
        acc = (acc + np.outer(m[:, k], n[k, :]).astype(np.float32)).astype(np.float32)
    return acc


@pytest.mark.parametrize("width", [1, 17, 131, 517])
def test_float32_sums_in_any_order_pass(width):
    lab, case, inputs, want = matmul_case(width)
    m, n = inputs["M"], inputs["N"]
    for order in (range(width), reversed(range(width))):
        found = compared(lab, case, inputs, want, float32_sum(m, n, order))
        assert found.ok and found.precision < 1.0
    assert compared(lab, case, inputs, want, (m @ n).astype(np.float32)).ok


@pytest.mark.parametrize("width", [17, 517])
def test_one_missing_product_fails(width):
    lab, case, inputs, want = matmul_case(width)
    m, n = inputs["M"], inputs["N"]
    got = float32_sum(m, n, range(width))
    got[3 % width, 5 % width] -= m[3 % width, width - 1] * n[width - 1, 5 % width]
    result = compared(lab, case, inputs, want, got)
    assert result.mismatches == 1
    assert result.first_mismatch().index == (3 % width, 5 % width)


@pytest.mark.parametrize("bits", tk.LOWER.values())
def test_products_of_lower_precision_inputs_fail_the_precision_test(bits):
    lab, case, inputs, want = matmul_case(517)
    m, n = (tk.rounded(inputs[k], bits).astype(np.float64) for k in ("M", "N"))
    found = compared(lab, case, inputs, want, (m @ n).astype(np.float32))
    assert found.imprecise and found.like_lower_precision and not found.ok
    assert found.precision > 10 * PRECISION


def test_an_output_off_only_in_precision_fails_with_no_wrong_element():
    lab, case, inputs, want = matmul_case(64)
    allowed = allowances(lab, case, inputs)["P"]
    # every element off by 4 PRECISION u B, which is within its tolerance (5 sqrt(64) u B)
    off = 4 * PRECISION * 2.0**-24 * allowed.magnitude
    got = want + np.where(np.arange(want.size) % 2, off.ravel(), -off.ravel()).reshape(want.shape)
    found = compared(lab, case, inputs, want, got.astype(np.float32))
    assert found.mismatches == 0 and found.first_mismatch() is None
    assert found.imprecise and found.like_lower_precision and not found.ok


def test_gamma_has_no_bound_past_one_over_u():
    assert gamma(np.array([1, 1 << 23, 1 << 24, 1 << 30])).tolist()[2:] == [np.inf, np.inf]
    assert 0 < gamma(1) < gamma(1 << 23) < np.inf


def test_conv_tolerance_at_the_largest_valid_kernel():
    lab = get("conv2d-valid")
    case = cases.find_case(lab, "33x40-k33x40", "s")
    inputs = cases.make_inputs(lab, case)
    want = cases.expected_outputs(lab, case, inputs)["output"]
    allowed = allowances(lab, case, inputs)["output"]
    assert np.all(allowed.tolerance < 0.25)  # one product is at least 0.25
    got = np.array([[np.sum(inputs["input"] * inputs["kernel"], dtype=np.float32)]])
    assert compare("output", want, got, allowed.tolerance, allowed.magnitude).ok


def test_poison_nan_and_first_mismatch():
    want = np.arange(6.0).reshape(2, 3)
    got = want.astype(np.float32)
    got[0, 2] = bits_as_float(POISON_BITS)
    got[1, 1] = np.nan
    result = compare("P", want, got, np.full(want.shape, 1e-6))
    assert result.mismatches == 2
    assert poisoned(got).sum() == 1 and result.unwritten[0, 2] and result.nan[1, 1]
    first = result.first_mismatch()
    assert first.index == (0, 2) and first.expected == 2.0 and first.got is None
    assert math.isnan(result.max_abs_error)  # no finite "max error" for an output with NaN


def test_infinity_is_the_largest_error_and_a_clean_output_keeps_its_number():
    want = np.arange(4.0)
    got = want.astype(np.float32)
    got[1] = np.inf
    assert compare("P", want, got, np.full(4, 1e-6)).max_abs_error == math.inf
    got[1] = 1.5
    assert compare("P", want, got, np.full(4, 1e-6)).max_abs_error == 0.5


def test_a_case_with_nan_in_any_output_has_a_nan_max_error_whatever_the_order():
    from grader.judge.verdict import _summarise
    from grader.model.result import CaseResult, Status

    want = np.arange(4.0)
    clean = compare("P", want, want.astype(np.float32) + 0.25, np.full(4, 1e-6))
    holed = want.astype(np.float32)
    holed[2] = np.nan
    nan = compare("Q", want, holed, np.full(4, 1e-6))
    for order in ([clean, nan], [nan, clean]):
        case = CaseResult(name="c", visibility="public", sizes={}, status=Status.FAILED)
        _summarise(case, order)
        assert math.isnan(case.max_abs_error)
    _summarise(case, [clean])
    assert case.max_abs_error == 0.25


def test_zeros_are_wrong_sums_and_not_lower_precision():
    lab, case, inputs, want = matmul_case(517)
    found = compared(lab, case, inputs, want, np.zeros(want.shape, np.float32))
    assert found.mismatches > 0.99 * want.size  # all but the sums that come out near 0
    assert found.imprecise and not found.like_lower_precision


@pytest.mark.parametrize("name", ["spmv-csr", "spmv-jds"])
def test_each_sparse_row_is_held_to_its_own_entries(name):
    """A row's tolerance follows its own count of entries and sum of |a x|: the long row
    gets its own, the short rows theirs, an empty row only the absolute slack."""
    lab = get(name)
    case = cases.find_case(lab, "long-row-517x4096", "secret")
    inputs = cases.make_inputs(lab, case)
    allowed = allowances(lab, case, inputs)["y"]
    widened = {k: cases.widened(v) for k, v in inputs.items()}

    def y_of(values, x):
        return lab.reference({**widened, "values": values, "x": x}, case.sizes)["y"]

    lengths = y_of(np.ones_like(widened["values"]), np.ones_like(widened["x"]))
    longest = int(np.argmax(lengths))
    assert lengths[longest] == case.sizes["long_row"] == lengths.max() > 10 * np.median(lengths)
    tol = allowed.tolerance
    short = (lengths > 0) & (lengths <= 4)
    assert tol[longest] > 20 * tol[short].max()
    assert np.all(tol[lengths == 0] == tol[lengths == 0][0]) and (lengths == 0).any()
    magnitude = y_of(np.abs(widened["values"]), np.abs(widened["x"]))
    np.testing.assert_allclose(allowed.magnitude, magnitude)


@pytest.mark.parametrize("value", [np.nan, -np.nan, np.inf, -np.inf])
def test_nan_and_infinity_equal_nothing_not_even_an_expected_nan(value):
    """Whatever NaN's payload or sign, and a tolerance as wide as can be: NaN is no
    wildcard, for a finite expected value or a NaN one, nor infinity a match."""
    wanted = [np.array([1.0, 0.0, -2.5])] + ([np.full(3, np.nan)] if np.isnan(value) else [])
    for want in wanted:
        got = np.full(3, value, np.float32)
        found = compare("P", want, got, np.full(3, np.finfo(np.float64).max), np.ones(3))
        assert found.bad.all() and not found.ok and found.mismatches == 3
    quiet = np.array([0x7FC00000, 0xFFC00001, 0x7F800001], np.uint32).view(np.float32)
    assert compare("P", np.zeros(3), quiet, np.ones(3)).bad.all()  # every NaN bit pattern


def test_minus_zero_is_zero_and_integers_are_compared_as_numbers():
    got = np.array([-0.0, 0.0, -0.0], np.float32)
    assert compare("P", np.array([0.0, -0.0, 0.0]), got, np.zeros(3), np.ones(3)).ok
    bins = np.array([0, 7, 0xFFFFFFFF], np.uint32)
    found = compare("bins", np.array([0, 7, 1]), bins, np.zeros(3))
    assert found.bad.tolist() == [False, False, True]
