"""Tiled matrix multiply: tiles of M and N staged in shared memory."""

from grader.labs import common
from grader.labs.matmul import matmul_lab
from grader.model.lab import Scoring

LAB = matmul_lab(
    "Tiled matrix multiply",
    "Blocks stage tiles of M and N in shared memory and reuse them; any Width works.",
    Scoring(target_speedup=0.6, zero_speedup=0.15),
    requirements=(common.shared_memory(),),
)
