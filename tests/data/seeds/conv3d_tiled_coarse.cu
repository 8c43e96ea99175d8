// From the course notes 000 (conv3d_tiled_coarse.cu); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define MASK_W   5
#define R        (MASK_W / 2)          /* 2 */

#define TX       8                     /* block 的 x 维线程数 */
#define TY       8                     /* block 的 y 维线程数 */
#define TZ       4                     /* block 的 z 维线程数 (仅 z 方向粗化) */
#define COARSE_Z 2                     /* 每个线程计算 COARSE_Z 个相邻 z 输出 */
#define TILE_X   TX
#define TILE_Y   TY
#define TILE_Z   (TZ * COARSE_Z)       /* block 负责的 z 方向输出数 = 8 */
#define SX       (TILE_X + MASK_W - 1) /* 12 */
#define SY       (TILE_Y + MASK_W - 1) /* 12 */
#define SZ       (TILE_Z + MASK_W - 1) /* 12 */
#define PAD      0                     /* 改成 1 则把 Ns 的 x 行长补到 13, 见 bank 分析 */

static __constant__ float Mc3[MASK_W][MASK_W][MASK_W];   /* 125*4 = 500 B << 64 KB */

// ---- begin conv3d_naive_kernel: 000_39a4adad21e6a932.txt lines 585-613, verbatim ----
__global__ void conv3d_naive_kernel(const float * __restrict__ N,
                                    float * __restrict__ P,
                                    int W, int H, int D,
                                    int Ws, int Hs, int Ds, int origin)
{
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    const int oz = blockIdx.z * blockDim.z + threadIdx.z;
    if (ox >= Ws \|\| oy >= Hs \|\| oz >= Ds) return;

    float sum = 0.0f;
    #pragma unroll
    for (int i = 0; i < MASK_W; ++i) {
        const int gz = oz + origin - R + i;
        if (gz < 0 \|\| gz >= D) continue;
        #pragma unroll
        for (int j = 0; j < MASK_W; ++j) {
            const int gy = oy + origin - R + j;
            if (gy < 0 \|\| gy >= H) continue;
            #pragma unroll
            for (int k = 0; k < MASK_W; ++k) {
                const int gx = ox + origin - R + k;
                if (gx < 0 \|\| gx >= W) continue;
                sum += N[(gz * H + gy) * W + gx] * Mc3[i][j][k];
            }
        }
    }
    P[(oz * Hs + oy) * Ws + ox] = sum;
}
// ---- end conv3d_naive_kernel ----

// ---- begin conv3d_tiled_kernel: 000_39a4adad21e6a932.txt lines 616-680, verbatim ----
__global__ void conv3d_tiled_kernel(const float * __restrict__ N,
                                    float * __restrict__ P,
                                    int W, int H, int D,
                                    int Ws, int Hs, int Ds, int origin)
{
#if PAD
    __shared__ float Ns[SZ][SY][SX + 1];          /* 补 1 列, 行长 13 (奇数) */
#else
    __shared__ float Ns[SZ][SY][SX];              /* 12 x 12 x 12 = 6912 B */
#endif

    const int tx = threadIdx.x;                   /* 0..7  */
    const int ty = threadIdx.y;                   /* 0..7  */
    const int tz = threadIdx.z;                   /* 0..3  */
    const int tid = (tz * blockDim.y + ty) * blockDim.x + tx;
    const int nth = blockDim.x * blockDim.y * blockDim.z;   /* 256 */

    /* block 在输入空间中的起点 (origin 决定 centered / Lab 两种约定) */
    const int bx = blockIdx.x * TILE_X + origin - R;
    const int by = blockIdx.y * TILE_Y + origin - R;
    const int bz = blockIdx.z * TILE_Z + origin - R;

    /* 1. 256 个线程协作搬 12*12*12 = 1728 个元素进共享内存 (每线程 6-7 次)
          越界元素补 0 —— 这就是 halo 的 zero padding */
    for (int l = tid; l < SX * SY * SZ; l += nth) {
        const int lx = l % SX;
        const int ly = (l / SX) % SY;
        const int lz = l / (SX * SY);
        const int gx = bx + lx, gy = by + ly, gz = bz + lz;
        float v = 0.0f;
        if (gx >= 0 && gx < W && gy >= 0 && gy < H && gz >= 0 && gz < D)
            v = N[(gz * H + gy) * W + gx];        /* 一维展平索引 */
        Ns[lz][ly][lx] = v;
    }
    __syncthreads();

    /* 2. 每个线程算 COARSE_Z 个 z 方向相邻的输出 */
    float acc[COARSE_Z];
    #pragma unroll
    for (int c = 0; c < COARSE_Z; ++c) acc[c] = 0.0f;

    #pragma unroll
    for (int i = 0; i < MASK_W; ++i) {
        #pragma unroll
        for (int j = 0; j < MASK_W; ++j) {
            #pragma unroll
            for (int k = 0; k < MASK_W; ++k) {
                const float m = Mc3[i][j][k];     /* 1 次常量读 */
                #pragma unroll
                for (int c = 0; c < COARSE_Z; ++c)  /* 喂给 2 个 FMA */
                    acc[c] += Ns[tz * COARSE_Z + c + i][ty + j][tx + k] * m;
            }
        }
    }

    /* 3. 写回 COARSE_Z 个输出 (三维线性化: idx = x + y*Ws + z*Ws*Hs) */
    #pragma unroll
    for (int c = 0; c < COARSE_Z; ++c) {
        const int ox = blockIdx.x * TILE_X + tx;
        const int oy = blockIdx.y * TILE_Y + ty;
        const int oz = blockIdx.z * TILE_Z + tz * COARSE_Z + c;
        if (ox < Ws && oy < Hs && oz < Ds)
            P[(oz * Hs + oy) * Ws + ox] = acc[c];
    }
}
// ---- end conv3d_tiled_kernel ----

// ---- begin conv3d_pitched_naive_kernel: 000_39a4adad21e6a932.txt lines 685-717, verbatim ----
__global__ void conv3d_pitched_naive_kernel(const float * __restrict__ Np,
                                            float * __restrict__ Pp,
                                            size_t pitchNBytes,
                                            size_t pitchPBytes,
                                            int W, int H, int D,
                                            int Ws, int Hs, int Ds, int origin)
{
    const int Wpn = (int)(pitchNBytes / sizeof(float));  /* 输入行内 float 数 >= W  */
    const int Wpp = (int)(pitchPBytes / sizeof(float));  /* 输出行内 float 数 >= Ws */
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = blockIdx.y * blockDim.y + threadIdx.y;
    const int oz = blockIdx.z * blockDim.z + threadIdx.z;
    if (ox >= Ws \|\| oy >= Hs \|\| oz >= Ds) return;

    float sum = 0.0f;
    #pragma unroll
    for (int i = 0; i < MASK_W; ++i) {
        const int gz = oz + origin - R + i;
        if (gz < 0 \|\| gz >= D) continue;
        #pragma unroll
        for (int j = 0; j < MASK_W; ++j) {
            const int gy = oy + origin - R + j;
            if (gy < 0 \|\| gy >= H) continue;
            #pragma unroll
            for (int k = 0; k < MASK_W; ++k) {
                const int gx = ox + origin - R + k;
                if (gx < 0 \|\| gx >= W) continue;
                sum += Np[gz * Wpn * H + gy * Wpn + gx] * Mc3[i][j][k];
            }
        }
    }
    Pp[oz * Wpp * Hs + oy * Wpp + ox] = sum;     /* 输出坐标 oz/oy/ox, 行步长 Wpp */
}
// ---- end conv3d_pitched_naive_kernel ----
