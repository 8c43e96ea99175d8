"""The launch section of the report: which launch macros a file defines, the defaults the
grader used, and sizes in the file's own code that the launch does not match."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from grader import labs
from grader.judge import launch_macros
from grader.labs import all_labs

DEFAULTS = {"BLOCK_X": 16, "BLOCK_Y": 16, "BLOCK_Z": 1, "TILE_X": 16, "TILE_Y": 16, "TILE_Z": 1}
FLAT = labs.get("matmul-naive")  # 2D, no mask


def test_a_tile_width_the_launch_never_heard_of_is_named():
    text = """#define TILE_WIDTH (2 * 16)
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * TILE_WIDTH + threadIdx.y;
    int col = blockIdx.x * TILE_WIDTH + threadIdx.x;
}
"""
    found = launch_macros.describe(text, DEFAULTS, {}, FLAT)
    assert found.defined == [] and found.values == DEFAULTS
    assert len(found.warnings) == 1
    warning = found.warnings[0]
    assert warning.startswith("Line 3 steps blockIdx.y by TILE_WIDTH = 32")
    assert "TILE_Y = 16" in warning and "#define BLOCK_X TILE_WIDTH" in warning


def test_one_wrong_size_is_said_once():
    """Two names for one size, and a halo block beside the step that already said the
    launch is not the file's: one warning (issue 20: the TILE warning twice)."""
    text = """#define TILE_H 32
#define TILE_W 32
#define O_TILE 32
#define BLOCK_WIDTH (O_TILE + 4)
__global__ void k(float* P) {
    int row = blockIdx.y * TILE_H + threadIdx.y;
    int col = blockIdx.x * TILE_W + threadIdx.x;
}
"""
    (warning,) = launch_macros.describe(text, DEFAULTS, {}, FLAT).warnings
    assert warning.startswith("Line 6 steps blockIdx.y by TILE_H = 32")


def test_the_advice_names_the_axes_the_file_steps_by_the_size():
    """Every axis stepped by the size, z too (issue 20), and only those (issue 32: x and
    y, stepped right, were advised too)."""
    volume = labs.get("conv3d")
    launch = {"BLOCK_X": 8, "BLOCK_Y": 8, "BLOCK_Z": 8, "TILE_X": 8, "TILE_Y": 8, "TILE_Z": 8}
    steps = "int x = blockIdx.x * T, y = blockIdx.y * T, z = blockIdx.z * T;"
    text = f"#define T 4\n__global__ void k(float* P) {{ {steps} }}\n"
    (warning,) = launch_macros.describe(text, launch, {}, volume).warnings
    assert "#define BLOCK_X T, #define BLOCK_Y T and #define BLOCK_Z T" in warning
    assert "TILE_X, TILE_Y and TILE_Z" in warning
    text = "#define T 4\n__global__ void k(float* P) { int z = blockIdx.z * T + threadIdx.z; }\n"
    (deep,) = launch_macros.describe(text, launch, {}, volume).warnings
    assert "#define BLOCK_Z T (one thread per element), or also TILE_Z when" in deep
    assert "BLOCK_X" not in deep.partition("If each")[2]


def test_the_advice_leaves_out_what_the_file_defines_and_what_the_lab_lacks():
    """Issue 32: BLOCK_X and BLOCK_Y defined, BLOCK_Z not: only BLOCK_Z is advised; a lab
    without a mask hears of no halo; a 1D lab of no BLOCK_Y."""
    volume = labs.get("conv3d")
    launch = {"BLOCK_X": 4, "BLOCK_Y": 4, "BLOCK_Z": 8, "TILE_X": 4, "TILE_Y": 4, "TILE_Z": 8}
    text = (
        "#define TILE 4\n#define BLOCK_X TILE\n#define BLOCK_Y TILE\n"
        "__global__ void k(float* P) { int z = blockIdx.z * TILE + threadIdx.z; }\n"
    )
    (warning,) = launch_macros.describe(text, launch, {}, volume).warnings
    advice = warning.partition("If each")[2]
    assert "#define BLOCK_Z TILE" in advice and "BLOCK_X" not in advice and "halo" in advice
    text = "__global__ void k(float* P) { int r = blockIdx.y * 32, c = blockIdx.x * 32; }\n"
    (flat,) = launch_macros.describe(text, DEFAULTS, {}, FLAT).warnings
    assert "#define BLOCK_X 32 and #define BLOCK_Y 32" in flat and "halo" not in flat


