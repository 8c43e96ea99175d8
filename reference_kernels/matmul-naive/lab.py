"""Simple matrix multiply: one thread per element of P, from global memory."""

from grader.labs.matmul import matmul_lab
from grader.model.lab import Scoring

LAB = matmul_lab(
    "Simple matrix multiply",
    "One thread computes one element of P = M N from global memory.",
    Scoring(target_speedup=0.9, zero_speedup=0.3),
)
