"""The convolution labs' family: same-size convolution with the mask in constant memory
`Mc`, of an image (2D, whose labs differ only in their ghost-cell rule: zero, clamp or
wrap) or of a volume (3D, ghost cells 0, the mask indexed [z][y][x]; elements at
(z*H + y)*W + x, or in rows of `pitch` bytes). Each lab's folder passes its kernel."""

from __future__ import annotations

from grader.judge import hints
from grader.labs import common, numerics
from grader.model.lab import Array, Case, Constant, Kernel, Lab, Sampler, Scoring


def same_sampler(shape, mask_shape, ghost: str) -> Sampler:
    """P at a grid of elements of N (`shape`): each element's window of N the size of
    the mask (`mask_shape`), centred on it, ghost cells following `ghost`."""

    def needs(sizes, axes, read):
        mask = mask_shape(sizes)
        start = tuple(-(m // 2) for m in mask)
        return {
            "N": numerics.window(axes, mask, start, shape(sizes), ghost),
            "mask": numerics.whole(mask),
        }

    return Sampler(needs, lambda s, v, axes: {"P": numerics.correlate_window(v["N"], v["mask"])})


# -- images -----------------------------------------------------------------------------


def _image_case(name, width, height, mask, visibility="public"):
    return Case(name, {"Width": width, "Height": height, "MASK_WIDTH": mask}, visibility)


IMAGE_PUBLIC = (
    _image_case("64x64-mask5", 64, 64, 5),
    _image_case("100x100-mask5", 100, 100, 5),
    _image_case("200x120-mask5", 200, 120, 5),
)

IMAGE_HIDDEN = (
    _image_case("517x517-mask5", 517, 517, 5, "hidden"),
    _image_case("517x300-mask5", 517, 300, 5, "hidden"),
    _image_case("97x211-mask5", 97, 211, 5, "hidden"),
    _image_case("128x96-mask3", 128, 96, 3, "hidden"),
    _image_case("33x17-mask3", 33, 17, 3, "hidden"),
    _image_case("131x67-mask7", 131, 67, 7, "hidden"),
    _image_case("17x33-mask7", 17, 33, 7, "hidden"),
    _image_case("1x1-mask5", 1, 1, 5, "hidden"),
    _image_case("3x2-mask7", 3, 2, 7, "hidden"),
)


GHOST_RULES = {
    "zero": "In this lab a ghost cell counts as 0: skip it, or load 0 into the tile for it.",
    "clamp": "In this lab a ghost cell takes the value of the nearest edge pixel: clamp the "
    "row to 0..Height-1 and the column to 0..Width-1 before reading.",
    "wrap": "In this lab the image repeats: a ghost cell at column -1 reads column Width-1 "
    "(use ((c % Width) + Width) % Width, and the same for rows).",
}


def _fault_hints(rule: str) -> tuple:
    """The default fault hints, with the mask reaching ghost cells before a partial tile."""
    return (hints.lax_bounds_check, hints.ghost_cells_fault(rule), hints.partial_tile_fault)


def _image(sizes):
    return (sizes["Height"], sizes["Width"])


def _square(sizes):
    return (sizes["MASK_WIDTH"], sizes["MASK_WIDTH"])


def _image_sizes(rng):
    return {
        "Width": int(rng.integers(2, 300)),
        "Height": int(rng.integers(2, 300)),
        "MASK_WIDTH": int(rng.choice([3, 5, 7])),
    }


def image_lab(kernel: Kernel, ghost: str, title: str, summary: str) -> Lab:
    """Same-size 2D convolution of an image N (Height x Width) into P, the mask in
    __constant__ Mc; ghost cells follow `ghost` ("zero", "clamp" or "wrap")."""
    return Lab(
        title=title,
        summary=summary,
        kernel=kernel,
        inputs=(Array("N", _image), Array("mask", _square)),
        outputs=(Array("P", _image),),
        constants=(
            Constant("Mc", "mask", lambda s: s["MASK_WIDTH"] ** 2, "Mc[MASK_WIDTH*MASK_WIDTH]"),
        ),
        macros=("MASK_WIDTH",),
        reference=lambda a, s: {"P": numerics.correlate_same(a["N"], a["mask"], ghost)},
        extent=lambda s: (s["Width"], s["Height"], 1),
        public_cases=IMAGE_PUBLIC,
        hidden_cases=IMAGE_HIDDEN,
        random_sizes=_image_sizes,
        random_cases=2,
        timing_sizes={"Width": 8192, "Height": 8192, "MASK_WIDTH": 5},
        work=lambda s: (
            2.0 * s["MASK_WIDTH"] ** 2 * s["Width"] * s["Height"],
            2.0 * 4 * s["Width"] * s["Height"],
        ),
        requirements=(common.no_library(), common.mask_in_constant("Mc")),
        forbidden=common.FORBIDDEN,
        hints=(
            hints.nothing_written,
            hints.tile_seams,
            hints.last_partial_tile,
            hints.partly_unwritten,
            hints.ghost_border(GHOST_RULES[ghost]),
            hints.column_major,
            hints.mask_rearranged("mask"),
            hints.shifted,
            hints.transposed,
        ),
        fault_hints=_fault_hints(GHOST_RULES[ghost]),
        scoring=Scoring(target_speedup=0.7, zero_speedup=0.2),
        bound="memory",
        sampler=same_sampler(_image, _square, ghost),
    )


# -- volumes ----------------------------------------------------------------------------


def _volume_case(name, w, h, d, mask, visibility="public"):
    return Case(name, {"W": w, "H": h, "D": d, "MASK_WIDTH": mask}, visibility)


VOLUME_PUBLIC = (
    _volume_case("16x16x16-mask5", 16, 16, 16, 5),
    _volume_case("20x18x12-mask5", 20, 18, 12, 5),
    _volume_case("33x9x17-mask5", 33, 9, 17, 5),
)

VOLUME_HIDDEN = (
    _volume_case("37x23x11-mask5", 37, 23, 11, 5, "hidden"),
    _volume_case("8x8x64-mask5", 8, 8, 64, 5, "hidden"),
    _volume_case("70x5x3-mask5", 70, 5, 3, 5, "hidden"),
    _volume_case("30x20x10-mask3", 30, 20, 10, 3, "hidden"),
    _volume_case("24x17x9-mask7", 24, 17, 9, 7, "hidden"),
    _volume_case("1x1x1-mask5", 1, 1, 1, 5, "hidden"),
    _volume_case("65x33x17-mask5", 65, 33, 17, 5, "hidden"),
)


VOLUME_GHOSTS = "In this lab a ghost cell counts as 0."


def _volume(sizes):
    return (sizes["D"], sizes["H"], sizes["W"])


def _cube(sizes):
    return (sizes["MASK_WIDTH"],) * 3


def _volume_sizes(rng):
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


def volume_lab(kernel: Kernel, title: str, summary: str, **extra) -> Lab:
    """Same-size 3D convolution of a volume N (D x H x W) into P, the mask in
    __constant__ Mc; ghost cells count as 0. `extra` may add hints (first) and fields."""
    detectors = extra.pop("hints", ())
    return Lab(
        title=title,
        summary=summary,
        kernel=kernel,
        inputs=(Array("N", _volume), Array("mask", _cube)),
        outputs=(Array("P", _volume),),
        constants=(
            Constant(
                "Mc", "mask", lambda s: s["MASK_WIDTH"] ** 3, "Mc[MASK_WIDTH*MASK_WIDTH*MASK_WIDTH]"
            ),
        ),
        macros=("MASK_WIDTH",),
        reference=lambda a, s: {"P": numerics.correlate_same(a["N"], a["mask"], "zero")},
        extent=lambda s: (s["W"], s["H"], s["D"]),
        public_cases=VOLUME_PUBLIC,
        hidden_cases=VOLUME_HIDDEN,
        random_sizes=_volume_sizes,
        random_cases=2,
        timing_sizes={"W": 256, "H": 256, "D": 256, "MASK_WIDTH": 5},
        work=lambda s: (
            2.0 * s["MASK_WIDTH"] ** 3 * s["W"] * s["H"] * s["D"],
            2.0 * 4 * s["W"] * s["H"] * s["D"],
        ),
        dims=3,
        requirements=(common.no_library(), common.mask_in_constant("Mc")),
        forbidden=common.FORBIDDEN,
        hints=(
            hints.nothing_written,
            *detectors,
            hints.tile_seams,
            hints.last_partial_tile,
            hints.partly_unwritten,
            hints.ghost_border(VOLUME_GHOSTS),
            hints.mask_rearranged("mask"),
            hints.shifted,
        ),
        fault_hints=_fault_hints(VOLUME_GHOSTS),
        scoring=Scoring(target_speedup=0.6, zero_speedup=0.15),
        bound="compute",
        sampler=same_sampler(_volume, _cube, "zero"),
        **extra,
    )
