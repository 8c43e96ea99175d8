// From the course notes 003 (tiled_matmul_coarsened.cu); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define TILE_WIDTH   32      // 共享内存 tile 边长
#define THREADS_X    16      // 块内线程 x 维
#define THREADS_Y    16      // 块内线程 y 维（256 线程覆盖 32x32 输出块）
#define COARSE        2      // 每个线程算 COARSE x COARSE 个输出（寄存器 tile）

// ---- begin MatrixMulKernelTiled32: 003_135c59181b1e653f.txt lines 555-576, verbatim ----
__global__ void MatrixMulKernelTiled32(const float* __restrict__ M,
                                       const float* __restrict__ N,
                                       float* __restrict__ P,
                                       int Width)
{
    __shared__ float subTileM[TILE_WIDTH][TILE_WIDTH];
    __shared__ float subTileN[TILE_WIDTH][TILE_WIDTH];
    int bx = blockIdx.x, by = blockIdx.y;
    int tx = threadIdx.x, ty = threadIdx.y;
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;
    float Pvalue = 0.0f;
    for (int m = 0; m < Width / TILE_WIDTH; ++m) {
        subTileM[ty][tx] = M[Row * Width + m * TILE_WIDTH + tx];
        subTileN[ty][tx] = N[(m * TILE_WIDTH + ty) * Width + Col];
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += subTileM[ty][k] * subTileN[k][tx];
        __syncthreads();
    }
    P[Row * Width + Col] = Pvalue;
}
// ---- end MatrixMulKernelTiled32 ----

// ---- begin MatrixMulKernelCoarsened: 003_135c59181b1e653f.txt lines 579-651, verbatim ----
__global__ void __launch_bounds__(THREADS_X * THREADS_Y)
MatrixMulKernelCoarsened(const float* __restrict__ M,
                         const float* __restrict__ N,
                         float* __restrict__ P,
                         int Width)
{
    __shared__ float subTileM[TILE_WIDTH][TILE_WIDTH + 1];   // +1 padding：行步长 33
    __shared__ float subTileN[TILE_WIDTH][TILE_WIDTH + 1];

    const int tx = threadIdx.x;          // 0 .. 15
    const int ty = threadIdx.y;          // 0 .. 15
    const int bx = blockIdx.x;
    const int by = blockIdx.y;

    // 该线程负责的 2x2 寄存器 tile 在 P 中的左上角
    const int rowBase = by * TILE_WIDTH + ty * COARSE;
    const int colBase = bx * TILE_WIDTH + tx * COARSE;

    float acc[COARSE][COARSE];
#pragma unroll
    for (int i = 0; i < COARSE; ++i)
#pragma unroll
        for (int j = 0; j < COARSE; ++j) acc[i][j] = 0.0f;

    const int numTiles = (Width + TILE_WIDTH - 1) / TILE_WIDTH;   // 向上取整，兼容任意尺寸

    for (int m = 0; m < numTiles; ++m) {
        // 协作加载：256 个线程 x 4 个元素 = 1024 = TILE_WIDTH^2，全部合并访存
#pragma unroll
        for (int t = 0; t < (TILE_WIDTH * TILE_WIDTH) / (THREADS_X * THREADS_Y); ++t) {
            const int off   = (ty * THREADS_X + tx) + t * (THREADS_X * THREADS_Y);  // 0..1023
            const int ldRow = off / TILE_WIDTH;      // tile 内的行 0..31
            const int ldCol = off % TILE_WIDTH;      // tile 内的列 0..31

            const int gRowM = by * TILE_WIDTH + ldRow;          // M 的全局行
            const int gColM = m * TILE_WIDTH + ldCol;           // M 的全局列
            const int gRowN = m * TILE_WIDTH + ldRow;           // N 的全局行
            const int gColN = bx * TILE_WIDTH + ldCol;          // N 的全局列

            subTileM[ldRow][ldCol] = (gRowM < Width && gColM < Width)
                                   ? M[gRowM * Width + gColM] : 0.0f;   // 越界填 0
            subTileN[ldRow][ldCol] = (gRowN < Width && gColN < Width)
                                   ? N[gRowN * Width + gColN] : 0.0f;   // 越界填 0
        }
        __syncthreads();                                    // 屏障 1：RAW

#pragma unroll 4
        for (int k = 0; k < TILE_WIDTH; ++k) {
            float mreg[COARSE], nreg[COARSE];
#pragma unroll
            for (int i = 0; i < COARSE; ++i) mreg[i] = subTileM[ty * COARSE + i][k];  // 广播访问
#pragma unroll
            for (int j = 0; j < COARSE; ++j) nreg[j] = subTileN[k][tx * COARSE + j];  // stride-1
#pragma unroll
            for (int i = 0; i < COARSE; ++i)
#pragma unroll
                for (int j = 0; j < COARSE; ++j)
                    acc[i][j] += mreg[i] * nreg[j];         // 4 次 FMA 只用 4 次共享内存读
        }
        __syncthreads();                                    // 屏障 2：WAR
    }

    // 写回：块外的线程只算不用（不写全局内存）
#pragma unroll
    for (int i = 0; i < COARSE; ++i)
#pragma unroll
        for (int j = 0; j < COARSE; ++j) {
            const int row = rowBase + i;
            const int col = colBase + j;
            if (row < Width && col < Width)
                P[row * Width + col] = acc[i][j];
        }
}
// ---- end MatrixMulKernelCoarsened ----
