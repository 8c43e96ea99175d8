// From the course notes 004 (transposed layouts); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define BLOCK_WIDTH  16

// ---- begin transposeKernel: 004_e1412f882132601d.txt lines 505-513, verbatim ----
__global__ void transposeKernel(const float* __restrict__ in,
                                float* __restrict__ out, int Width)
{
    const int Row = blockIdx.y * blockDim.y + threadIdx.y;
    const int Col = blockIdx.x * blockDim.x + threadIdx.x;
    if (Row < Width && Col < Width) {
        out[Col * Width + Row] = in[Row * Width + Col];
    }
}
// ---- end transposeKernel ----

// ---- begin matmulNaiveKernel: 004_e1412f882132601d.txt lines 516-529, verbatim ----
__global__ void matmulNaiveKernel(const float* __restrict__ d_M,
                                  const float* __restrict__ d_N,
                                  float* __restrict__ d_P, int Width)
{
    const int Row = blockIdx.y * blockDim.y + threadIdx.y;
    const int Col = blockIdx.x * blockDim.x + threadIdx.x;
    if (Row < Width && Col < Width) {
        float Pvalue = 0.0f;
        for (int k = 0; k < Width; ++k) {
            Pvalue += d_M[Row * Width + k] * d_N[k * Width + Col];
        }
        d_P[Row * Width + Col] = Pvalue;
    }
}
// ---- end matmulNaiveKernel ----

// ---- begin matmulAMTKernel: 004_e1412f882132601d.txt lines 532-545, verbatim ----
__global__ void matmulAMTKernel(const float* __restrict__ d_MT,
                                const float* __restrict__ d_N,
                                float* __restrict__ d_P, int Width)
{
    const int Row = blockIdx.y * blockDim.y + threadIdx.y;
    const int Col = blockIdx.x * blockDim.x + threadIdx.x;
    if (Row < Width && Col < Width) {
        float Pvalue = 0.0f;
        for (int k = 0; k < Width; ++k) {
            Pvalue += d_MT[k * Width + Row] * d_N[k * Width + Col];
        }
        d_P[Row * Width + Col] = Pvalue;
    }
}
// ---- end matmulAMTKernel ----

// ---- begin matmulBTKernel: 004_e1412f882132601d.txt lines 549-562, verbatim ----
__global__ void matmulBTKernel(const float* __restrict__ d_M,
                               const float* __restrict__ d_NT,
                               float* __restrict__ d_P, int Width)
{
    const int Row = blockIdx.y * blockDim.y + threadIdx.y;
    const int Col = blockIdx.x * blockDim.x + threadIdx.x;
    if (Row < Width && Col < Width) {
        float Pvalue = 0.0f;
        for (int k = 0; k < Width; ++k) {
            Pvalue += d_M[Row * Width + k] * d_NT[Col * Width + k];
        }
        d_P[Row * Width + Col] = Pvalue;
    }
}
// ---- end matmulBTKernel ----
