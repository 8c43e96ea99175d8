"""Valid 2D cross-correlation with an R x S filter in constant memory `c_kernel[4096]`,
and a halo tile in dynamic shared memory, as in the course's 'valid' convolution notes."""

from __future__ import annotations

from grader.judge import hints
from grader.labs import common, numerics
from grader.model.lab import Array, Case, Constant, Kernel, Lab, Param, Role, Sampler, Scoring

CAPACITY = 4096  # floats in c_kernel

KERNEL = Kernel(
    "conv2d_valid",
    (
        Param("input", "const float*", Role.INPUT),
        Param("output", "float*", Role.OUTPUT),
        Param("input_rows", "int", Role.SCALAR),
        Param("input_cols", "int", Role.SCALAR),
        Param("kernel_rows", "int", Role.SCALAR),
        Param("kernel_cols", "int", Role.SCALAR),
        Param("output_rows", "int", Role.SCALAR),
        Param("output_cols", "int", Role.SCALAR),
    ),
)


def _case(name, rows, cols, krows, kcols, visibility="public"):
    sizes = {"input_rows": rows, "input_cols": cols, "kernel_rows": krows, "kernel_cols": kcols}
    return Case(name, sizes, visibility)


PUBLIC = (
    _case("64x64-k3x3", 64, 64, 3, 3),
    _case("100x80-k5x5", 100, 80, 5, 5),
    _case("57x131-k4x6", 57, 131, 4, 6),
)

HIDDEN = (
    _case("517x517-k5x5", 517, 517, 5, 5, "hidden"),
    _case("64x48-k1x5", 64, 48, 1, 5, "hidden"),
    _case("70x90-k3x7", 70, 90, 3, 7, "hidden"),
    _case("90x70-k7x3", 90, 70, 7, 3, "hidden"),
    _case("33x40-k33x40", 33, 40, 33, 40, "hidden"),
    _case("17x200-k17x9", 17, 200, 17, 9, "hidden"),
)


def _derive(sizes):
    return {
        "output_rows": sizes["input_rows"] - sizes["kernel_rows"] + 1,
        "output_cols": sizes["input_cols"] - sizes["kernel_cols"] + 1,
    }


def _random_sizes(rng):
    # never 1x1: its output is each input times one tap, which passes with no convolution
    krows = int(rng.integers(1, 12))
    kcols = int(rng.integers(2 if krows == 1 else 1, 12))
    return {
        "input_rows": krows + int(rng.integers(0, 250)),
        "input_cols": kcols + int(rng.integers(0, 250)),
        "kernel_rows": krows,
        "kernel_cols": kcols,
    }


def _dynamic_shared(sizes, launch):
    rows = launch["TILE_Y"] + sizes["kernel_rows"] - 1
    cols = launch["TILE_X"] + sizes["kernel_cols"] - 1
    return 4 * rows * cols


def _needs(sizes, axes, read):
    taps = (sizes["kernel_rows"], sizes["kernel_cols"])
    extents = (sizes["input_rows"], sizes["input_cols"])
    return {
        "input": numerics.window(axes, taps, (0, 0), extents),
        "kernel": numerics.whole(taps),
    }


# output at a grid of positions: each position's R x S window of the input
SAMPLER = Sampler(
    _needs, lambda s, v, axes: {"output": numerics.correlate_window(v["input"], v["kernel"])}
)


LAB = Lab(
    title="2D valid convolution, dynamic shared memory",
    summary="Output (H-R+1) x (W-S+1); the R x S filter sits in c_kernel[4096].",
    kernel=KERNEL,
    inputs=(
        Array("input", lambda s: (s["input_rows"], s["input_cols"])),
        Array("kernel", lambda s: (s["kernel_rows"], s["kernel_cols"])),
    ),
    outputs=(Array("output", lambda s: (s["output_rows"], s["output_cols"])),),
    constants=(Constant("c_kernel", "kernel", lambda s: CAPACITY, "c_kernel[4096]"),),
    derive=_derive,
    reference=lambda a, s: {"output": numerics.correlate_valid(a["input"], a["kernel"])},
    extent=lambda s: (s["output_cols"], s["output_rows"], 1),
    public_cases=PUBLIC,
    hidden_cases=HIDDEN,
    random_sizes=_random_sizes,
    random_cases=2,
    timing_sizes={"input_rows": 8192, "input_cols": 8192, "kernel_rows": 5, "kernel_cols": 5},
    work=lambda s: (
        2.0 * s["kernel_rows"] * s["kernel_cols"] * s["output_rows"] * s["output_cols"],
        4.0 * (s["input_rows"] * s["input_cols"] + s["output_rows"] * s["output_cols"]),
    ),
    dynamic_shared=_dynamic_shared,
    requirements=(common.no_library(), common.mask_in_constant("c_kernel")),
    forbidden=common.FORBIDDEN,
    hints=(
        hints.nothing_written,
        hints.last_partial_tile,
        hints.partly_unwritten,
        hints.mask_rearranged("kernel"),
        hints.shifted,
        hints.transposed,
    ),
    scoring=Scoring(target_speedup=0.7, zero_speedup=0.2),
    bound="memory",
    sampler=SAMPLER,
)
