"""Kernels that the tests of both backends build: the naive matrix multiply, and kernels
whose executed shared loads and atomics both backends count the same: the CPU backend's
census build (tests/cpu/test_rules.py) and the GPU's census module
(tests/gpu/test_cuda_backend.py)."""

NAIVE = """\
__global__ void matmul(const float* M, const float* N, float* P, int Width) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k) sum += M[row * Width + k] * N[k * Width + col];
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
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t = 0; t < (Width + TILE - 1) / TILE; ++t) {
        int mc = t * TILE + tx, nr = t * TILE + ty;
        Ms[ty][tx] = (row < Width && mc < Width) ? M[row * Width + mc] : 0.0f;
        Ns[ty][tx] = (col < Width && nr < Width) ? N[nr * Width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) sum += Ms[ty][k] * Ns[k][tx];
        __syncthreads();
    }
    if (row < Width && col < Width) P[row * Width + col] = sum;
}
"""
# A naive multiply whose only shared load sits in a branch no thread takes, and which
# adds to a counter with an atomic in every thread.
DEAD_SHARED_READ = "__device__ unsigned launched;\n" + NAIVE.replace(
    "{\n    int row",
    """{
    __shared__ float never[32];
    never[threadIdx.x % 32] = 0.0f;
    __syncthreads();
    if (Width < 0) P[0] = never[threadIdx.y % 32];
    atomicAdd(&launched, 1u);
    int row""",
)
