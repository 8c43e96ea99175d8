"""Inclusive prefix sum of n floats, in three kernels the grader launches in order on the
same buffers:

1. `scan(const float* input, float* output, float* sums, int n)`: block b scans its
   TILE_X inputs (default 2 * BLOCK_X) into `output` and writes its total to sums[b];
2. `scan_sums(float* sums, int m)`: one block scans the m = ceil(n / TILE_X) totals in
   place;
3. `add_sums(float* output, const float* sums, int n)`: block b > 0 adds sums[b - 1] to
   its section.

`sums` is a scratch buffer of m floats the grader allocates. One block must scan m <=
TILE_X totals, so the lab asks for TILE_X >= 1024 and BLOCK_X >= 512: every case has
n <= 1024 * 1024. Element i is held to float32 as a sum of its i + 1 inputs, whatever
the order (grader.judge.compare). TILE_X may be at most MAX_TILE, 1024 threads scanning 64
inputs each."""

from __future__ import annotations

import numpy as np

from grader.judge import hints
from grader.judge.compare import close
from grader.labs import common
from grader.model.lab import Array, Case, Kernel, Lab, Param, Requirement, Role, Sampler, Scoring

MIN_TILE = 1024
MIN_BLOCK = 512
LARGEST = MIN_TILE * MIN_TILE
MAX_TILE = 1 << 16


def blocks(sizes) -> int:
    return max(1, -(-sizes["n"] // sizes["TILE_X"]))


SCAN = Kernel(
    "scan",
    (
        Param("input", "const float*", Role.INPUT),
        Param("output", "float*", Role.OUTPUT),
        Param("sums", "float*", Role.OUTPUT),
        Param("n", "int", Role.SCALAR),
    ),
)
SCAN_SUMS = Kernel(
    "scan_sums",
    (Param("sums", "float*", Role.OUTPUT), Param("m", "int", Role.SCALAR)),
    grid=lambda s: (1, 1, 1),
)
ADD_SUMS = Kernel(
    "add_sums",
    (
        Param("output", "float*", Role.OUTPUT),
        Param("sums", "const float*", Role.INPUT),
        Param("n", "int", Role.SCALAR),
    ),
)


def _case(n: int, visibility: str = "public") -> Case:
    return Case(f"n-{n}", {"n": n}, visibility)


# The largest public case has at least 3 blocks at every TILE_X the lab accepts: with 2,
# scan_sums has nothing to do (add_sums reads only sums[0]), and an empty one would pass.
PUBLIC = (_case(1024), _case(2000), _case(200_003))
# 1 and 517; primes, none a multiple of a block; the largest size the lab allows.
HIDDEN = tuple(_case(n, "hidden") for n in (1, 517, 1031, 7919, 65537, 999983, LARGEST))


def _derive(sizes) -> dict[str, int]:
    return {"m": blocks(sizes)} if "TILE_X" in sizes else {}


# output[i] needs every input up to i, and the last element is always sampled
SAMPLER = Sampler(
    lambda sizes, axes, read: {"input": None},
    lambda sizes, v, axes: {"output": np.cumsum(v["input"])[axes[0]]},
)


def _big_enough(interface, kernel: str) -> str | None:
    block, tile = interface.launch.get("BLOCK_X", 0), interface.launch.get("TILE_X", 0)
    if block >= MIN_BLOCK and tile >= MIN_TILE:
        return None
    return (
        f"This lab needs BLOCK_X >= {MIN_BLOCK} and TILE_X >= {MIN_TILE}, and the file has "
        f"BLOCK_X = {block}, TILE_X = {tile}. scan_sums scans the block totals with one "
        f"block, so TILE_X must cover the {MIN_TILE} totals of the largest case (n = "
        f"{LARGEST}): #define BLOCK_X 512 with two elements per thread (TILE_X = 2 * BLOCK_X, "
        "the default), or BLOCK_X 1024 with TILE_X 1024."
    )


def blocks_not_added(ctx: hints.Context) -> str | None:
    bad, tile = ctx.cmp.bad, ctx.sizes["TILE_X"]
    if not bad.any() or bad[: min(tile, bad.size)].any() or ctx.cmp.unwritten.any():
        return None
    return (
        f"The first block's {tile} elements are right and later ones are wrong: each "
        "block's scan is missing the totals of the blocks before it. scan must write each "
        "block's total to sums[blockIdx.x], scan_sums must scan sums in place, and add_sums "
        "must add sums[blockIdx.x - 1] to every element of block blockIdx.x > 0."
    )


def exclusive(ctx: hints.Context) -> str | None:
    values = np.asarray(ctx.inputs["input"], np.float64)
    if not ctx.cmp.bad.any() or not close(ctx.cmp.got, np.cumsum(values) - values, ctx.tol):
        return None
    return (
        "Element i holds the sum of the elements before i, not up to i: that is an "
        "exclusive scan. This lab asks for the inclusive scan, output[i] = input[0] + ... + "
        "input[i]."
    )


LAB = Lab(
    title="Inclusive scan in three kernels",
    summary="Prefix sums: scan each block, scan the block totals, add them back.",
    kernel=SCAN,
    then=(SCAN_SUMS, ADD_SUMS),
    inputs=(Array("input", lambda s: (s["n"],)),),
    outputs=(Array("output", lambda s: (s["n"],)),),
    scratch=(Array("sums", lambda s: (blocks(s),)),),
    reference=lambda a, s: {"output": np.cumsum(a["input"])},
    extent=lambda s: (s["n"], 1, 1),
    public_cases=PUBLIC,
    hidden_cases=HIDDEN,
    random_sizes=lambda rng: {"n": int(rng.integers(1, LARGEST))},
    random_cases=2,
    timing_sizes={"n": LARGEST},
    work=lambda s: (float(s["n"]), 2.0 * 4 * s["n"]),  # the least: read and write once
    derive=_derive,
    dims=1,
    block=(MIN_BLOCK, 1, 1),
    tile=("2 * BLOCK_X", "BLOCK_Y", "BLOCK_Z"),
    limits={"TILE_X": MAX_TILE},
    requirements=(common.no_library(), Requirement("block_size", _big_enough)),
    forbidden=common.FORBIDDEN,
    hints=(hints.nothing_written, hints.partly_unwritten, exclusive, blocks_not_added),
    scoring=Scoring(target_speedup=0.6, zero_speedup=0.15),
    bound="memory",
    sampler=SAMPLER,
)
