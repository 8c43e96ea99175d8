"""Lab definitions against the design's table, their numpy references against loops,
and case generation from a secret."""

import itertools

import numpy as np
import pytest
from lab_kit import default_interface

from grader import cases
from grader.labs import all_labs, get, numerics
from grader.labs.model import Case
from grader.launch import launch_sizes

DESIGN_KERNELS = {
    "matmul-naive": "__global__ void matmul(const float* M, const float* N, float* P, int Width)",
    "matmul-tiled": "__global__ void matmul(const float* M, const float* N, float* P, int Width)",
    "conv2d": "__global__ void conv2d(const float* N, float* P, int Width, int Height)",
    "conv2d-clamp": "__global__ void conv2d(const float* N, float* P, int Width, int Height)",
    "conv2d-wrap": "__global__ void conv2d(const float* N, float* P, int Width, int Height)",
    "conv2d-valid": "__global__ void conv2d_valid(const float* input, float* output, "
    "int input_rows, int input_cols, int kernel_rows, int kernel_cols, int output_rows, "
    "int output_cols)",
    "conv3d": "__global__ void conv3d(const float* N, float* P, int W, int H, int D)",
    "conv3d-pitched": "__global__ void conv3d_pitched(const float* N, float* P, size_t pitchN, "
    "size_t pitchP, int W, int H, int D)",
    "histogram": "__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)",
    "reduction": "__global__ void reduction(const float* input, float* output, int n)",
    "scan": "__global__ void scan(const float* input, float* output, float* sums, int n)",
}
DESIGN_CONSTANTS = {
    "matmul-naive": {},
    "matmul-tiled": {},
    "conv2d": {"Mc": 25},
    "conv2d-clamp": {"Mc": 25},
    "conv2d-wrap": {"Mc": 25},
    "conv2d-valid": {"c_kernel": 4096},
    "conv3d": {"Mc": 125},
    "conv3d-pitched": {"Mc": 125},
    "histogram": {},
    "reduction": {},
    "scan": {},
}
DESIGN_BLOCKS = {"histogram": (256, 1, 1), "reduction": (256, 1, 1), "scan": (512, 1, 1)}


def test_the_eleven_labs_of_the_design():
    assert sorted(all_labs()) == sorted(DESIGN_KERNELS)


@pytest.mark.parametrize("name", sorted(DESIGN_KERNELS))
def test_kernel_and_constants_match_the_design(name):
    lab = get(name)
    assert lab.kernel.signature() == DESIGN_KERNELS[name]
    sizes = cases.public_cases(lab)[0].sizes | {"MASK_WIDTH": 5}
    assert {c.name: c.elements(sizes) for c in lab.constants} == DESIGN_CONSTANTS[name]
    default = (8, 8, 8) if name.startswith("conv3d") else (16, 16, 1)
    assert lab.default_block == DESIGN_BLOCKS.get(name, default)


def loop_correlate(image, mask, ghost):
    radius = mask.shape[0] // 2
    out = np.zeros(image.shape)
    for pos in itertools.product(*(range(n) for n in image.shape)):
        total = 0.0
        for off in itertools.product(*(range(m) for m in mask.shape)):
            src = [p - radius + o for p, o in zip(pos, off, strict=True)]
            if ghost == "clamp":
                src = [min(max(s, 0), n - 1) for s, n in zip(src, image.shape, strict=True)]
            elif ghost == "wrap":
                src = [s % n for s, n in zip(src, image.shape, strict=True)]
            elif any(s < 0 or s >= n for s, n in zip(src, image.shape, strict=True)):
                continue
            total += image[tuple(src)] * mask[off]
        out[pos] = total
    return out


@pytest.mark.parametrize("ghost", ["zero", "clamp", "wrap"])
@pytest.mark.parametrize("shape,mask", [((7, 5), 3), ((3, 2), 7), ((4, 6, 5), 3), ((1, 1), 5)])
def test_centred_correlation_matches_loops(ghost, shape, mask):
    rng = np.random.default_rng(1)
    image = rng.standard_normal(shape)
    weights = rng.standard_normal((mask,) * len(shape))
    got = numerics.correlate_same(image, weights, ghost)
    np.testing.assert_allclose(got, loop_correlate(image, weights, ghost), atol=1e-12)


def test_valid_correlation_matches_loops():
    rng = np.random.default_rng(2)
    image, kernel = rng.standard_normal((9, 11)), rng.standard_normal((3, 7))
    want = np.array(
        [[np.sum(image[r : r + 3, c : c + 7] * kernel) for c in range(5)] for r in range(7)]
    )
    np.testing.assert_allclose(numerics.correlate_valid(image, kernel), want, atol=1e-12)


