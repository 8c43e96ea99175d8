"""Hints: a failing case's wrong elements often form a pattern that names the bug.

Each detector looks at one failing case and returns a sentence for the student, or None.
Labs list the detectors that make sense for them, most specific first; the first one
that recognises the pattern gives the case its hint. Before a lab's own come the
detectors of patterns any output can show (LEADING_HINTS): an output read before it was
set, an output all NaN, and elements never written in a pattern that repeats. Four
lists, each a field of the lab (grader.model.lab.Lab), the last three with defaults here
that a lab may replace:
- `hints`, for wrong elements: each detector gets a Context;
- `fault_hints`, for a run a fault stopped: each gets a Fault (FAULT_HINTS);
- `precision_hints`, after those of `hints` (PRECISION_HINTS);
- `cross_case_hints`, across cases: each gets the lab and every case's result, and
  speaks of which cases failed, a kernel right only for square inputs or only for some
  mask sizes (CROSS_CASE_HINTS).
A detector's family, the stable identifier a class view counts, is its name (kind_of).

A hint speaks of the failing case's own sizes, and names arrays, parameters and macros as
the lab defines them: nothing here knows which lab it is looking at. The helpers without
a leading underscore are for a lab's own detectors too."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from grader.judge.cases import widened
from grader.judge.compare import PRECISION, Comparison, close
from grader.model.lab import Lab, Role
from grader.model.lexer import line_of, uncommented
from grader.model.result import CaseResult, Diagnostic, Kind, Status


@dataclass
class Context:
    """A case whose output has wrong elements, as a detector of Lab.hints sees it."""

    lab: Lab  # the lab being graded
    sizes: dict[str, int]  # the case's, with the submission's launch macros
    inputs: dict[str, np.ndarray]  # the case's inputs, by array name, as the kernel got them
    cmp: Comparison  # the first failing output: expected, got, bad, unwritten, nan
    tol: np.ndarray  # the tolerance of each of its elements
    tile: tuple[int, int, int]  # the submission's TILE_X, TILE_Y, TILE_Z
    findings: tuple[Diagnostic, ...] = ()  # what the run itself reported


@dataclass
class Fault:
    """A case a fault stopped before it ended, as a detector of Lab.fault_hints sees
    it: no output, only what the backend found (`diagnostics`; `strayed` reads which
    buffers an access left)."""

    lab: Lab  # the lab being graded
    sizes: dict[str, int]  # the case's, with the submission's launch macros
    inputs: dict[str, np.ndarray]  # the case's inputs, by array name, as the kernel got them
    tile: tuple[int, int, int]  # the submission's TILE_X, TILE_Y, TILE_Z
    diagnostics: list[Diagnostic]  # what the backend found: out_of_bounds, crash, timeout
    source: str = ""  # the submission's text, for a detector that reads a check in it


Detector = Callable[[Context], str | None]


def left_a_barrier(ctx: Context) -> bool:
    """Whether the run found threads that left before a barrier or a warp operation the
    rest of their block reached: the cause of a partial tile's or block's wrong values
    that a hint then names, rather than a missing boundary check."""
    return any(d.kind == Kind.BARRIER_DIVERGENCE for d in ctx.findings)


# A rearranged mask or a shifted output makes nearly every element wrong; searching for
# one in a case with fewer wrong elements than this share is wasted work.
DENSE = 0.5


def reference_with(ctx: Context, **changed: np.ndarray) -> np.ndarray:
    """The failing output as the lab's reference computes it from the case's inputs with
    some of them `changed` (name=values): what a kernel with a given bug would give.
    Compare it with ctx.cmp.got within ctx.tol (grader.judge.compare.close)."""
    inputs = {k: widened(v) for k, v in ctx.inputs.items()}
    inputs.update(changed)
    return ctx.lab.reference(inputs, ctx.sizes)[ctx.cmp.name]


def _fmt_range(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}..{hi}"


def _dims(values: Iterable[int]) -> str:
    return " x ".join(str(v) for v in values)


def _axis(ndim: int, axis: int) -> str:
    """The name of numpy axis `axis` of an `ndim`-dimensional output (its last is x)."""
    return "xyz"[ndim - 1 - axis]


def listing(words: list[str]) -> str:
    """Words as a sentence lists them: "a", "a and b", "a, b and c"."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def size_named(lab: Lab, sizes: dict[str, int], value: int) -> str | None:
    """The kernel's first scalar parameter that holds `value` in this case."""
    for p in lab.kernel.params:
        if p.role == Role.SCALAR and sizes.get(p.value_name) == value:
            return p.name
    return None


def nothing_written(ctx: Context) -> str | None:
    """Every element still holds the poison: the kernel stored nothing."""
    if not ctx.cmp.unwritten.all():
        return None
    return (
        f"Nothing was written to {ctx.cmp.name}: every element still holds the NaN the grader "
        "filled it with. Check that the kernel stores its result, and that the store is not "
        "skipped by a condition that is always false."
    )


def _read_before_set_finding(findings: Iterable[Diagnostic]) -> Diagnostic | None:
    """A run's finding that a thread read an output before any thread stored into it
    (the CPU backend's census run sees the load); the judge's own unwritten_output
    findings name no line."""
    return next((d for d in findings if d.kind == Kind.UNWRITTEN_OUTPUT and d.line), None)


