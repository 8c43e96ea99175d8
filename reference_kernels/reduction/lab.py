"""Sum reduction: `reduction(const float* input, float* output, int n)`. Block b sums its
TILE_X inputs (default TILE_X = 2 * BLOCK_X; those past n count as 0) and writes the sum
to output[b]; the grid is ceil(n / TILE_X), and the grader adds the partial sums itself.
Each sum is held to float32 over the inputs it really adds (grader.judge.compare). TILE_X may be
at most MAX_TILE, 1024 threads adding 64 inputs each: past that, a sum of inputs
rounded to half precision would be hard to tell from a float32 sum. It must be at least
MIN_TILE, with BLOCK_X at least MIN_BLOCK, so that the kernel, not the grader, adds."""

from __future__ import annotations

import numpy as np

from grader.judge import hints
from grader.judge.compare import close
from grader.labs import common
from grader.model.lab import Array, Case, Kernel, Lab, Param, Role, Sampler, Scoring

MAX_TILE = 1 << 16
# A block sums at least a warp's worth of pairs: with TILE_X = 1 each block would copy an
# input, and the sum would be the grader's.
MIN_BLOCK = 32
MIN_TILE = 2 * MIN_BLOCK

KERNEL = Kernel(
    "reduction",
    (
        Param("input", "const float*", Role.INPUT),
        Param("output", "float*", Role.OUTPUT),
        Param("n", "int", Role.SCALAR),
    ),
)


def blocks(sizes) -> int:
    return max(1, -(-sizes["n"] // sizes["TILE_X"]))


def _case(n: int, visibility: str = "public") -> Case:
    return Case(f"n-{n}", {"n": n}, visibility)


PUBLIC = (_case(1024), _case(1000), _case(100_000))
# 1 and 517; primes, none a multiple of a block; several million.
HIDDEN = tuple(
    _case(n, "hidden") for n in (1, 517, 7919, 65537, 131071, 999983, 2_000_003, 4_000_037)
)


def _sums(values: np.ndarray, tile: int) -> np.ndarray:
    """Each block's sum of `tile` consecutive values (the last padded with 0)."""
    count = -(-values.size // tile)
    padded = np.zeros(max(1, count) * tile, values.dtype)
    padded[: values.size] = values
    return padded.reshape(-1, tile).sum(axis=1)


def _needs(sizes, axes, read):
    tile = sizes["TILE_X"]
    return {"input": (axes[0][:, None] * tile + np.arange(tile)[None, :],)}


# output[b] from its block's TILE_X inputs; those past n read 0
SAMPLER = Sampler(
    _needs,
    lambda sizes, v, axes: {"output": v["input"].sum(axis=1)},
    reads=lambda sizes, counts: {"input": counts[0] * sizes["TILE_X"]},
)


def last_block_only(ctx: hints.Context) -> str | None:
    bad = ctx.cmp.bad
    n, tile = ctx.sizes["n"], ctx.sizes["TILE_X"]
    if bad.size < 2 or not bad[-1] or bad[:-1].any() or n % tile == 0:
        return None
    where = (
        f"Only the last block's sum, output[{bad.size - 1}], is wrong: that block has only "
        f"{n % tile} of its {tile} inputs (n = {n} is no multiple of TILE_X)."
    )
    if hints.left_a_barrier(ctx):
        return (
            f"{where} There, threads past n left before a __syncthreads() or a warp "
            "shuffle (the barrier finding), so the others added what those threads never "
            "wrote. Keep every thread of the block to the end: instead of returning, load 0 "
            "for every index i >= n."
        )
    return f"{where} Load 0 for every index i >= n instead of reading past the end."


def block_start(ctx: hints.Context) -> str | None:
    """Each block sums TILE_X inputs, from a start off by a factor: block b from
    b * TILE_X / 2 (blockIdx.x * blockDim.x where each thread adds two), or the like."""
    if not ctx.cmp.bad.any() or ctx.cmp.unwritten.any():
        return None
    values = np.asarray(ctx.inputs["input"], np.float64)
    tile, blocks = ctx.sizes["TILE_X"], ctx.cmp.got.size
    running = np.concatenate([[0.0], np.cumsum(values)])
    magnitude = np.concatenate([[0.0], np.cumsum(np.abs(values))])
    for stride in (tile // 2, 2 * tile, tile // 4):
        starts = np.minimum(np.arange(blocks) * stride, values.size)
        ends = np.minimum(starts + tile, values.size)
        sums = running[ends] - running[starts]
        # the float32 bound of sums of up to `tile` terms (grader.judge.compare), for these sums
        bound = 5 * np.sqrt(tile) * 2.0**-24 * (magnitude[ends] - magnitude[starts]) + 1e-6
        if stride and close(ctx.cmp.got, sums, np.maximum(ctx.tol, bound)):
            return (
                f"Each block sums {tile} inputs, but from the wrong place: block b starts at "
                f"b * {stride} instead of b * {tile}, so the blocks' inputs overlap or leave "
                f"gaps. A block covers TILE_X = {tile} inputs: its first is blockIdx.x * "
                "TILE_X, twice blockDim.x when each thread adds two."
            )
    return None


def half_the_inputs(ctx: hints.Context) -> str | None:
    if not ctx.cmp.bad.any() or ctx.cmp.unwritten.any():
        return None
    values = np.asarray(ctx.inputs["input"], np.float64)
    tile = ctx.sizes["TILE_X"]
    place = np.arange(values.size) % tile
    for share in (2, 4):
        kept = _sums(np.where(place < tile // share, values, 0.0), tile)
        if close(ctx.cmp.got, kept, ctx.tol):
            return (
                f"Each sum covers only the first 1/{share} of its block's {tile} inputs: "
                "each thread must first add the elements it owns (i and i + blockDim.x for "
                "TILE_X = 2 * BLOCK_X), then the tree halves the partial sums down to one."
            )
    return None


LAB = Lab(
    title="Sum reduction, one partial sum per block",
    summary="Block b writes the sum of its TILE_X inputs (default 2*BLOCK_X) to output[b].",
    kernel=KERNEL,
    inputs=(Array("input", lambda s: (s["n"],)),),
    outputs=(Array("output", lambda s: (blocks(s),)),),
    reference=lambda a, s: {"output": _sums(a["input"], s["TILE_X"])},
    extent=lambda s: (s["n"], 1, 1),
    public_cases=PUBLIC,
    hidden_cases=HIDDEN,
    random_sizes=lambda rng: {"n": int(rng.integers(1, 300_000))},
    random_cases=2,
    timing_sizes={"n": 1 << 26},
    work=lambda s: (float(s["n"]), 4.0 * s["n"]),
    dims=1,
    tile=("2 * BLOCK_X", "BLOCK_Y", "BLOCK_Z"),
    limits={"TILE_X": MAX_TILE},
    minimums={"TILE_X": MIN_TILE, "BLOCK_X": MIN_BLOCK},
    forbidden=common.FORBIDDEN,
    requirements=(common.no_library(),),
    # many blocks of full tiles: at n-1000 one block of the reference is a quarter full
    # and its idle lanes hide a divergent tree's
    profile_case="n-100000",
    hints=(
        hints.nothing_written,
        hints.partly_unwritten,
        block_start,
        last_block_only,
        half_the_inputs,
    ),
    scoring=Scoring(target_speedup=0.6, zero_speedup=0.15),
    bound="memory",
    sampler=SAMPLER,
)
