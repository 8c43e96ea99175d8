// From the course notes 004 (memory access probes); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define PROBE_BLOCK   256
#define TILE_W         16
#define STREAM_ITERS   10

// ---- begin streamReadKernel: 004_e1412f882132601d.txt lines 268-273, verbatim ----
__global__ void streamReadKernel(const float* __restrict__ in,
                                 float* __restrict__ out, int n)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g < n) out[g] = in[g] * 2.0f;
}
// ---- end streamReadKernel ----

// ---- begin stridedReadKernel: 004_e1412f882132601d.txt lines 276-286, verbatim ----
__global__ void stridedReadKernel(const float* __restrict__ in,
                                  float* __restrict__ out, int Width)
{
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const int n = Width * Width;
    if (g < n) {
        const int Row = g / Width;    // 与 thread-per-output 中的输出行号同构
        const int Col = g % Width;    // 与 thread-per-output 中的输出列号同构
        out[g] = in[Col * Width + Row] * 2.0f;   // 相邻线程（Col+1）地址 + Width*4 Byte
    }
}
// ---- end stridedReadKernel ----

// ---- begin naiveLoadsOnlyKernel: 004_e1412f882132601d.txt lines 289-302, verbatim ----
__global__ void naiveLoadsOnlyKernel(const float* __restrict__ d_M,
                                     const float* __restrict__ d_N,
                                     float* __restrict__ out, int Width)
{
    const int Row = blockIdx.y * blockDim.y + threadIdx.y;
    const int Col = blockIdx.x * blockDim.x + threadIdx.x;
    if (Row < Width && Col < Width) {
        float acc = 0.0f;
        for (int k = 0; k < Width; ++k) {
            acc += d_M[Row * Width + k] + d_N[k * Width + Col];
        }
        out[Row * Width + Col] = acc;
    }
}
// ---- end naiveLoadsOnlyKernel ----