READ_BEFORE_SET_FIX = (
    "Add into a register and store the result once, or set the element before adding to it."
)


def read_before_set(ctx: Context) -> str | None:
    """An output read before it was set (y[i] += ... on an element nothing set first),
    where outputs arrive poisoned, as the run saw it: the CPU backend's census run watches
    the loads of outputs."""
    name = ctx.cmp.name
    seen = _read_before_set_finding(ctx.findings)
    if seen is None or next(a.initial for a in ctx.lab.outputs if a.name == name) != "poison":
        return None
    return (
        f"{name} holds the NaN the grader fills outputs with, because the kernel reads it "
        f"before setting it (line {seen.line}, below), and what it computes from that NaN is "
        f"NaN too: outputs arrive holding NaN, not 0. {READ_BEFORE_SET_FIX}"
    )


def all_nan(ctx: Context) -> str | None:
    """Every element NaN, computed or never written, and nothing the run found to say
    why (a race, shared memory never written). What a GPU shows of an output read before
    it was set (the poison carried into it), but a NaN has other sources, and the output
    alone cannot tell them apart: it says what it saw, and where a NaN comes from."""
    cmp = ctx.cmp
    if not cmp.bad.all() or not (cmp.nan | cmp.unwritten).all() or not cmp.nan.any():
        return None
    if any(d.kind != Kind.OUTPUT for d in ctx.findings):
        return None
    name = cmp.name
    shared = "a __shared__ array read before its __syncthreads()"
    read = (
        f"{shared}, or {name} itself, which arrives holding NaN: {name}[i] += ... on an "
        f"element nothing set first reads it. {READ_BEFORE_SET_FIX}"
        if next(a.initial for a in ctx.lab.outputs if a.name == name) == "poison"
        else f"{shared}."
    )
    return (
        f"Every element of {name} is NaN ({int(cmp.nan.sum())} computed, "
        f"{int(cmp.unwritten.sum())} never written), and what is computed from a NaN is NaN; "
        "the output alone does not say where the first one came from. 0 / 0, inf - inf and "
        f"0 * inf make one, and so does memory read before it was written: {read}"
    )


def partly_unwritten(ctx: Context) -> str | None:
    """Some elements, not all, were never written: named by the box they span."""
    missing = ctx.cmp.unwritten
    if not missing.any() or missing.all():
        return None
    where = np.argwhere(missing)
    lo, hi = where.min(axis=0), where.max(axis=0)
    box = ", ".join(
        f"{_axis(missing.ndim, a)} {_fmt_range(int(first), int(last))}"
        for a, (first, last) in enumerate(zip(lo, hi, strict=True))
    )
    return (
        f"{int(missing.sum())} elements of {ctx.cmp.name} were never written ({box}). "
        "Make sure the grid covers the whole output (grid = ceil(size / TILE)) and that every "
        "thread that owns an output element stores it."
    )


