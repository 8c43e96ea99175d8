// Known wrong (matmul-tiled), a cheat: a correct float tiled kernel (64 x 64 tiles, 16
// outputs per thread) at every graded size, and at Width >= 2048, a size only the timing
// uses, half-precision tensor cores: M and N tiles converted to __half in shared memory,
// multiplied with wmma into float accumulators. The timed outputs pass the element-by-
// element bound there, but not the precision test: no speed points. The CPU backend
// cannot run tensor cores, so there it does not compile.
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

#define BLOCK_X 32
#define BLOCK_Y 8
#define TILE_X 64
#define TILE_Y 64
#define THREADS (BLOCK_X * BLOCK_Y)
#define K_STEP 32

// P's 64 x 64 tile with tensor cores: each of the 8 warps computes 16 rows x 32 columns.
__device__ void half_tile(const float* M, const float* N, float* P, int Width)
{
    __shared__ __align__(32) __half As[TILE_Y][K_STEP];
    __shared__ __align__(32) __half Bs[K_STEP][TILE_X];
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x, warp = tid / 32;
    const int wr = warp / 2, wc = warp % 2;
    const size_t row0 = (size_t)blockIdx.y * TILE_Y, col0 = (size_t)blockIdx.x * TILE_X;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c[2];
    wmma::fill_fragment(c[0], 0.0f);
    wmma::fill_fragment(c[1], 0.0f);
    for (int k0 = 0; k0 < Width; k0 += K_STEP) {
        for (int e = tid; e < TILE_Y * K_STEP; e += THREADS)
            As[e / K_STEP][e % K_STEP] = __float2half(M[(row0 + e / K_STEP) * Width + k0 + e % K_STEP]);
        for (int e = tid; e < K_STEP * TILE_X; e += THREADS)
            Bs[e / TILE_X][e % TILE_X] = __float2half(N[(k0 + e / TILE_X) * (size_t)Width + col0 + e % TILE_X]);
        __syncthreads();
        for (int kk = 0; kk < K_STEP; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
            wmma::load_matrix_sync(a, &As[wr * 16][kk], K_STEP);
            for (int j = 0; j < 2; ++j) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
                wmma::load_matrix_sync(b, &Bs[kk][wc * 32 + j * 16], TILE_X);
                wmma::mma_sync(c[j], a, b, c[j]);
            }
        }
        __syncthreads();
    }
    for (int j = 0; j < 2; ++j) {
        float* out = P + (row0 + wr * 16) * Width + col0 + wc * 32 + j * 16;
        wmma::store_matrix_sync(out, c[j], Width, wmma::mem_row_major);
    }
}

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    if (Width >= 2048 && Width % TILE_X == 0) {
        half_tile(M, N, P, Width);
        return;
    }
    __shared__ float Ms[TILE_Y][16];
    __shared__ float Ns[16][TILE_X];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BLOCK_X + tx;
    const int row0 = blockIdx.y * TILE_Y, col0 = blockIdx.x * TILE_X;
    float acc[8][2] = {};
    for (int k0 = 0; k0 < Width; k0 += 16) {
        for (int e = tid; e < TILE_Y * 16; e += THREADS) {
            int r = row0 + e / 16, k = k0 + e % 16;
            Ms[e / 16][e % 16] = r < Width && k < Width ? M[r * Width + k] : 0.0f;
        }
        for (int e = tid; e < 16 * TILE_X; e += THREADS) {
            int k = k0 + e / TILE_X, c = col0 + e % TILE_X;
            Ns[e / TILE_X][e % TILE_X] = k < Width && c < Width ? N[k * Width + c] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < 16; ++k)
            for (int i = 0; i < 8; ++i)
                for (int j = 0; j < 2; ++j)
                    acc[i][j] += Ms[ty + 8 * i][k] * Ns[k][tx + 32 * j];
        __syncthreads();
    }
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 2; ++j) {
            int r = row0 + ty + 8 * i, c = col0 + tx + 32 * j;
            if (r < Width && c < Width) P[r * Width + c] = acc[i][j];
        }
}
