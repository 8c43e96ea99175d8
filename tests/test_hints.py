"""Each hint recognises its bug from the wrong elements, and only that bug."""

import numpy as np
import pytest

from grader import cases, hints
from grader.backends.base import POISON_BITS, bits_as_float
from grader.compare import compare, tolerances
from grader.labs import get
from grader.labs.model import Case


def context(lab_name, sizes, mutate, tile=(16, 16, 1)):
    lab = get(lab_name)
    case = Case("t", lab.full_sizes(sizes), seed=7)
    inputs = cases.make_inputs(lab, case)
    want = cases.expected_outputs(lab, case, inputs)
    name = lab.outputs[0].name
    tol = tolerances(lab, case, inputs)[name]
    got = mutate(want[name].astype(np.float32).copy(), inputs, lab, case)
    cmp = compare(name, want[name], got, tol)
    return lab, hints.Context(lab, case.sizes, inputs, cmp, tol, tile)


def hint_of(lab_name, sizes, mutate, tile=(16, 16, 1)):
    lab, ctx = context(lab_name, sizes, mutate, tile)
    return hints.first_hint(lab.hints, ctx)


def corrupt_last_tile(got, *_):
    got[512:, :] += 1.0
    got[:, 512:] += 1.0
    return got


def test_last_partial_tile():
    hint = hint_of("matmul-tiled", {"Width": 517}, corrupt_last_tile)
    assert "last, partial tile" in hint and "512" in hint


def test_truncated_tile_loop():
    def truncated(got, inputs, lab, case):
        m = inputs["M"].astype(np.float64)
        m[:, 512:] = 0
        return (m @ inputs["N"]).astype(np.float32)

    hint = hint_of("matmul-tiled", {"Width": 517}, truncated)
    assert "k >= 512" in hint and "ceil(Width / TILE)" in hint


def test_transposed():
    assert "transpose" in hint_of("matmul-naive", {"Width": 64}, lambda g, *_: g.T.copy())


def test_swapped_operands():
    def swap(got, inputs, *_):
        return (inputs["N"].astype(np.float64) @ inputs["M"]).astype(np.float32)

    assert "exchanged" in hint_of("matmul-naive", {"Width": 64}, swap)


def test_nothing_and_partly_written():
    poison = bits_as_float(POISON_BITS)

    def nothing(got, *_):
        got[:] = poison
        return got

    def tail(got, *_):
        got[:, 60:] = poison
        return got

    assert "Nothing was written" in hint_of("matmul-naive", {"Width": 64}, nothing)
    assert "x 60..63" in hint_of("matmul-naive", {"Width": 64}, tail)


@pytest.mark.parametrize("lab", ["conv2d", "conv2d-clamp", "conv2d-wrap"])
def test_ghost_border(lab):
    def border(got, *_):
        got[0, 5] += 1
        got[-2, 7] -= 1
        return got

    hint = hint_of(lab, {"Width": 100, "Height": 60, "MASK_WIDTH": 5}, border)
    assert "border 2 elements wide" in hint


def test_ghost_border_names_the_rule():
    def border(got, *_):
        got[:, 0] += 1
        return got

    sizes = {"Width": 100, "Height": 60, "MASK_WIDTH": 5}
    assert "nearest edge" in hint_of("conv2d-clamp", sizes, border)
    assert "repeats" in hint_of("conv2d-wrap", sizes, border)


@pytest.mark.parametrize(
    "lab,mask", [("conv2d", "mask"), ("conv2d-valid", "kernel"), ("conv3d", "mask")]
)
def test_flipped_mask(lab, mask):
    sizes = {
        "conv2d": {"Width": 40, "Height": 30, "MASK_WIDTH": 5},
        "conv2d-valid": {"input_rows": 40, "input_cols": 30, "kernel_rows": 3, "kernel_cols": 5},
        "conv3d": {"W": 12, "H": 10, "D": 9, "MASK_WIDTH": 3},
    }[lab]

    def flip(got, inputs, spec, case):
        changed = {k: v.astype(np.float64) for k, v in inputs.items()}
        changed[mask] = np.flip(changed[mask])
        return spec.reference(changed, case.sizes)[spec.outputs[0].name].astype(np.float32)

    assert "flipped" in hint_of(lab, sizes, flip)


def test_shifted_by_one():
    def shift(got, *_):
        return np.roll(got, 1, axis=1)

    hint = hint_of("conv2d", {"Width": 64, "Height": 48, "MASK_WIDTH": 5}, shift)
    assert "moved by 1 along x" in hint


def test_a_random_error_gets_no_pattern_hint():
    def scatter(got, *_):
        got[10, 20] += 3.0
        got[30, 3] -= 2.0
        return got

    assert hint_of("matmul-naive", {"Width": 64}, scatter) is None


def test_pitch_hint_for_nan_outputs():
    def nan(got, *_):
        got[1, 2, 3] = np.nan
        return got

    hint = hint_of("conv3d-pitched", {"W": 20, "H": 10, "D": 6, "MASK_WIDTH": 5}, nan)
    assert "pitch" in hint


def test_square_detection():
    assert hints.is_square({"Width": 5, "Height": 5, "MASK_WIDTH": 3})
    assert not hints.is_square({"W": 5, "H": 4, "D": 5})
    assert hints.is_square({"Width": 64})