def _period(mask: np.ndarray, axis: int, longest: int = 256) -> int | None:
    """The shortest period of `mask` along `axis` that repeats at least twice; None where
    it does not change along that axis, or repeats with no such period."""
    n = mask.shape[axis]
    whole = np.moveaxis(mask, axis, 0)
    if np.array_equal(whole[1:], whole[:-1]):
        return None
    for p in range(2, min(n // 2, longest) + 1):
        if np.array_equal(whole[p:], whole[:-p]):
            return p
    return None


def _box(cell: np.ndarray) -> str | None:
    """Where `cell` is true, as a box "x 0..7, y 0..15" when it is one."""
    where = np.argwhere(cell)
    lo, hi = where.min(axis=0), where.max(axis=0)
    if int(cell.sum()) != int(np.prod(hi - lo + 1)):
        return None
    return ", ".join(
        f"{_axis(cell.ndim, a)} {_fmt_range(int(lo[a]), int(hi[a]))}"
        for a in reversed(range(cell.ndim))
        if (lo[a], hi[a]) != (0, cell.shape[a] - 1)
    )


def _own_axes(ndim: int) -> str:
    """Each index from its own axis, as the launch convention has it."""
    parts = [f"blockIdx.{a} * TILE_{a.upper()} + threadIdx.{a}" for a in "xyz"[:ndim]]
    return listing(parts)


def unwritten_pattern(ctx: Context) -> str | None:
    """Elements never written in a pattern that repeats along an axis (8 columns of every
    32): an index steps from one block to the next by more than a block covers, or takes
    another axis's block or thread index. The grid does not make such a pattern."""
    missing = ctx.cmp.unwritten
    if not missing.any() or missing.all():
        return None
    periods = [_period(missing, a) for a in range(missing.ndim)]
    if not any(periods):
        return None
    cell = ~missing[tuple(slice(0, p or n) for p, n in zip(periods, missing.shape, strict=True))]
    if not cell.any():
        return None
    every = listing(
        [f"{p} along {_axis(missing.ndim, a)}" for a, p in reversed(list(enumerate(periods))) if p]
    )
    box = _box(cell)
    written = f"only {box} is written" if box else "the same elements are written"
    return (
        f"{int(missing.sum())} elements of {ctx.cmp.name} were never written, in a pattern "
        f"that repeats every {every}: in each repeat, {written}. A pattern that repeats comes "
        "from the index arithmetic, not from the grid: from one block to the next an index "
        "must step by as many elements as a block covers along its axis, and each index "
        f"takes the block and thread index of its own axis ({_own_axes(missing.ndim)})."
    )


def last_partial_tile(ctx: Context) -> str | None:
    """Wrong only beyond the last whole tile of the submission's own TILE. A case whose
    output is a whole number of tiles has no partial tile to blame."""
    bad, shape = ctx.cmp.bad, ctx.cmp.bad.shape
    tile = tuple(reversed(ctx.tile[: bad.ndim]))
    full = [(n // t) * t for n, t in zip(shape, tile, strict=True)]
    if not bad.any() or 0 in full or full == list(shape):
        return None
    grids = np.indices(shape)
    edge = np.zeros(shape, bool)
    for axis, f in enumerate(full):
        edge |= grids[axis] >= f
    if (bad & ~edge).any():
        return None
    dims = _dims(shape)
    where = (
        f"Only the last, partial tile is wrong: every wrong element lies beyond "
        f"{_dims(full)} of the {dims} output, and {dims} is not a multiple "
        f"of the tile {_dims(tile)}."
    )
    if left_a_barrier(ctx):
        return (
            f"{where} There, threads past the edge left before a __syncthreads() (the "
            "barrier finding), so they never stored their share of the tile the others "
            "read. Keep every thread of the block in the loop: instead of returning, load 0 "
            "for elements past the edge and skip only the final store."
        )
    return (
        f"{where} Threads there need boundary checks: "
        "load 0 for elements past the edge and store only inside the output."
    )


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


def _seams(n: int, tile: int, radius: int) -> np.ndarray:
    """Positions along an axis of `n` within `radius` of a seam between two tiles."""
    i = np.arange(n)
    seam = np.rint(i / tile).astype(int) * tile
    return (seam > 0) & (seam < n) & (i >= seam - radius) & (i < seam + radius)


def tile_seams(ctx: Context) -> str | None:
    """Wrong only within the mask radius of the seams between tiles (the edges two blocks'
    tiles share), as the submission's TILE lays them: the outputs whose mask reaches into
    the neighbouring tile. A block's halo lies there, and so do the outputs its halo
    threads would store into."""
    radius = ctx.sizes.get("MASK_WIDTH", 1) // 2
    bad = ctx.cmp.bad
    if radius == 0 or not bad.any() or ctx.cmp.unwritten.any():
        return None  # an element never written is the grid's or an index's, not the halo's
    tile = tuple(reversed(ctx.tile[: bad.ndim]))
    near = np.zeros(bad.shape, bool)
    for axis, (n, t) in enumerate(zip(bad.shape, tile, strict=True)):
        shape = [1] * bad.ndim
        shape[axis] = n
        near |= _seams(n, t, radius).reshape(shape)
    if not near.any() or (bad & ~near).any():
        return None
    return (
        f"Every wrong element lies within {radius} of a seam between two blocks' tiles "
        f"({_dims(tile)}): the outputs whose mask reaches into the neighbouring tile. There a "
        "block reads its halo, the input its neighbours cover, and its halo threads sit over "
        "the neighbours' outputs. Load the halo from the input, and let only the threads "
        "that own an output store it: a thread that only loads a halo element stores nothing."
    )


def column_major(ctx: Context) -> str | None:
    """For a 2D output: the result of a kernel that reads the inputs of the output's shape,
    and writes the output, column-major (element (r, c) at c * rows + r). For a square
    output that is also the result of a mask with its axes exchanged, which it says."""
    got, cmp = ctx.cmp.got, ctx.cmp
    if got.ndim != 2 or cmp.bad.mean() < DENSE or min(got.shape) < 2:
        return None
    rows, cols = got.shape
    read = {k: _column_major(v) for k, v in ctx.inputs.items() if v.shape == got.shape}
    if not read:
        return None
    want = reference_with(ctx, **read)
    if not close(got, np.ascontiguousarray(want.T).reshape(rows, cols), ctx.tol):
        return None
    names = _main_axes(ctx.lab) or ["rows", "columns"]
    square = (
        " For a square output that is also the result of the mask with its x and y axes "
        "exchanged: either the image's row and column are exchanged in every index, or the "
        "mask's."
        if rows == cols
        else ""
    )
    return (
        f"Your result is what reading and writing the arrays column-major gives: element "
        f"(r, c) at c * {names[0]} + r, where they are row-major, element (r, c) at r * "
        f"{names[-1]} + c.{square} Index each array as rows of {names[-1]} elements."
    )


def _column_major(a: np.ndarray) -> np.ndarray:
    """What a kernel reading `a` column-major sees at (r, c): element c * rows + r."""
    rows, cols = a.shape
    return np.asarray(a, np.float64).reshape(-1).reshape(cols, rows).T


def transposed(ctx: Context) -> str | None:
    """A square output that is the transpose of the right one."""
    got, want = ctx.cmp.got, ctx.cmp.expected
    if got.ndim != 2 or got.shape[0] != got.shape[1] or got.shape[0] < 2:
        return None
    if close(got, want.T, ctx.tol.T):
        return (
            f"{ctx.cmp.name} is the transpose of the right answer: row and column are swapped "
            "where you compute or store the element. The row comes from the y index "
            "(blockIdx.y * blockDim.y + threadIdx.y), the column from x, and the output is "
            "row-major: element (row, col) sits at row * columns + col."
        )
    return None


def swapped(first: str, second: str) -> Detector:
    """The operands exchanged, e.g. N M computed for M N."""

    def detect(ctx: Context) -> str | None:
        if ctx.inputs[first].shape != ctx.inputs[second].shape or ctx.cmp.got.size < 4:
            return None
        other = reference_with(
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
                f"{second}: the sum over k of {first}[row][k] * {second}[k][col]."
            )
        return None

    return detect


def tiles_transposed(a: np.ndarray, tile: int) -> np.ndarray:
    """`a` (2D) with each `tile` x `tile` block transposed in its place; a partial block
    is transposed as a whole one padded with 0, and cut back to `a`'s shape."""
    rows, cols = a.shape
    high, wide = -(-rows // tile) * tile, -(-cols // tile) * tile
    padded = np.zeros((high, wide), np.float64)
    padded[:rows, :cols] = a
    blocks = padded.reshape(high // tile, tile, wide // tile, tile).transpose(0, 3, 2, 1)
    return blocks.reshape(high, wide)[:rows, :cols]


def _square_tiles(ctx: Context) -> list[int]:
    """Tile sizes to try, the submission's own first where it is square."""
    own = [ctx.tile[0]] if ctx.tile[0] == ctx.tile[1] else []
    return [t for t in dict.fromkeys([*own, 16, 32, 8]) if 1 < t < max(ctx.cmp.got.shape)]


def index_rearranged(first: str, second: str) -> Detector:
    """For P = first second: the result of an operand read with its two indices exchanged,
    all of it (a load indexed [col][row]) or inside each tile (tx and ty exchanged where a
    tile is stored into shared memory or read back), or an output whose tiles hold their
    right values transposed. Each is recomputed and compared."""

    def detect(ctx: Context) -> str | None:
        got = ctx.cmp.got
        if got.ndim != 2 or got.shape[0] != got.shape[1] or got.shape[0] < 2:
            return None
        operands = {name: ctx.inputs[name].astype(np.float64) for name in (first, second)}
        if any(a.ndim != 2 or a.shape[0] != a.shape[1] for a in operands.values()):
            return None
        size = size_named(ctx.lab, ctx.sizes, got.shape[0]) or "the width"
        for name, a in operands.items():
            if close(got, reference_with(ctx, **{name: a.T}), ctx.tol):
                return (
                    f"Your result is the product with {name} transposed: where you read "
                    f"{name}, its row and column are exchanged. {name} is row-major: element "
                    f"(row, k) is {name}[row * {size} + k], and the row index steps by a "
                    "whole row."
                )
        for tile in _square_tiles(ctx):
            for name, a in operands.items():
                changed = reference_with(ctx, **{name: tiles_transposed(a, tile)})
                if close(got, changed, ctx.tol):
                    return (
                        f"Your result is the product with every {tile} x {tile} tile of "
                        f"{name} transposed: inside a tile, {name}'s row and column are "
                        "exchanged where a thread stores it into shared memory or reads it "
                        "back (tile[tx][ty] for tile[ty][tx], or tile[k][ty] for "
                        "tile[ty][k]). Thread (tx, ty) stores the element of the tile's row "
                        f"ty and column tx at [ty][tx]; the product reads {first}'s tile "
                        f"along a row, [ty][k], and {second}'s down a column, [k][tx]."
                    )
            want = tiles_transposed(ctx.cmp.expected, tile)
            if close(got, want, tiles_transposed(ctx.tol, tile)):
                return (
                    f"Each {tile} x {tile} tile of {ctx.cmp.name} holds its right values, "
                    "transposed: inside its tile, a thread's row and column are exchanged "
                    "(threadIdx.x where threadIdx.y belongs). The row is blockIdx.y * TILE + "
                    "threadIdx.y, the column blockIdx.x * TILE + threadIdx.x."
                )
        return None

    return detect


def same_block_index(ctx: Context) -> str | None:
    """Right on the diagonal tiles and never written elsewhere: the row and the column
    both come from one block index, so every block stores into a diagonal tile."""
    missing = ctx.cmp.unwritten
    if missing.ndim != 2 or not missing.any() or missing.all():
        return None
    rows, cols = np.indices(missing.shape)
    diagonal = rows // ctx.tile[1] == cols // ctx.tile[0]
    if (missing == diagonal).any() or ctx.cmp.bad[diagonal].any():
        return None
    return (
        f"Only the tiles on the diagonal of {ctx.cmp.name} were written, and they are right: "
        "the row and the column of a thread come from the same block index, so every block "
        "stores into a diagonal tile and the others stay empty. The row comes from the y "
        "index (blockIdx.y * TILE_Y + threadIdx.y), the column from x (blockIdx.x * TILE_X "
        "+ threadIdx.x)."
    )


def _mask_changes(ndim: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(axis order, flipped axes) of a mask, most common mistakes first: the full flip
    (a true convolution), two axes exchanged, one axis flipped, two flipped, then the
    rest of the axis orders."""
    axes = tuple(range(ndim))
    swaps = [
        tuple(b if i == a else a if i == b else i for i in axes)
        for a, b in itertools.combinations(axes, 2)
    ]
    flips = [f for r in range(1, ndim) for f in itertools.combinations(axes, r)]
    others = [p for p in itertools.permutations(axes) if p != axes and p not in swaps]
    out = [(axes, axes)]
    out += [(p, ()) for p in swaps]
    out += [(axes, f) for f in flips]
    out += [(p, ()) for p in others]
    return out


def _describe_change(ndim: int, order: tuple[int, ...], flipped: tuple[int, ...]) -> str:
    if flipped == tuple(range(ndim)) and order == tuple(range(ndim)):
        return (
            "flipped on every axis (a true convolution, where the lab computes a cross-correlation)"
        )
    if flipped:
        names = [_axis(ndim, a) for a in flipped]
        return f"flipped along {listing(names)}"
    moved = [a for a in range(ndim) if order[a] != a]
    if len(moved) == 2:
        a, b = sorted((_axis(ndim, m) for m in moved), key="xyz".index)
        return f"indexed with its {a} and {b} axes exchanged"
    order_names = ", ".join(_axis(ndim, order[a]) for a in range(ndim))
    return f"indexed with its axes in the order ({order_names})"


def mask_rearranged(array: str) -> Detector:
    """The result of the right mask flipped or with its axes in another order."""

    def detect(ctx: Context) -> str | None:
        mask = ctx.inputs[array].astype(np.float64)
        if mask.size < 2 or ctx.cmp.bad.mean() < DENSE:
            return None
        for order, flips in _mask_changes(mask.ndim):
            changed = np.transpose(mask, order)
            if flips:
                changed = np.flip(changed, flips)
            if changed.shape != mask.shape or np.array_equal(changed, mask):
                continue
            if close(ctx.cmp.got, reference_with(ctx, **{array: changed}), ctx.tol):
                how = _describe_change(mask.ndim, order, flips)
                return (
                    f"Your result is the right one for the mask {how}. Mask element "
                    f"{_subscripts(mask.ndim, 'i')} multiplies the input at the output "
                    f"position plus {_subscripts(mask.ndim, 'i', brackets=False)} (minus "
                    "the radius): index the mask with the same offsets, in the same order, "
                    "that you add to the input position."
                )
        return None

    return detect


def _subscripts(ndim: int, letter: str, brackets: bool = True) -> str:
    names = [f"{letter}{a}" for a in "zyx"[3 - ndim :]]
    return "".join(f"[{n}]" for n in names) if brackets else f"({', '.join(names)})"


def shifted(ctx: Context) -> str | None:
    """The right answer moved by a few elements, along one axis or several."""
    got, want, tol = ctx.cmp.got, ctx.cmp.expected, ctx.tol
    radius = max(1, ctx.sizes.get("MASK_WIDTH", 3) // 2)
    if min(got.shape) <= 4 * radius or ctx.cmp.bad.mean() < DENSE:
        return None
    inner = tuple(slice(2 * radius, n - 2 * radius) for n in got.shape)
    steps = range(-radius, radius + 1)
    axes = tuple(range(got.ndim))
    for shift in sorted(itertools.product(steps, repeat=got.ndim), key=_moves):
        if not any(shift):
            continue
        moved = np.roll(want, shift, axis=axes)
        if close(got[inner], moved[inner], np.roll(tol, shift, axis=axes)[inner]):
            along = [f"{step} along {_axis(got.ndim, a)}" for a, step in enumerate(shift) if step]
            return (
                f"Your output is the right answer moved by {listing(along[::-1])}: each "
                "element holds the value of a neighbour. Check the offset between an output "
                "position and the input it reads (the halo offset), where you load the "
                "tile and where you index it."
            )
    return None


def _moves(shift: tuple[int, ...]) -> tuple[int, int]:
    """Try the smallest shifts first: fewest axes, then the shortest steps."""
    return (sum(1 for s in shift if s), sum(abs(s) for s in shift))


def truncated_sum(first: str, second: str) -> Detector:
    """For P = M N: right only for the first whole tiles of the k loop."""

    def detect(ctx: Context) -> str | None:
        width = ctx.inputs[first].shape[1]
        name = size_named(ctx.lab, ctx.sizes, width) or "the size"
        own = [ctx.tile[0], ctx.tile[1]]
        for tile in dict.fromkeys([*own, 8, 16, 32]):  # the student's own tile first
            kept = (width // tile) * tile
            if kept in (0, width):
                continue
            m = ctx.inputs[first].astype(np.float64).copy()
            m[:, kept:] = 0.0
            if close(ctx.cmp.got, reference_with(ctx, **{first: m}), ctx.tol):
                return (
                    f"Every element is missing the products for k >= {kept}: your loop over "
                    f"tiles stops after {width // tile} whole tiles of {tile}, but {name} is "
                    f"{width}. Loop ceil({name} / TILE) times and load 0 for elements past the "
                    "edge of the matrix (a boundary check on the loads)."
                )
        return None

    return detect


def pitch_ignored(ctx: Context) -> str | None:
    """NaN read from, or elements left in, the padding of pitched rows."""
    if not (ctx.cmp.nan.any() or ctx.cmp.unwritten.any()):
        return None
    pitched = [p for p in ctx.lab.kernel.params if p.pitch]
    rows = listing([f"a row of {p.name} is {p.pitch} bytes long" for p in pitched])
    return (
        f"Rows are padded: {rows}. Step from one row to the next by the pitch, which is in "
        "bytes (cast to char* or divide by sizeof(float)), not by the width"
        + ("; the pitches differ." if len(pitched) > 1 else ".")
    )


# What both backends say of an access outside a buffer: "past the end of x", "before the
# start of x".
_STRAYED = re.compile(r"\b(past the end|before the start) of (\w+)")


def strayed(fault: Fault) -> dict[str, str]:
    """The kernel buffers an access of the faulting run left, each with its side ("past
    the end" or "before the start"), from what the backends found: {"x": "past the end"}.
    Accesses outside __shared__ memory are not among them."""
    names = set(fault.lab.buffers)
    found: dict[str, str] = {}
    for d in fault.diagnostics:
        if d.kind != Kind.OUT_OF_BOUNDS:
            continue
        for side, name in _STRAYED.findall(d.message):
            if name in names:
                found.setdefault(name, side)
    return found


def _past_a_buffer(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Accesses past a buffer; one past a __shared__ array is about the array's size."""
    return [
        d for d in diagnostics if d.kind == Kind.OUT_OF_BOUNDS and "__shared__" not in d.message
    ]


def ghost_cells_fault(rule: str) -> Callable[[Fault], str | None]:
    """For a lab with a mask over an input the output's size: a run stopped by an access
    outside that input is the mask reaching ghost cells at its edges, whatever the size.
    `rule` says how the lab treats them."""

    def detect(fault: Fault) -> str | None:
        lab = fault.lab
        sizes = lab.full_sizes(fault.sizes)
        shape = lab.outputs[0].shape(sizes)
        framed = {a.name for a in lab.inputs if a.shape(sizes) == shape}
        found = [(name, side) for name, side in strayed(fault).items() if name in framed]
        if not lab.constants or not found:
            return None
        name, side = found[0]
        return (
            f"The access {side} of {name} is a ghost cell: near every edge of {name}, the mask "
            f"around an output reaches outside it, whatever its size. Before reading a "
            f"neighbour, check its index on every axis against the sizes "
            f"({listing(_size_params(lab))}). {rule}"
        )

    return detect


def partial_tile_fault(fault: Fault) -> str | None:
    """For a run stopped by an access past the end of a buffer: whether the size the grid
    covers, no multiple of the tile, explains it, named as the array of that size (the
    output, or the input of a reduction). It does not where the access was before a
    buffer's start, or where the thread that made it is in no last, partial block."""
    if "past the end" not in strayed(fault).values():
        return None
    extent, tile = fault.lab.extent(fault.sizes), fault.tile
    axes = [(e, t) for e, t in zip(extent, tile, strict=True) if e > 1 or t > 1]
    if all(e % t == 0 for e, t in axes):
        return None
    if not any(_in_partial_block(d.block, extent, tile) for d in _past_a_buffer(fault.diagnostics)):
        return None
    return (
        f"The {_covered(fault)} ({_dims(e for e, _ in axes)}) is not a multiple of your tile "
        f"({_dims(t for _, t in axes)}), so the last blocks have threads past the edge. Guard "
        "every load with a bounds check (load 0 outside) and store only inside the output."
    )


def _in_partial_block(block, extent, tile) -> bool:
    """Whether `block` (None: not known) is the last along an axis the tile does not
    divide."""
    if block is None:
        return True
    return any(e % t and b == -(-e // t) - 1 for b, e, t in zip(block, extent, tile, strict=True))


def _covered(fault: Fault) -> str:
    """What the grid's extent is the size of: "output", "input" (the input named input),
    "input N", or "grid"."""
    lab, sizes = fault.lab, fault.lab.full_sizes(fault.sizes)
    spans = [n for n in lab.extent(fault.sizes) if n > 1]
    for what, arrays in (("output", lab.outputs), ("input", lab.inputs)):
        for array in arrays:  # its shape's last axis is x, the extent's first
            if [n for n in reversed(array.shape(sizes)) if n > 1] == spans:
                return what if what == "output" or array.name == "input" else f"input {array.name}"
    return "grid"


# `x > Width`, `i <= (unsigned int)n`, and the same the other way round (`Width < x`):
# a check that lets the size itself through. SIZE is a size parameter's name.
_LAX_CHECK = (
    r"(?<![\w\]\)])(?P<var>[A-Za-z_]\w*)\s*(?P<op>(?<![<>=!-])>(?![>=])|(?<!<)<=)\s*"
    r"(?:\(\s*(?:unsigned\s+)?\w+\s*\)\s*)?(?P<size>SIZE)\b(?!\s*[-+*/%(\[.])"
    r"|(?<![\w.])(?P<size2>SIZE)\s*(?P<op2>(?<![<>=!])<(?![<=])|>=)\s*(?P<var2>[A-Za-z_]\w*)\b"
    r"(?!\s*[-+*/%(\[.])"
)


def lax_bounds_check(fault: Fault) -> str | None:
    """For a run stopped by an access past a buffer: a bounds check in the text that lets
    the size itself through (`row > Width` to leave, `i <= n` to go on), the classic
    reason a guarded kernel still reads one past the end; the check on the faulting line
    first."""
    if not _past_a_buffer(fault.diagnostics) or not fault.source:
        return None
    code = uncommented(fault.source)
    sizes = "|".join(re.escape(name) for name in _size_params(fault.lab))
    if not sizes:
        return None
    found = list(re.finditer(_LAX_CHECK.replace("SIZE", f"(?:{sizes})"), code))
    faulted = {d.line for d in fault.diagnostics if d.line}
    match = next((m for m in found if line_of(code, m.start()) in faulted), None)
    match = match or (found[0] if found else None)
    if match is None:
        return None
    var, size = match["var"] or match["var2"], match["size"] or match["size2"]
    check = " ".join(match.group(0).split())
    leaves = (match["op"] or match["op2"]) in (">", "<")  # true for an index past the end
    right = f"{var} >= {size}" if leaves else f"{var} < {size}"
    return (
        f"The bounds check `{check}` at line {line_of(code, match.start())} lets {var} = "
        f"{size} through, one past the last index (indices run from 0 to {size} - 1), and "
        f"that is the access past the end below. Write it `{right}`."
    )


def lower_precision(ctx: Context) -> str | None:
    """Errors over the whole output that float32 arithmetic cannot make: every element
    within its tolerance, or wrong elements that look like rounding in lower precision.
    The grader adds it after the lab's own detectors."""
    cmp = ctx.cmp
    if not cmp.imprecise or (cmp.bad.any() and not cmp.like_lower_precision):
        return None
    return less_precise_than_float32(cmp)


def less_precise_than_float32(cmp: Comparison) -> str:
    """What an imprecise comparison says of the kernel (cases and timed launches)."""
    return (
        f"{cmp.name} is less precise than float32 arithmetic can be: its errors are "
        f"{cmp.precision:.3g} times the rounding error of float32 on these sums (the root "
        f"mean square over {cmp.rounding.size} elements, where a float32 kernel stays "
        f"under {PRECISION:g} whatever order it adds in). The kernel computes in lower "
        "precision than float32: half, bfloat16 or TF32 values, products or sums, as "
        "tensor cores do. Load, multiply and add in float."
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
    """The first hint a detector gives, without its family."""
    match = first_match(detectors, ctx)
    return match[1] if match else None


def fault_hint(fault: Fault) -> tuple[str, str] | None:
    """The hint of a run a fault stopped, from the lab's fault_hints (or FAULT_HINTS)."""
    lab = fault.lab
    return first_match(FAULT_HINTS if lab.fault_hints is None else lab.fault_hints, fault)


def output_hint(ctx: Context) -> tuple[str, str] | None:
    """The hint of a wrong output: LEADING_HINTS and the lab's hints where some element
    is wrong (their patterns are of wrong elements), then its precision_hints (or
    PRECISION_HINTS)."""
    lab = ctx.lab
    own = (*LEADING_HINTS, *lab.hints) if ctx.cmp.bad.any() else ()
    closing = PRECISION_HINTS if lab.precision_hints is None else lab.precision_hints
    return first_match((*own, *closing), ctx)


# -- across cases ---------------------------------------------------------------------------


def cross_case(lab: Lab, cases: list[CaseResult]) -> tuple[str, str] | None:
    """A sentence for every failing case when which cases fail says why, with the family
    of the first detector that found one: the sentences of every detector of the lab's
    cross_case_hints (or CROSS_CASE_HINTS), each of which gets (lab, cases)."""
    failing = [c for c in cases if not c.passed]
    if not failing or len(failing) == len(cases):
        return None
    detectors = CROSS_CASE_HINTS if lab.cross_case_hints is None else lab.cross_case_hints
    found = [(kind_of(d), d(lab, cases)) for d in detectors]
    found = [(kind, sentence) for kind, sentence in found if sentence]
    if not found:
        return None
    return found[0][0], " ".join(sentence for _, sentence in found)


def _explains(cases: list[CaseResult], right: Callable[[dict[str, int]], bool]) -> bool:
    """Whether exactly the cases where `right` holds pass, with some of each."""
    where = [right(c.sizes) for c in cases]
    return (
        any(where)
        and not all(where)
        and all(c.passed == w for c, w in zip(cases, where, strict=True))
    )


def cubic_only(lab: Lab, cases: list[CaseResult]) -> str | None:
    """Right exactly where all sizes of the lab's main input are equal: the sizes are used
    in the wrong order. When the cases cannot tell a cube from two equal sides, the cube
    is named, with every size to check."""
    axes = _main_axes(lab)
    shape = lab.inputs[0].shape
    if len(set(axes)) < 2 or len(axes) < 3:
        return None
    if not _explains(cases, lambda s: len(set(shape(s))) == 1):
        return None
    names = listing(_size_params(lab))
    return (
        f"Right for every cubic volume and wrong for all the others: the sizes are used "
        f"in the wrong order somewhere. Check the order of {names}: the kernel receives "
        "them in this order, x is the fastest axis (consecutive in memory), then y, then "
        "z. A kernel written for sizes in (z, y, x) order, as some courses' labs have "
        "them, is right only when all three are equal."
    )


def square_only(lab: Lab, cases: list[CaseResult]) -> str | None:
    """Right exactly where two sizes of the lab's main input are equal: those two are
    exchanged somewhere (unless cubic_only names the cube)."""
    axes = _main_axes(lab)
    shape = lab.inputs[0].shape
    if len(set(axes)) < 2 or cubic_only(lab, cases):
        return None
    for a, b in itertools.combinations(range(len(axes)), 2):
        if axes[a] != axes[b] and _explains(cases, lambda s, a=a, b=b: _sides(shape, s, a, b)):
            first, second = sorted((axes[a], axes[b]), key=_size_params(lab).index)
            return _swapped_sentence(first, second, flat=len(axes) == 2)
    return None


def _sides(shape: Callable, sizes: dict[str, int], a: int, b: int) -> bool:
    dims = shape(sizes)
    return dims[a] == dims[b]


def _swapped_sentence(first: str, second: str, flat: bool) -> str:
    when = (
        f"for every square input ({first} = {second})" if flat else f"whenever {first} = {second}"
    )
    return (
        f"Right {when} and wrong otherwise: somewhere {first} and {second} are "
        f"exchanged. Check each place you use them: the bounds checks, the index arithmetic "
        "(x, the fastest axis, is consecutive in memory; y steps by a whole row) and which "
        "grid axis covers which size."
    )


def _main_axes(lab: Lab) -> list[str]:
    """The size parameter behind each axis of the lab's main input, found by giving each
    size a value of its own; none where the shape needs a size only a draw defines."""
    names = _size_params(lab)
    probe = dict(lab.public_cases[0].sizes)
    probe.update({name: 1009 + 2 * i for i, name in enumerate(names)})
    by_value = {probe[name]: name for name in names}
    try:
        shape = lab.inputs[0].shape(lab.full_sizes(probe))
    except KeyError:
        return []
    return [by_value.get(v, "?") for v in shape]


def _size_params(lab: Lab) -> list[str]:
    """The kernel's scalar parameters that carry the case's own sizes (not the derived
    ones, not pitches)."""
    sample = lab.public_cases[0].sizes
    derived = set(lab.derive(dict(sample)))
    pitches = {p.pitch for p in lab.kernel.params if p.pitch}
    return [
        p.name
        for p in lab.kernel.params
        if p.role == Role.SCALAR and p.value_name not in derived | pitches
    ]


def macro_only(lab: Lab, cases: list[CaseResult]) -> str | None:
    """Right exactly for some values of a macro the grader sets (MASK_WIDTH): something
    is sized or written for those values only."""
    found = [_macro_only(lab, cases, macro) for macro in lab.macros]
    return " ".join(f for f in found if f) or None


def _macro_only(lab: Lab, cases: list[CaseResult], macro: str) -> str | None:
    failing = {c.sizes[macro] for c in cases if not c.passed and macro in c.sizes}
    passing = {c.sizes[macro] for c in cases if c.passed and macro in c.sizes}
    if not failing or not passing or failing & passing:
        return None
    bad, good = (
        listing([str(v) for v in sorted(failing)]),
        listing([str(v) for v in sorted(passing)]),
    )
    if all(_not_run(c) for c in cases if not c.passed and macro in c.sizes):
        return (
            f"Only the cases with {macro} {bad} fail, and every case with {macro} {good} "
            f"passes: with {macro} {bad} the kernel is not run at all, for the reason each "
            f"of those cases gives, which something sized from {macro} (the block, a "
            f"__shared__ array) meets only there. Size it so that it fits at every {macro} "
            "the grader sets."
        )
    if min(failing) > max(passing):
        cause, block = f"sized for a smaller {macro}", "too small"
    elif max(failing) < min(passing):
        cause, block = f"sized for a larger {macro}", "too large"
    else:
        cause, block = f"written for {macro} {good} only", "of the wrong size"
    return (
        f"Only the cases with {macro} {bad} fail, and every case with {macro} {good} passes: "
        f"something in the kernel is {cause}. Look for a __shared__ tile or array of fixed "
        f"size, a block {block} for the tile and its halo, or a loop bound or offset "
        f"written as a number; derive each from {macro}, which the grader sets for every case."
    )


def _not_run(case: CaseResult) -> bool:
    """A case whose build a finding stopped: an error with nothing of a run in it."""
    return case.status == Status.ERROR and not case.diagnostics and case.first_mismatch is None


# Tried before a lab's own hints: patterns any output can show.
LEADING_HINTS: tuple[Detector, ...] = (read_before_set, all_nan, unwritten_pattern)
# The detectors a lab gets where it names none of its own (Lab.fault_hints,
# Lab.precision_hints, Lab.cross_case_hints).
FAULT_HINTS: tuple[Callable[[Fault], str | None], ...] = (lax_bounds_check, partial_tile_fault)
PRECISION_HINTS: tuple[Detector, ...] = (lower_precision,)
CROSS_CASE_HINTS: tuple[Callable[[Lab, list[CaseResult]], str | None], ...] = (
    macro_only,
    cubic_only,
    square_only,
)
