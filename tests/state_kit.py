"""A module whose kernels keep state in __device__ variables, and launches of it: the CPU
and the GPU backends' tests check that both keep it alike. The kernels of one launch
share the variables, in order; every launch starts from the values the module loaded
with."""

from __future__ import annotations

import numpy as np

from grader.model.launch import Buffer, Launch

SLOTS = 8
SOURCE = """\
__device__ float handed;
__device__ unsigned int calls = 5;

__global__ void store(float* out) { handed = 7.0f; out[0] = 1.0f; }
__global__ void fetch(float* out) { out[1] = handed; }

// Each launch writes the count it finds at that element: from the initialiser, 5, up.
__global__ void count(float* out) {
    unsigned int c = atomicAdd(&calls, 1);
    if (c < 8) out[c] = (float)c;
}
"""
# The same with the counter in managed memory, which the host may address too.
MANAGED = SOURCE.replace("__device__ unsigned int calls", "__managed__ unsigned int calls")
SOURCES = {"device": SOURCE, "managed": MANAGED}


def launch(*kernels: str) -> Launch:
    """`kernels` launched in order, one thread each, on one output of SLOTS NaNs."""
    out = Buffer("out", np.full(SLOTS, np.nan, np.float32), True)
    steps = [Launch(k, (1, 1, 1), (1, 1, 1), 0, [out], {}) for k in kernels]
    steps[0].then = steps[1:]
    return steps[0]


def written(values: dict[int, float]) -> np.ndarray:
    """The output with `values` at their elements and NaN elsewhere."""
    expected = np.full(SLOTS, np.nan, np.float32)
    for index, value in values.items():
        expected[index] = value
    return expected


HANDED = written({0: 1.0, 1: 7.0})  # launch("store", "fetch")
COUNTED = written({5: 5.0, 6: 6.0, 7: 7.0})  # launch("count", "count", "count")
