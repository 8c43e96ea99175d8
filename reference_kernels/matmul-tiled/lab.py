"""Tiled matrix multiply: tiles of M and N staged in shared memory."""

from grader.labs.matmul import matmul_lab
from grader.model.lab import Scoring, TrafficLimit

LAB = matmul_lab(
    "Tiled matrix multiply",
    "Blocks stage tiles of M and N in shared memory and reuse them; any Width works.",
    Scoring(target_speedup=0.6, zero_speedup=0.15),
    # any real tiling (TILE >= 8) reads at most 1/8 of what the naive kernel reads; the
    # naive kernel, and one that adds a shared load it does not need, read all of it
    traffic=TrafficLimit(
        1 / 4,
        "stage tiles of M and N in shared memory and reuse each element TILE times",
    ),
    baseline_breaks=("traffic",),
)
