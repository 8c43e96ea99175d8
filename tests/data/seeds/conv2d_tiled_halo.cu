// From the course notes 000 (conv2d_tiled_halo.cu); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define TILE_WIDTH   16
#define MASK_WIDTH   5
#define MASK_RADIUS  (MASK_WIDTH / 2)
#define IN_TILE      (TILE_WIDTH + MASK_WIDTH - 1)   /* 20: 输入 tile 的一边 */
#define COARSE       2                               /* 粗化: 每线程 2x2 个输出 */

static __constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

// ---- begin conv2d_naive_kernel: 000_39a4adad21e6a932.txt lines 263-284, verbatim ----
__global__ void conv2d_naive_kernel(const float * __restrict__ N,
                                    float * __restrict__ P,
                                    int Width, int Height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= Height || col >= Width) return;

    float Pvalue = 0.0f;
    #pragma unroll
    for (int i = 0; i < MASK_WIDTH; ++i) {
        int nrow = row - MASK_RADIUS + i;
        if (nrow < 0 || nrow >= Height) continue;
        #pragma unroll
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int ncol = col - MASK_RADIUS + j;
            if (ncol < 0 || ncol >= Width) continue;
            Pvalue += N[nrow * Width + ncol] * Mc[i * MASK_WIDTH + j];
        }
    }
    P[row * Width + col] = Pvalue;
}
// ---- end conv2d_naive_kernel ----

// ---- begin conv2d_tiled_kernel: 000_39a4adad21e6a932.txt lines 287-322, verbatim ----
__global__ void conv2d_tiled_kernel(const float * __restrict__ N,
                                    float * __restrict__ P,
                                    int Width, int Height)
{
    __shared__ float Ns[IN_TILE][IN_TILE];        /* 20 x 20 = 400 float = 1600 B */

    const int tx = threadIdx.x;                   /* 0..19 */
    const int ty = threadIdx.y;                   /* 0..19 */

    /* 该线程负责的输入坐标 (block 的左上角是输出瓦片左上角再向左上各推 radius) */
    const int row_i = blockIdx.y * TILE_WIDTH - MASK_RADIUS + ty;
    const int col_i = blockIdx.x * TILE_WIDTH - MASK_RADIUS + tx;

    /* 1. 协作加载 (TILE+2r)^2 个元素, 越界元素一律填 0 (zero padding) */
    float v = 0.0f;
    if (row_i >= 0 && row_i < Height && col_i >= 0 && col_i < Width)
        v = N[row_i * Width + col_i];
    Ns[ty][tx] = v;                               /* 分支之外: 所有线程都参与 */

    __syncthreads();                              /* 等整块 tile 就绪, 必须在分支外 */

    /* 2. 前 TILE x TILE 个线程各算一个输出 (计算阶段无任何分支) */
    if (ty < TILE_WIDTH && tx < TILE_WIDTH) {
        const int row_o = blockIdx.y * TILE_WIDTH + ty;
        const int col_o = blockIdx.x * TILE_WIDTH + tx;
        if (row_o < Height && col_o < Width) {
            float Pvalue = 0.0f;
            #pragma unroll
            for (int i = 0; i < MASK_WIDTH; ++i)
                #pragma unroll
                for (int j = 0; j < MASK_WIDTH; ++j)
                    Pvalue += Ns[ty + i][tx + j] * Mc[i * MASK_WIDTH + j];
            P[row_o * Width + col_o] = Pvalue;
        }
    }
}
// ---- end conv2d_tiled_kernel ----

// ---- begin conv2d_tiled_coarse_kernel: 000_39a4adad21e6a932.txt lines 325-386, verbatim ----
__global__ void conv2d_tiled_coarse_kernel(const float * __restrict__ N,
                                           float * __restrict__ P,
                                           int Width, int Height)
{
    __shared__ float Ns[IN_TILE][IN_TILE];

    const int tx  = threadIdx.x;                  /* 0..7 */
    const int ty  = threadIdx.y;                  /* 0..7 */
    const int tid = ty * blockDim.x + tx;         /* 0..63 */
    const int nth = blockDim.x * blockDim.y;      /* 64 */

    const int row_b = blockIdx.y * TILE_WIDTH - MASK_RADIUS;
    const int col_b = blockIdx.x * TILE_WIDTH - MASK_RADIUS;

    /* 1. 64 个线程协作搬 400 个元素 (每个线程 6-7 次, 循环步长 = 线程数) */
    for (int l = tid; l < IN_TILE * IN_TILE; l += nth) {
        const int ly = l / IN_TILE;
        const int lx = l - ly * IN_TILE;
        const int gr = row_b + ly;
        const int gc = col_b + lx;
        float v = 0.0f;
        if (gr >= 0 && gr < Height && gc >= 0 && gc < Width)
            v = N[gr * Width + gc];
        Ns[ly][lx] = v;
    }
    __syncthreads();

    /* 2. 每个线程算 2x2 个输出, 4 个累加器常驻寄存器 */
    float acc[COARSE][COARSE];
    #pragma unroll
    for (int dy = 0; dy < COARSE; ++dy)
        #pragma unroll
        for (int dx = 0; dx < COARSE; ++dx)
            acc[dy][dx] = 0.0f;

    const int oy0 = ty * COARSE;                  /* tile 内的局部输出行 */
    const int ox0 = tx * COARSE;                  /* tile 内的局部输出列 */

    #pragma unroll
    for (int i = 0; i < MASK_WIDTH; ++i) {
        #pragma unroll
        for (int j = 0; j < MASK_WIDTH; ++j) {
            const float m = Mc[i * MASK_WIDTH + j];   /* 1 次常量读喂 4 个 FMA */
            #pragma unroll
            for (int dy = 0; dy < COARSE; ++dy)
                #pragma unroll
                for (int dx = 0; dx < COARSE; ++dx)
                    acc[dy][dx] += Ns[oy0 + dy + i][ox0 + dx + j] * m;
        }
    }

    #pragma unroll
    for (int dy = 0; dy < COARSE; ++dy) {
        #pragma unroll
        for (int dx = 0; dx < COARSE; ++dx) {
            const int row_o = blockIdx.y * TILE_WIDTH + oy0 + dy;
            const int col_o = blockIdx.x * TILE_WIDTH + ox0 + dx;
            if (row_o < Height && col_o < Width)
                P[row_o * Width + col_o] = acc[dy][dx];
        }
    }
}
// ---- end conv2d_tiled_coarse_kernel ----
