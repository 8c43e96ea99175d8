"""Kernels the GPU tests build, right and wrong, and the launches they get.

A comment `// @name` marks a line that a test expects a diagnostic to name; `line_of`
finds it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from census_kit import NAIVE  # noqa: F401 - the tests' k.NAIVE

from grader.model.launch import POISON_BITS, Buffer, Launch, Scalar, bits_as_float
from grader.model.source import Submission

# The boundary check is missing: at Width 517 the last partial tile writes past P.
NO_BOUNDARY_CHECK = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; k < Width; ++k)
        sum += M[row * Width + k] * N[k * Width + col];
    P[row * Width + col] = sum;
}
"""

# k runs one step too far: the last step reads one row past the end of N.
OUT_OF_BOUNDS_READ = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k <= Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];  // @oob-read
        P[row * Width + col] = sum;
    }
}
"""

TILED = """\
#define TILE 16
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float Ms[TILE][TILE];
    __shared__ float Ns[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < (Width + TILE - 1) / TILE; ++t) {
        int mc = t * TILE + tx, nr = t * TILE + ty;
        Ms[ty][tx] = (row < Width && mc < Width) ? M[row * Width + mc] : 0.0f;  // @load-m
        Ns[ty][tx] = (col < Width && nr < Width) ? N[nr * Width + col] : 0.0f;  // @load-n
        __syncthreads();  // @first-sync
        for (int k = 0; k < TILE; ++k)
            sum += Ms[ty][k] * Ns[k][tx];  // @use
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
"""

# The tiled kernel without the __syncthreads() between loading a tile and using it.
MISSING_SYNC = "\n".join(line for line in TILED.splitlines() if "@first-sync" not in line) + "\n"

INFINITE_LOOP = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    volatile float* out = P;
    while (true)
        out[0] = out[0] + 1.0f;
}
"""

ILLEGAL_ADDRESS = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    float* wild = P + (1ull << 40);
    wild[threadIdx.x] = 1.0f;  // @wild
}
"""

SHARED_FAR_READ = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float tile[16];
    tile[threadIdx.x % 16] = M[threadIdx.x % 16];
    __syncthreads();
    P[threadIdx.x] = tile[threadIdx.x + (1 << 20)];  // @far-read
}
"""

WRONG_SIGNATURE = """\
__global__ void matmul(const float* M, float* P, int Width) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < Width) P[i] = M[i];
}
"""

STATIC_CONSTANT_MASK = """\
static __constant__ float Mc[MASK_WIDTH * MASK_WIDTH];
__global__ void conv2d(const float* N, float* P, int Width, int Height) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (col >= Width || row >= Height) return;
    const int r = MASK_WIDTH / 2;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int y = row - r + i, x = col - r + j;
            if (y >= 0 && y < Height && x >= 0 && x < Width)
                sum += Mc[i * MASK_WIDTH + j] * N[y * Width + x];
        }
    P[row * Width + col] = sum;
}
"""

PRINTF = """\
#include <cstdio>
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    if (threadIdx.x == 0 && threadIdx.y == 0)
        printf("hello from block (%d,%d)\\n", blockIdx.x, blockIdx.y);
}
"""

PRINTF_FLOOD = """\
#include <cstdio>
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    printf("thread %3d of block %3d says something rather long\\n", threadIdx.x, blockIdx.x);
}
"""

# Spins about `SPIN_CYCLES` clock cycles per thread, then does the naive product.
SLOW = "#define SPIN_CYCLES 100000000LL\n" + NAIVE.replace(
    "    if (row < Width && col < Width) {",
    "    long long start = clock64();\n"
    "    while (clock64() - start < SPIN_CYCLES) {}\n"
    "    if (row < Width && col < Width) {",
)

# Even and odd threads of each warp wait at different __syncthreads().
DIVERGENT_BARRIER = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float s[64];
    if (threadIdx.x % 2 == 0) {
        s[threadIdx.x] = M[threadIdx.x];
        __syncthreads();  // @divergent-even
    } else {
        __syncthreads();  // @divergent-odd
        s[threadIdx.x] = M[threadIdx.x];
    }
    P[threadIdx.x] = s[63 - threadIdx.x];
}
"""

# A whole warp skips the barrier and exits (the smoke script logs what synccheck says).
EARLY_EXIT_BARRIER = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float s[64];
    s[threadIdx.x] = M[threadIdx.x];
    if (threadIdx.x < 32)
        __syncthreads();
    P[threadIdx.x] = s[63 - threadIdx.x];
}
"""

# Reads are guarded, the write is not: the last partial tile writes past the end of P.
UNGUARDED_WRITE = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    if (row < Width && col < Width)
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
    P[row * Width + col] = sum;  // @oob-write
}
"""


# Reads one element before the start of N at (0, 0).
READ_BEFORE_START = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width)
        P[row * Width + col] = N[row * Width + col - 1];  // @before-start
}
"""

# Copies M into P: timing tests read back what the GPU drew.
COPY = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width)
        P[row * Width + col] = M[row * Width + col];
}
"""

# The right product plus the number of launches this module saw before: right in the
# first run only, so two runs of a case disagree (a stand-in for a race that is certain).
DRIFTS = """\
// Wrong wherever a bit of the clock it ran at is set, so two runs get different elements
// wrong (a __device__ counter would not: every run starts from the load-time values).
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    long long now = clock64();
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum + (float)((now >> 10) & 1);  // wrong where a bit is set
    }
}
"""


# spmv-csr, right, but each thread zeroes the column of every entry it has read (only it
# reads them): right in one launch, and wrong in the next unless the grader restores the
# structure it uploaded.
CONSUMES_COL_IDX = """\
__global__ void spmv_csr(const int* row_ptr, const int* col_idx, const float* values,
                         const float* x, float* y, int num_rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < num_rows) {
        float sum = 0.0f;
        for (int j = row_ptr[row]; j < row_ptr[row + 1]; ++j) {
            sum += values[j] * x[col_idx[j]];
            ((int*)col_idx)[j] = 0;
        }
        y[row] = sum;
    }
}
"""


def submission(text: str, name: str = "kernel_under_test.cu") -> Submission:
    return Submission(Path(name), text)


def line_of(text: str, marker: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if f"// @{marker}" in line:
            return number
    raise KeyError(marker)


def poisoned(size: int) -> np.ndarray:
    return np.full(size, bits_as_float(POISON_BITS), np.float32)


def matrices(width: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = rng.uniform(-1, 1, width * width).astype(np.float32)
    n = rng.uniform(-1, 1, width * width).astype(np.float32)
    return m, n


def matmul_launch(
    width: int,
    inputs: tuple[np.ndarray, np.ndarray] | None = None,
    block: int = 16,
) -> Launch:
    m, n = inputs if inputs is not None else matrices(width)
    tiles = math.ceil(width / block)
    return Launch(
        kernel="matmul",
        grid=(tiles, tiles, 1),
        block=(block, block, 1),
        shared_bytes=0,
        args=[
            Buffer("M", m, output=False),
            Buffer("N", n, output=False),
            Buffer("P", poisoned(width * width), output=True),
            Scalar("Width", "int", width),
        ],
        constants={},
    )


def expected_product(launch: Launch) -> np.ndarray:
    width = next(a.value for a in launch.args if isinstance(a, Scalar))
    m, n = (b.data.astype(np.float64).reshape(width, width) for b in launch.buffers()[:2])
    return (m @ n).reshape(-1)


UNWRITTEN_SHARED = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    __shared__ float never[256];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum + never[threadIdx.y * 16 + threadIdx.x];
    }
}
"""
