"""Hints: a failing case's wrong elements often form a pattern that names the bug.

Each detector looks at one failing case and returns a sentence for the student, or None.
Labs list the detectors that make sense for them, most specific first; the first one
that recognises the pattern gives the case its hint."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from grader.compare import Comparison, close


@dataclass
class Context:
    lab: object  # grader.labs.model.Lab
    sizes: dict[str, int]
    inputs: dict[str, np.ndarray]
    cmp: Comparison  # the lab's (first) output
    tol: np.ndarray
    tile: tuple[int, int, int]  # the submission's TILE_X, TILE_Y, TILE_Z


Detector = Callable[[Context], str | None]


def _reference_with(ctx: Context, **changed: np.ndarray) -> np.ndarray:
    inputs = {k: v.astype(np.float64) for k, v in ctx.inputs.items()}
    inputs.update(changed)
    return ctx.lab.reference(inputs, ctx.sizes)[ctx.cmp.name]


def _fmt_range(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}..{hi}"


def nothing_written(ctx: Context) -> str | None:
    if not ctx.cmp.unwritten.all():
        return None
    return (
        f"Nothing was written to {ctx.cmp.name}: every element still holds the NaN the grader "
        "filled it with. Check that the kernel stores its result, and that the store is not "
        "skipped by a condition that is always false."
    )


def partly_unwritten(ctx: Context) -> str | None:
    missing = ctx.cmp.unwritten
    if not missing.any() or missing.all():
        return None
    where = np.argwhere(missing)
    lo, hi = where.min(axis=0), where.max(axis=0)
    axes = ("z", "y", "x")[-missing.ndim :]
    box = ", ".join(
        f"{a} {_fmt_range(int(first), int(last))}"
        for a, first, last in zip(axes, lo, hi, strict=True)
    )
    return (
        f"{int(missing.sum())} elements of {ctx.cmp.name} were never written ({box}). "
        "Make sure the grid covers the whole output (grid = ceil(size / TILE)) and that every "
        "thread that owns an output element stores it."
    )


def _tiles(ctx: Context) -> list[tuple[int, ...]]:
    """Tile sizes to try, per axis of the output (its last axis is x)."""
    ndim = ctx.cmp.bad.ndim
    own = tuple(reversed(ctx.tile[:ndim]))
    return [own] + [(t,) * ndim for t in (8, 16, 32, 64) if (t,) * ndim != own]


def last_partial_tile(ctx: Context) -> str | None:
    bad, shape = ctx.cmp.bad, ctx.cmp.bad.shape
    for tile in _tiles(ctx):
        full = [(n // t) * t for n, t in zip(shape, tile, strict=True)]
        if 0 in full or all(f == n for f, n in zip(full, shape, strict=True)):
            continue
        grids = np.indices(shape)
        edge = np.zeros(shape, bool)
        for axis, f in enumerate(full):
            edge |= grids[axis] >= f
        if bad.any() and not (bad & ~edge).any():
            dims = " x ".join(map(str, shape))
            return (
                f"Only the last, partial tile is wrong: every wrong element lies beyond "
                f"{' x '.join(map(str, full))} of the {dims} output, and {dims} is not a multiple "
                f"of the tile {' x '.join(map(str, tile))}. Threads there need boundary checks: "
                "load 0 for elements past the edge and store only inside the output."
            )
    return None


def ghost_border(rule: str) -> Detector:
    """Wrong only within the mask radius of an edge: the ghost cells. `rule` says how the
    lab treats them."""

    def detect(ctx: Context) -> str | None:
        radius = ctx.sizes.get("MASK_WIDTH", 1) // 2
        bad, shape = ctx.cmp.bad, ctx.cmp.bad.shape
        if radius == 0 or not bad.any() or min(shape) <= 2 * radius:
            return None
        inner = tuple(slice(radius, n - radius) for n in shape)
        if bad[inner].any():
            return None
        return (
            f"Only a border {radius} element{'s' if radius > 1 else ''} wide is wrong: those "
            f"outputs are the ones whose mask reaches ghost cells outside the input. {rule}"
        )

    return detect


def transposed(ctx: Context) -> str | None:
    got, want = ctx.cmp.got, ctx.cmp.expected
    if got.ndim != 2 or got.shape[0] != got.shape[1] or got.shape[0] < 2:
        return None
    if close(got, want.T, ctx.tol.T):
        return (
            f"{ctx.cmp.name} is the transpose of the right answer: row and column are swapped "
            "where you compute or store the element. The row comes from the y index "
            "(blockIdx.y * blockDim.y + threadIdx.y) and P[row * Width + col] is row-major."
        )
    return None


def swapped(first: str, second: str) -> Detector:
    """The operands exchanged, e.g. N M computed for M N."""

    def detect(ctx: Context) -> str | None:
        if ctx.inputs[first].shape != ctx.inputs[second].shape or ctx.cmp.got.size < 4:
            return None
        other = _reference_with(
            ctx,
            **{
                first: ctx.inputs[second].astype(np.float64),
                second: ctx.inputs[first].astype(np.float64),
            },
        )
        if close(ctx.cmp.got, other, ctx.tol):
            return (
                f"You computed the product with {first} and {second} exchanged. Element "
                f"(row, col) is the dot product of row `row` of {first} and column `col` of "
                f"{second}: sum over k of {first}[row * Width + k] * {second}[k * Width + col]."
            )
        return None

    return detect


def flipped_mask(array: str) -> Detector:
    def detect(ctx: Context) -> str | None:
        mask = ctx.inputs[array]
        if mask.size < 2:
            return None
        flipped = np.flip(mask.astype(np.float64))
        if close(ctx.cmp.got, _reference_with(ctx, **{array: flipped}), ctx.tol):
            return (
                "Your result is the convolution with the mask flipped. The lab computes "
                "P[y][x] = sum over i, j of N[y - R + i][x - R + j] * M[i][j] (no flip), "
                "so index the mask with the same i, j you add to the input position."
            )
        return None

    return detect


def shifted(ctx: Context) -> str | None:
    got, want, tol = ctx.cmp.got, ctx.cmp.expected, ctx.tol
    radius = max(1, ctx.sizes.get("MASK_WIDTH", 3) // 2)
    if min(got.shape) <= 4 * radius:
        return None
    inner = tuple(slice(2 * radius, n - 2 * radius) for n in got.shape)
    for axis in range(got.ndim):
        for step in range(-radius, radius + 1):
            if step == 0:
                continue
            moved = np.roll(want, step, axis=axis)
            if close(got[inner], moved[inner], np.roll(tol, step, axis=axis)[inner]):
                name = "xyz"[got.ndim - 1 - axis]
                return (
                    f"Your output is the right answer moved by {step} along {name}: the input "
                    "position of mask element i is (output position - MASK_WIDTH/2 + i). Check "
                    "the halo offset where you load the tile and where you index it."
                )
    return None


def truncated_sum(first: str, second: str) -> Detector:
    """For P = M N: right only for the first whole tiles of the k loop."""

    def detect(ctx: Context) -> str | None:
        width = ctx.inputs[first].shape[1]
        own = [ctx.tile[0], ctx.tile[1]]
        for tile in dict.fromkeys([*own, 8, 16, 32]):  # the student's own tile first
            kept = (width // tile) * tile
            if kept in (0, width):
                continue
            m = ctx.inputs[first].astype(np.float64).copy()
            m[:, kept:] = 0.0
            if close(ctx.cmp.got, _reference_with(ctx, **{first: m}), ctx.tol):
                return (
                    f"Every element is missing the products for k >= {kept}: your loop over "
                    f"tiles stops after {width // tile} whole tiles of {tile}, but Width is "
                    f"{width}. Loop ceil(Width / TILE) times and load 0 for elements past the "
                    "edge of the matrix (a boundary check on the loads)."
                )
        return None

    return detect


def pitch_ignored(ctx: Context) -> str | None:
    if not (ctx.cmp.nan.any() or ctx.cmp.unwritten.any()):
        return None
    return (
        "Rows are padded: row y of plane z of N starts at byte (z * H + y) * pitchN of N, and "
        "of P at (z * H + y) * pitchP. Stride by the pitches (in bytes, so cast to char* or "
        "divide by sizeof(float)), not by W; input and output pitches differ."
    )


def partial_tile_fault(extent: tuple[int, ...], tile: tuple[int, ...]) -> str | None:
    """For a run stopped by an access out of bounds: whether the size explains it."""
    axes = [(e, t) for e, t in zip(extent, tile, strict=True) if e > 1 or t > 1]
    if all(e % t == 0 for e, t in axes):
        return None
    size = " x ".join(str(e) for e, _ in axes)
    tiles = " x ".join(str(t) for _, t in axes)
    return (
        f"The output ({size}) is not a multiple of your tile ({tiles}), so the last blocks "
        "have threads past the edge. Guard every load with a bounds check (load 0 outside) "
        "and store only inside the output."
    )


def kind_of(detector: Callable) -> str:
    """The family of a detector's hints, the stable identifier a class view counts: the
    detector's own name, or its factory's (ghost_border(...) -> "ghost_border")."""
    return detector.__qualname__.split(".")[0]


def first_match(detectors, ctx: Context) -> tuple[str, str] | None:
    """The first hint a detector gives, with its family (kind_of)."""
    for detect in detectors:
        hint = detect(ctx)
        if hint:
            return kind_of(detect), hint
    return None


def first_hint(detectors, ctx: Context) -> str | None:
    match = first_match(detectors, ctx)
    return match[1] if match else None


SQUARE_ONLY_KIND = "square_only"
SQUARE_ONLY = (
    "Right for every square input and wrong for rectangular ones: somewhere Width and Height "
    "are swapped. Rows run over Height and columns over Width, element (row, col) is at "
    "row * Width + col, and the grid's x covers columns."
)


def is_square(sizes: dict[str, int]) -> bool:
    pairs = (("Width", "Height"), ("W", "H"), ("input_rows", "input_cols"))
    return all(sizes[a] == sizes[b] for a, b in pairs if a in sizes and b in sizes)
