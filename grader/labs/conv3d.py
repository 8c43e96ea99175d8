"""Same-size 3D convolution with zero ghost cells and the mask in constant memory
`Mc[MASK_WIDTH^3]`, indexed [z][y][x]. Elements sit at (z*H + y)*W + x, or, in the
pitched lab, in rows of `pitch` bytes."""

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


def _case(name, w, h, d, mask, visibility="public"):
    return Case(name, {"W": w, "H": h, "D": d, "MASK_WIDTH": mask}, visibility)


PUBLIC = (
    _case("16x16x16-mask5", 16, 16, 16, 5),
    _case("20x18x12-mask5", 20, 18, 12, 5),
    _case("33x9x17-mask5", 33, 9, 17, 5),
)

HIDDEN = (
    _case("37x23x11-mask5", 37, 23, 11, 5, "hidden"),
    _case("8x8x64-mask5", 8, 8, 64, 5, "hidden"),
    _case("70x5x3-mask5", 70, 5, 3, 5, "hidden"),
    _case("30x20x10-mask3", 30, 20, 10, 3, "hidden"),
    _case("24x17x9-mask7", 24, 17, 9, 7, "hidden"),
    _case("1x1x1-mask5", 1, 1, 1, 5, "hidden"),
    _case("65x33x17-mask5", 65, 33, 17, 5, "hidden"),
)


def _volume(sizes):
    return (sizes["D"], sizes["H"], sizes["W"])


def _mask(sizes):
    return (sizes["MASK_WIDTH"],) * 3


def _random_sizes(rng):
    return {
        "W": int(rng.integers(2, 48)),
        "H": int(rng.integers(2, 48)),
        "D": int(rng.integers(2, 32)),
        "MASK_WIDTH": int(rng.choice([3, 5, 7])),
    }


def _align(value: int, to: int) -> int:
    return -(-value // to) * to


def pitches(sizes):
    """Row pitches in bytes, padded and always different for input and output."""
    row = 4 * sizes["W"]
    return {"pitchN": _align(row, 128) + 128, "pitchP": _align(row, 128) + 256}


def _needs(sizes, axes):
    m = sizes["MASK_WIDTH"]
    window = numerics.window(axes, (m,) * 3, (-(m // 2),) * 3, _volume(sizes))
    return {"N": window, "mask": numerics.whole(_mask(sizes))}


# P at a grid of voxels: each voxel's MASK_WIDTH^3 window of N; ghost cells read 0
SAMPLER = Sampler(_needs, lambda s, v, axes: {"P": numerics.correlate_window(v["N"], v["mask"])})


def conv3d_lab(name: str, kernel: Kernel, title: str, summary: str, **extra) -> Lab:
    detectors = extra.pop("hints", ())
    return Lab(
        name=name,
        title=title,
        summary=summary,
        kernel=kernel,
        inputs=(Array("N", _volume), Array("mask", _mask)),
        outputs=(Array("P", _volume),),
        constants=(
            Constant(
                "Mc", "mask", lambda s: s["MASK_WIDTH"] ** 3, "Mc[MASK_WIDTH*MASK_WIDTH*MASK_WIDTH]"
            ),
        ),
        macros=("MASK_WIDTH",),
        reference=lambda a, s: {"P": numerics.correlate_same(a["N"], a["mask"], "zero")},
        terms=lambda s: s["MASK_WIDTH"] ** 3,
        extent=lambda s: (s["W"], s["H"], s["D"]),
        public_cases=PUBLIC,
        hidden_cases=HIDDEN,
        random_sizes=_random_sizes,
        random_cases=2,
        timing_sizes={"W": 256, "H": 256, "D": 256, "MASK_WIDTH": 5},
        work=lambda s: (
            2.0 * s["MASK_WIDTH"] ** 3 * s["W"] * s["H"] * s["D"],
            2.0 * 4 * s["W"] * s["H"] * s["D"],
        ),
        dims=3,
        requirements=(common.mask_in_constant("Mc"),),
        forbidden=common.FORBIDDEN,
        hints=(
            hints.nothing_written,
            *detectors,
            hints.last_partial_tile,
            hints.partly_unwritten,
            hints.ghost_border("In this lab a ghost cell counts as 0."),
            hints.mask_rearranged("mask"),
            hints.shifted,
        ),
        scoring=Scoring(target_speedup=0.6, zero_speedup=0.15),
        bound="compute",
        sampler=SAMPLER,
        **extra,
    )


LAB = conv3d_lab(
    "conv3d",
    Kernel(
        "conv3d",
        (
            Param("N", "const float*", Role.INPUT),
            Param("P", "float*", Role.OUTPUT),
            Param("W", "int", Role.SCALAR),
            Param("H", "int", Role.SCALAR),
            Param("D", "int", Role.SCALAR),
        ),
    ),
    "3D convolution, constant-memory mask",
    "Same-size output over a W x H x D volume; ghost cells count as 0.",
)