def test_a_shared_tile_bigger_than_the_default_launch_is_named():
    text = "__global__ void k(float* p) { __shared__ float Ms[32][32]; p[0] = Ms[0][0]; }"
    (warning,) = launch_macros.describe(text, DEFAULTS, {}, FLAT).warnings
    assert "__shared__ Ms (line 1) is 32 x 32" in warning and "16 x 16 blocks" in warning


def test_a_halo_block_and_a_coarsened_tile_are_fine():
    halo = """#define TILE_X 16
#define TILE_Y 16
#define BLOCK_X (TILE_X + MASK_WIDTH - 1)
#define BLOCK_Y (TILE_Y + MASK_WIDTH - 1)
__global__ void k(float* p) {
    __shared__ float tile[BLOCK_Y][BLOCK_X];
    int r = blockIdx.y * TILE_Y + threadIdx.y - MASK_WIDTH / 2;
}
"""
    launch = {**DEFAULTS, "BLOCK_X": 20, "BLOCK_Y": 20}
    found = launch_macros.describe(halo, launch, {"MASK_WIDTH": 5}, FLAT)
    assert found.warnings == [] and found.defined == ["BLOCK_X", "BLOCK_Y", "TILE_X", "TILE_Y"]


def test_two_tiles_of_blocks_is_a_step_by_the_product():
    launch = {**DEFAULTS, "BLOCK_X": 256, "TILE_X": 512}
    for start in ("2 * blockIdx.x * BLOCK_X", "2 * blockIdx.x * blockDim.x"):
        text = f"#define BLOCK_X 256\n__global__ void k(float* out) {{ int i = {start}; }}\n"
        assert launch_macros.describe(text, launch, {}, FLAT).warnings == [], start
    text = "__global__ void k(float* out) { int i = 4 * blockIdx.x * blockDim.x; }\n"
    [warning] = launch_macros.describe(text, launch, {}, FLAT).warnings
    assert "by 4 * blockDim.x = 1024" in warning


def test_a_step_of_several_elements_per_thread_is_advised_as_a_tile():
    """Issue 32: 2 * blockDim.x where TILE_X is BLOCK_X: the tile is 512, and a 1D lab
    hears of TILE_X alone, never of BLOCK_Y."""
    launch = {**DEFAULTS, "BLOCK_X": 256, "TILE_X": 256, "BLOCK_Y": 1, "TILE_Y": 1}
    text = (
        "#define TILE_X 256\n__global__ void k(float* o) { int i = 2 * blockIdx.x * blockDim.x; }\n"
    )
    [warning] = launch_macros.describe(text, launch, {}, labs.get("reduction")).warnings
    assert "by 2 * blockDim.x = 512" in warning and "#define TILE_X 512" in warning
    assert "BLOCK_Y" not in warning.partition("If each")[2]


def test_values_the_file_cannot_be_evaluated_for_are_left_alone():
    text = "__global__ void k(float* p, int t) { int i = blockIdx.x * t + threadIdx.x; }"
    assert launch_macros.describe(text, DEFAULTS, {}, FLAT).warnings == []


def test_a_macro_that_names_another_again_and_again_is_worked_out_once():
    # each level names the one below four times: 4^10 evaluations read the naive way (30 s)
    chain = "".join(
        f"#define X{i} (X{i - 1} + X{i - 1} + X{i - 1} + X{i - 1})\n" for i in range(1, 11)
    )
    text = f"#define X0 1\n{chain}__global__ void k() {{ int r = blockIdx.x * X10; }}\n"
    start = time.process_time()
    (warning,) = launch_macros.describe(text, DEFAULTS, {}, FLAT).warnings
    assert time.process_time() - start < 5
    assert f"X10 = {4**10}" in warning


def test_a_value_past_64_bits_is_no_value():
    squares = "".join(f"#define S{i} (S{i - 1} * S{i - 1})\n" for i in range(1, 8))
    text = f"#define S0 (1 << 40)\n{squares}#define T (1 << 100000)\n"
    text += "__global__ void k() { int r = blockIdx.x * S7 + blockIdx.y * T; }\n"
    assert launch_macros.describe(text, DEFAULTS, {}, FLAT).warnings == []


@pytest.mark.parametrize("lab", sorted(all_labs()))
def test_no_reference_baseline_or_variant_gets_a_warning(lab):
    folder = labs.get(lab).home
    files = [folder / "reference.cu", folder / "baseline.cu", *folder.glob("variants/*.cu")]
    for path in [p for p in files if p.exists()]:
        launch = _launch_of(path, lab)
        found = launch_macros.describe(Path(path).read_text(), launch, _macros(lab), labs.get(lab))
        assert found.warnings == [], (path, found.warnings)


