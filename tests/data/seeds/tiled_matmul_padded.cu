// From the course notes 003 (tiled_matmul_padded.cu); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define TILE_WIDTH 32
#define PADDED_STRIDE (TILE_WIDTH + 1)

// ---- begin MatrixMulKernelTransposeNoPad: 003_135c59181b1e653f.txt lines 292-319, verbatim ----
__global__ void MatrixMulKernelTransposeNoPad(const float* __restrict__ M,
                                              const float* __restrict__ N,
                                              float* __restrict__ P,
                                              int Width)
{
    __shared__ float subTileM[TILE_WIDTH][TILE_WIDTH];
    __shared__ float subTileN[TILE_WIDTH][TILE_WIDTH];

    int bx = blockIdx.x;  int by = blockIdx.y;
    int tx = threadIdx.x; int ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;

    for (int m = 0; m < Width / TILE_WIDTH; ++m) {
        // 转置写入：共享内存第 (tx,ty) 个元素保存全局第 (ty,tx) 个元素
        subTileM[tx][ty] = M[Row * Width + m * TILE_WIDTH + tx];
        subTileN[tx][ty] = N[(m * TILE_WIDTH + ty) * Width + Col];
        __syncthreads();

        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += subTileM[k][ty] * subTileN[tx][k];

        __syncthreads();
    }
    P[Row * Width + Col] = Pvalue;
}
// ---- end MatrixMulKernelTransposeNoPad ----

// ---- begin MatrixMulKernelTransposePadStatic: 003_135c59181b1e653f.txt lines 322-348, verbatim ----
__global__ void MatrixMulKernelTransposePadStatic(const float* __restrict__ M,
                                                  const float* __restrict__ N,
                                                  float* __restrict__ P,
                                                  int Width)
{
    __shared__ float subTileM[TILE_WIDTH][PADDED_STRIDE];
    __shared__ float subTileN[TILE_WIDTH][PADDED_STRIDE];

    int bx = blockIdx.x;  int by = blockIdx.y;
    int tx = threadIdx.x; int ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;

    for (int m = 0; m < Width / TILE_WIDTH; ++m) {
        subTileM[tx][ty] = M[Row * Width + m * TILE_WIDTH + tx];
        subTileN[tx][ty] = N[(m * TILE_WIDTH + ty) * Width + Col];
        __syncthreads();

        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += subTileM[k][ty] * subTileN[tx][k];

        __syncthreads();
    }
    P[Row * Width + Col] = Pvalue;
}
// ---- end MatrixMulKernelTransposePadStatic ----

// ---- begin MatrixMulKernelTransposePadDynamic: 003_135c59181b1e653f.txt lines 351-379, verbatim ----
__global__ void MatrixMulKernelTransposePadDynamic(const float* __restrict__ M,
                                                   const float* __restrict__ N,
                                                   float* __restrict__ P,
                                                   int Width)
{
    extern __shared__ float dynShared[];
    float (*subTileM)[PADDED_STRIDE] = reinterpret_cast<float (*)[PADDED_STRIDE]>(dynShared);
    float (*subTileN)[PADDED_STRIDE] =
        reinterpret_cast<float (*)[PADDED_STRIDE]>(dynShared + TILE_WIDTH * PADDED_STRIDE);

    int bx = blockIdx.x;  int by = blockIdx.y;
    int tx = threadIdx.x; int ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    float Pvalue = 0.0f;

    for (int m = 0; m < Width / TILE_WIDTH; ++m) {
        subTileM[tx][ty] = M[Row * Width + m * TILE_WIDTH + tx];
        subTileN[tx][ty] = N[(m * TILE_WIDTH + ty) * Width + Col];
        __syncthreads();

        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += subTileM[k][ty] * subTileN[tx][k];

        __syncthreads();
    }
    P[Row * Width + Col] = Pvalue;
}
// ---- end MatrixMulKernelTransposePadDynamic ----
