"""Same-size 2D convolution with the mask in constant memory `Mc`. The ghost-cell rule
(zero, clamp or wrap) is the only thing that differs between conv2d, conv2d-clamp and
conv2d-wrap."""

from __future__ import annotations

from grader import hints
from grader.labs import common, numerics
from grader.labs.model import (
    Array,
    Case,
    Constant,
    Kernel,
    Lab,
    Param,
    Role,
    Sampler,
    Scoring,
)

KERNEL = Kernel(
    "conv2d",
    (
        Param("N", "const float*", Role.INPUT),
        Param("P", "float*", Role.OUTPUT),
        Param("Width", "int", Role.SCALAR),
        Param("Height", "int", Role.SCALAR),
    ),
)


def _case(name, width, height, mask, visibility="public"):
    return Case(name, {"Width": width, "Height": height, "MASK_WIDTH": mask}, visibility)


PUBLIC = (
    _case("64x64-mask5", 64, 64, 5),
    _case("100x100-mask5", 100, 100, 5),
    _case("200x120-mask5", 200, 120, 5),
)

HIDDEN = (
    _case("517x517-mask5", 517, 517, 5, "hidden"),
    _case("517x300-mask5", 517, 300, 5, "hidden"),
    _case("97x211-mask5", 97, 211, 5, "hidden"),
    _case("128x96-mask3", 128, 96, 3, "hidden"),
    _case("33x17-mask3", 33, 17, 3, "hidden"),
    _case("131x67-mask7", 131, 67, 7, "hidden"),
    _case("17x33-mask7", 17, 33, 7, "hidden"),
    _case("1x1-mask5", 1, 1, 5, "hidden"),
    _case("3x2-mask7", 3, 2, 7, "hidden"),
)


GHOST_RULES = {
    "zero": "In this lab a ghost cell counts as 0: skip it, or load 0 into the tile for it.",
    "clamp": "In this lab a ghost cell takes the value of the nearest edge pixel: clamp the "
    "row to 0..Height-1 and the column to 0..Width-1 before reading.",
    "wrap": "In this lab the image repeats: a ghost cell at column -1 reads column Width-1 "
    "(use ((c % Width) + Width) % Width, and the same for rows).",
}


def _image(sizes):
    return (sizes["Height"], sizes["Width"])


def _mask(sizes):
    return (sizes["MASK_WIDTH"], sizes["MASK_WIDTH"])


def _random_sizes(rng):
    return {
        "Width": int(rng.integers(2, 300)),
        "Height": int(rng.integers(2, 300)),
        "MASK_WIDTH": int(rng.choice([3, 5, 7])),
    }


def sampler(ghost: str) -> Sampler:
    """P at a grid of pixels: each pixel's MASK_WIDTH^2 window of N, with the ghost rule."""

    def needs(sizes, axes):
        m = sizes["MASK_WIDTH"]
        window = numerics.window(axes, (m, m), (-(m // 2),) * 2, _image(sizes), ghost)
        return {"N": window, "mask": numerics.whole(_mask(sizes))}

    return Sampler(needs, lambda s, v, axes: {"P": numerics.correlate_window(v["N"], v["mask"])})


def conv2d_lab(name: str, ghost: str, title: str, summary: str) -> Lab:
    return Lab(
        name=name,
        title=title,
        summary=summary,
        kernel=KERNEL,
        inputs=(Array("N", _image), Array("mask", _mask)),
        outputs=(Array("P", _image),),
        constants=(
            Constant("Mc", "mask", lambda s: s["MASK_WIDTH"] ** 2, "Mc[MASK_WIDTH*MASK_WIDTH]"),
        ),
        macros=("MASK_WIDTH",),
        reference=lambda a, s: {"P": numerics.correlate_same(a["N"], a["mask"], ghost)},
        terms=lambda s: s["MASK_WIDTH"] ** 2,
        extent=lambda s: (s["Width"], s["Height"], 1),
        public_cases=PUBLIC,
        hidden_cases=HIDDEN,
        random_sizes=_random_sizes,
        random_cases=2,
        timing_sizes={"Width": 8192, "Height": 8192, "MASK_WIDTH": 5},
        work=lambda s: (
            2.0 * s["MASK_WIDTH"] ** 2 * s["Width"] * s["Height"],
            2.0 * 4 * s["Width"] * s["Height"],
        ),
        requirements=(common.mask_in_constant("Mc"),),
        forbidden=common.FORBIDDEN,
        hints=(
            hints.nothing_written,
            hints.last_partial_tile,
            hints.partly_unwritten,
            hints.ghost_border(GHOST_RULES[ghost]),
            hints.mask_rearranged("mask"),
            hints.shifted,
            hints.transposed,
        ),
        scoring=Scoring(target_speedup=0.7, zero_speedup=0.2),
        bound="memory",
        sampler=sampler(ghost),
    )


LAB = conv2d_lab(
    "conv2d",
    "zero",
    "2D convolution, constant-memory mask",
    "Same-size output; ghost cells outside the image count as 0.",
)