CONV = labs.get("conv2d")  # 2D, with a mask whose width the hidden cases vary
VARIED = {"MASK_WIDTH": (5,)}  # conv2d's: 5 in the public cases, others in the hidden


def test_a_lab_varies_the_macros_its_hidden_cases_change_and_names_only_public_values():
    assert launch_macros.varied(CONV) == VARIED
    assert launch_macros.varied(labs.get("conv3d-pitched")) == VARIED
    assert launch_macros.varied(labs.get("histogram")) == {}  # NUM_BINS is always 256
    assert launch_macros.varied(labs.get("matmul-tiled")) == {}


@pytest.mark.parametrize(
    ("text", "name", "value", "derived"),
    [
        ("#define MASK_RADIUS 2\n", "MASK_RADIUS", 2, "(MASK_WIDTH / 2)"),
        ("#define RADIUS 2\n", "RADIUS", 2, "(MASK_WIDTH / 2)"),
        ("#define MASK_SIZE 25\n", "MASK_SIZE", 25, "(MASK_WIDTH * MASK_WIDTH)"),
        ("#define TILE_X 16\n#define BLOCK_X 20\n", "BLOCK_X", 20, "(TILE_X + MASK_WIDTH - 1)"),
    ],
)
def test_a_size_fixed_where_the_lab_varies_its_macro_is_named(text, name, value, derived):
    found = launch_macros.describe(text, DEFAULTS, {"MASK_WIDTH": 5}, CONV)
    assert found.warnings == [
        f"{name} is {value} in your file whatever MASK_WIDTH is: right for the public cases' "
        "MASK_WIDTH 5, wrong where the hidden cases set MASK_WIDTH to other values. Derive "
        f"it from MASK_WIDTH: #define {name} {derived}."
    ]


@pytest.mark.parametrize(
    "text",
    [
        "#define MASK_RADIUS (MASK_WIDTH / 2)\n",  # derived
        "#define R (MASK_WIDTH >> 1)\n#define HALO (2 * R)\n",
        "#define TILE_X 64\n#define BLOCK_X 32\n#define CX (TILE_X / BLOCK_X)\n",  # a factor
        "#define TILE 16\n#define COARSEN 4\n",
        "#define TILE_X 16\n#define BLOCK_X (TILE_X + MASK_WIDTH - 1)\n",
    ],
)
def test_sizes_that_follow_the_lab_or_say_nothing_of_it_are_fine(text):
    assert launch_macros.describe(text, DEFAULTS, {"MASK_WIDTH": 5}, CONV).warnings == []


def test_the_known_wrong_radius_for_mask_5_is_warned_before_any_hidden_case_runs():
    path = labs.get("conv2d").home / "wrong" / "radius_for_mask5.cu"
    found = launch_macros.describe(path.read_text(), DEFAULTS, _macros("conv2d"), CONV)
    assert [w.split(":")[0] for w in found.warnings] == [
        "RADIUS is 2 in your file whatever MASK_WIDTH is"
    ]


def _macros(lab: str) -> dict[str, int]:
    spec = all_labs()[lab]
    return spec.macro_values(spec.full_sizes(spec.public_cases[0].sizes))


def _launch_of(path: Path, lab: str) -> dict[str, int]:
    """The launch the file sets, evaluated as the compiled module would."""
    spec = all_labs()[lab]
    defines = launch_macros._defines(path.read_text())
    values = launch_macros._Values(defines, _macros(lab))
    block = dict(zip("XYZ", spec.default_block, strict=True))
    out = {f"BLOCK_{a}": values.name(f"BLOCK_{a}") or block[a] for a in "XYZ"}
    tile = launch_macros._Values({}, out)
    for axis, default in zip("XYZ", spec.launch_defaults.tile, strict=True):
        out[f"TILE_{axis}"] = values.name(f"TILE_{axis}") or tile.of(default)
    return out


def test_a_block_the_file_defines_otherwise_than_it_steps_is_what_to_change():
    text = (
        "#define BLOCK_X 32\n#define BLOCK_Y 32\n__global__ void matmul(float* P) {\n"
        "int row = blockIdx.y * 16 + threadIdx.y; int col = blockIdx.x * 16 + threadIdx.x; }\n"
    )
    launch = {"BLOCK_X": 32, "BLOCK_Y": 32, "BLOCK_Z": 1, "TILE_X": 32, "TILE_Y": 32, "TILE_Z": 1}
    [warning] = launch_macros.describe(text, launch, {}, FLAT).warnings
    said = "#define BLOCK_X 16 and #define BLOCK_Y 16 in place of your BLOCK_X and BLOCK_Y"
    assert said in warning
    assert "halo" not in warning
