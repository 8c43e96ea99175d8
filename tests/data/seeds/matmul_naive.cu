// From the course notes 004 (matmul_naive.cu); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define BLOCK_WIDTH   16    // 16 x 16 = 256 threads = 8 warps per block

// ---- begin matmulNaiveKernel: 004_e1412f882132601d.txt lines 30-48, verbatim ----
__global__ void matmulNaiveKernel(const float* __restrict__ d_M,
                                  const float* __restrict__ d_N,
                                  float* __restrict__ d_P,
                                  int Width)
{
    // Calculate the row index of the d_P element and d_M
    int Row = blockIdx.y * blockDim.y + threadIdx.y;
    // Calculate the column index of d_P and d_N
    int Col = blockIdx.x * blockDim.x + threadIdx.x;

    if (Row < Width && Col < Width) {
        float Pvalue = 0.0f;
        // each thread computes one element of the block sub-matrix
        for (int k = 0; k < Width; ++k) {
            Pvalue += d_M[Row * Width + k] * d_N[k * Width + Col];
        }
        d_P[Row * Width + Col] = Pvalue;
    }
}
// ---- end matmulNaiveKernel ----