def hidden(name, secret="s"):
    return cases.hidden_cases(get(name), secret)


@pytest.mark.parametrize("name", ["matmul-naive", "matmul-tiled"])
def test_matmul_hidden_widths(name):
    widths = {c.sizes["Width"] for c in hidden(name)}
    assert {517, 1} <= widths
    for tile in (8, 16, 32):
        assert {tile - 1, tile + 1} <= widths
    primes = [w for w in widths if w > 32 and all(w % d for d in range(2, int(w**0.5) + 1))]
    assert len(primes) >= 2


@pytest.mark.parametrize("name", ["conv2d", "conv2d-clamp", "conv2d-wrap"])
def test_conv2d_hidden_cases(name):
    found = hidden(name)
    assert any(c.sizes["Width"] != c.sizes["Height"] for c in found)
    assert {3, 5, 7} <= {c.sizes["MASK_WIDTH"] for c in found}


def test_conv2d_valid_hidden_kernel_shapes():
    found = hidden("conv2d-valid")
    shapes = {(c.sizes["kernel_rows"], c.sizes["kernel_cols"]) for c in found}
    assert {(1, 1), (3, 7), (7, 3)} <= shapes
    assert any(c.sizes["output_rows"] == 1 and c.sizes["output_cols"] == 1 for c in found)


@pytest.mark.parametrize("name", ["conv3d", "conv3d-pitched"])
def test_3d_hidden_volumes_are_not_all_cubes(name):
    found = hidden(name)
    assert sum(len({c.sizes["W"], c.sizes["H"], c.sizes["D"]}) > 1 for c in found) >= 3


def test_pitches_are_padded_and_differ():
    for case in hidden("conv3d-pitched") + cases.public_cases(get("conv3d-pitched")):
        s = case.sizes
        assert s["pitchN"] > 4 * s["W"] and s["pitchP"] > 4 * s["W"] and s["pitchN"] != s["pitchP"]
        assert s["pitchN"] % 4 == 0 and s["pitchP"] % 4 == 0


@pytest.mark.parametrize("name", sorted(DESIGN_KERNELS))
def test_cases_reproduce_from_lab_name_and_secret(name):
    lab = get(name)
    first, again = cases.cases_for(lab, "secret-1"), cases.cases_for(lab, "secret-1")
    assert first == again
    other = cases.hidden_cases(lab, "secret-2")
    assert [c.seed for c in cases.hidden_cases(lab, "secret-1")] != [c.seed for c in other]
    for case in first:
        assert cases.find_case(lab, case.name, "secret-1") == case
        inputs = cases.make_inputs(lab, case)
        floats = [inputs[a.name] for a in lab.inputs if a.draw is None]
        for values in floats:
            assert values.dtype == np.float32
            assert np.all(np.abs(values) >= 0.5) and np.all(np.abs(values) <= 1.0)
        if floats and min(v.size for v in floats) > 16:
            assert all((v < 0).any() and (v > 0).any() for v in floats)
        for array in lab.inputs:
            assert inputs[array.name].dtype == np.dtype(array.dtype)


@pytest.mark.parametrize("name", sorted(DESIGN_KERNELS))
def test_random_hidden_sizes_come_from_the_secret(name):
    lab = get(name)
    pick = {s: [c.sizes for c in hidden(name, s) if c.name.startswith("random")] for s in "abcd"}
    assert len({str(v) for v in pick.values()}) > 1
    assert cases.hidden_count(lab) == len(hidden(name))


def test_without_a_secret_only_public_cases():
    lab = get("conv2d")
    assert all(c.visibility == "public" for c in cases.cases_for(lab, None))
    assert len(cases.cases_for(lab, None)) == len(lab.public_cases)


@pytest.mark.parametrize("name", sorted(DESIGN_KERNELS))
def test_reference_and_tolerance_shapes(name):
    from grader.compare import tolerances

    lab = get(name)
    case = cases.public_cases(lab)[0]
    case = Case(case.name, launch_sizes(lab, case.sizes, default_interface(lab)), seed=case.seed)
    inputs = cases.make_inputs(lab, case)
    expected = cases.expected_outputs(lab, case, inputs)
    tol = tolerances(lab, case, inputs)
    for out in lab.outputs:
        assert expected[out.name].shape == out.shape(case.sizes) == tol[out.name].shape
        assert expected[out.name].dtype == (np.int64 if out.exact else np.float64)
