// From the course notes 003 (tiled_matmul_basic.cu); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define TILE_WIDTH 16

// ---- begin MatrixMulKernelNaive: 003_135c59181b1e653f.txt lines 70-83, verbatim ----
__global__ void MatrixMulKernelNaive(const float* __restrict__ M,
                                     const float* __restrict__ N,
                                     float* __restrict__ P,
                                     int Width)
{
    int Row = blockIdx.y * blockDim.y + threadIdx.y;
    int Col = blockIdx.x * blockDim.x + threadIdx.x;
    if ((Row < Width) && (Col < Width)) {
        float Pvalue = 0.0f;
        for (int k = 0; k < Width; ++k)
            Pvalue += M[Row * Width + k] * N[k * Width + Col];
        P[Row * Width + Col] = Pvalue;
    }
}
// ---- end MatrixMulKernelNaive ----

// ---- begin MatrixMulKernelTiled: 003_135c59181b1e653f.txt lines 86-117, verbatim ----
__global__ void MatrixMulKernelTiled(const float* __restrict__ M,
                                     const float* __restrict__ N,
                                     float* __restrict__ P,
                                     int Width)
{
    __shared__ float subTileM[TILE_WIDTH][TILE_WIDTH];
    __shared__ float subTileN[TILE_WIDTH][TILE_WIDTH];

    int bx = blockIdx.x;   int by = blockIdx.y;
    int tx = threadIdx.x;  int ty = threadIdx.y;

    // 该线程负责的 P 元素的行列（blockDim.x 与 blockDim.y 都等于 TILE_WIDTH）
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;

    // 遍历计算该输出元素所需的全部 M/N tile（假定 Width 是 TILE_WIDTH 的整数倍）
    for (int m = 0; m < Width / TILE_WIDTH; ++m) {
        // 协作加载：每个线程搬 1 个 M 元素和 1 个 N 元素
        subTileM[ty][tx] = M[Row * Width + m * TILE_WIDTH + tx];
        subTileN[ty][tx] = N[(m * TILE_WIDTH + ty) * Width + Col];
        __syncthreads();                       // 屏障 1：确保 tile 已全部写满

        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += subTileM[ty][k] * subTileN[k][tx];

        __syncthreads();                       // 屏障 2：确保旧 tile 已被读完
    }

    P[Row * Width + Col] = Pvalue;
}
// ---- end MatrixMulKernelTiled ----
