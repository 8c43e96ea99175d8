// matmul-tiled reference: a 128 x 128 tile of P per block of 16 x 16 threads, each
// thread computing 8 x 8 elements from registers (BLOCK 16x16, TILE 128x128).
//
//  - The k loop walks TILE_K = 8 columns of M (rows of N) at a time. The tile of M is
//    stored transposed in shared memory (As[k][row]) so that a thread reads its 8 values
//    of M for one k as two float4; N's tile is stored as is (Bs[k][col]).
//  - Two shared buffers: the next tiles are fetched from global memory into registers
//    while the current ones are used, so there is one __syncthreads() per k step.
//  - A thread's 8 rows are two groups of 4 rows 64 apart (and the same for columns), so
//    a warp's shared reads and its float4 stores to P are contiguous.
//  - float4 global loads and stores when Width % 4 == 0 and the buffers are 16-byte
//    aligned; a scalar path otherwise. Loads past the edge of M or N read 0 and stores
//    past the edge of P are skipped, so any Width >= 1 works; those checks are a couple
//    of compares per 512 multiply-adds, so interior tiles do not need a separate path.
// The launch grid is ceil(Width / 128) blocks on each axis.

#ifndef BLOCK_X
#define BLOCK_X 16
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 16
#endif
#ifndef TILE_X
#define TILE_X 128
#endif
#ifndef TILE_Y
#define TILE_Y 128
#endif
#ifndef TILE_K
#define TILE_K 8
#endif
#ifndef MM_MIN_BLOCKS
#define MM_MIN_BLOCKS 2
#endif

#define MM_THREADS (BLOCK_X * BLOCK_Y)
#define MM_TM (TILE_Y / BLOCK_Y)  // rows of P per thread
#define MM_TN (TILE_X / BLOCK_X)  // columns of P per thread
#define MM_APAD 4                  // keeps As rows 16-byte aligned, spreads the transposed stores
#define MM_AVEC (TILE_Y * TILE_K / 4)
#define MM_BVEC (TILE_K * TILE_X / 4)
#define MM_ALOADS ((MM_AVEC + MM_THREADS - 1) / MM_THREADS)
#define MM_BLOADS ((MM_BVEC + MM_THREADS - 1) / MM_THREADS)

static_assert(TILE_X % (4 * BLOCK_X) == 0 && TILE_Y % (4 * BLOCK_Y) == 0,
              "each thread owns groups of 4 rows and 4 columns");
static_assert(TILE_K % 4 == 0, "M is fetched 4 columns at a time");

static __device__ __forceinline__ float mm_at(const float* __restrict__ A, int r, int c,
                                              int Width)
{
    return (r < Width && c < Width) ? __ldg(A + (size_t)r * Width + c) : 0.0f;
}

// Four consecutive elements A[r][c..c+3], 0 past the edge. With vec, Width % 4 == 0 and
// c % 4 == 0, so the four are either all inside or all outside.
static __device__ __forceinline__ float4 mm_load4(const float* __restrict__ A, int r, int c,
                                                  int Width, const bool vec)
{
    if (vec)
        return (r < Width && c < Width)
                   ? __ldg(reinterpret_cast<const float4*>(A + (size_t)r * Width + c))
                   : make_float4(0.f, 0.f, 0.f, 0.f);
    return make_float4(mm_at(A, r, c, Width), mm_at(A, r, c + 1, Width),
                       mm_at(A, r, c + 2, Width), mm_at(A, r, c + 3, Width));
}

// Global -> registers: the tile of M (rows row0.., columns k0..) and of N (rows k0..,
// columns col0..).
static __device__ __forceinline__ void mm_fetch(const float* __restrict__ M,
                                                const float* __restrict__ N, int Width,
                                                int row0, int col0, int k0, int tid,
                                                const bool vec, float4 (&ra)[MM_ALOADS],
                                                float4 (&rb)[MM_BLOADS])
{
#pragma unroll
    for (int i = 0; i < MM_ALOADS; ++i) {
        const int f = tid + i * MM_THREADS;
        if (MM_AVEC % MM_THREADS == 0 || f < MM_AVEC)
            ra[i] = mm_load4(M, row0 + f / (TILE_K / 4), k0 + (f % (TILE_K / 4)) * 4, Width, vec);
    }
#pragma unroll
    for (int i = 0; i < MM_BLOADS; ++i) {
        const int f = tid + i * MM_THREADS;
        if (MM_BVEC % MM_THREADS == 0 || f < MM_BVEC)
            rb[i] = mm_load4(N, k0 + f / (TILE_X / 4), col0 + (f % (TILE_X / 4)) * 4, Width, vec);
    }
}

// Registers -> one shared buffer; M's tile goes in transposed.
static __device__ __forceinline__ void mm_stash(float (*as)[TILE_Y + MM_APAD],
                                                float (*bs)[TILE_X], int tid,
                                                const float4 (&ra)[MM_ALOADS],
                                                const float4 (&rb)[MM_BLOADS])
{
#pragma unroll
    for (int i = 0; i < MM_ALOADS; ++i) {
        const int f = tid + i * MM_THREADS;
        if (MM_AVEC % MM_THREADS == 0 || f < MM_AVEC) {
            const int r = f / (TILE_K / 4), c = (f % (TILE_K / 4)) * 4;
            as[c + 0][r] = ra[i].x;
            as[c + 1][r] = ra[i].y;
            as[c + 2][r] = ra[i].z;
            as[c + 3][r] = ra[i].w;
        }
    }
#pragma unroll
    for (int i = 0; i < MM_BLOADS; ++i) {
        const int f = tid + i * MM_THREADS;
        if (MM_BVEC % MM_THREADS == 0 || f < MM_BVEC) {
            const int r = f / (TILE_X / 4), c = (f % (TILE_X / 4)) * 4;
            *reinterpret_cast<float4*>(&bs[r][c]) = rb[i];
        }
    }
}

static __device__ __forceinline__ void mm_body(const float* __restrict__ M,
                                               const float* __restrict__ N,
                                               float* __restrict__ P, int Width,
                                               const bool vec)
{
    __shared__ __align__(16) float As[2][TILE_K][TILE_Y + MM_APAD];
    __shared__ __align__(16) float Bs[2][TILE_K][TILE_X];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * BLOCK_X + tx;
    const int row0 = blockIdx.y * TILE_Y;
    const int col0 = blockIdx.x * TILE_X;

    float acc[MM_TM][MM_TN];
#pragma unroll
    for (int i = 0; i < MM_TM; ++i)
#pragma unroll
        for (int j = 0; j < MM_TN; ++j) acc[i][j] = 0.0f;

    float4 ra[MM_ALOADS], rb[MM_BLOADS];
    const int tiles = (Width + TILE_K - 1) / TILE_K;
    mm_fetch(M, N, Width, row0, col0, 0, tid, vec, ra, rb);
    mm_stash(As[0], Bs[0], tid, ra, rb);
    __syncthreads();

    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        const bool more = t + 1 < tiles;
        if (more)  // the next tiles are in flight while this one is used
            mm_fetch(M, N, Width, row0, col0, (t + 1) * TILE_K, tid, vec, ra, rb);

#pragma unroll
        for (int kk = 0; kk < TILE_K; ++kk) {
            float a[MM_TM], b[MM_TN];
#pragma unroll
            for (int i = 0; i < MM_TM / 4; ++i) {
                const float4 v =
                    *reinterpret_cast<const float4*>(&As[cur][kk][i * BLOCK_Y * 4 + ty * 4]);
                a[4 * i + 0] = v.x; a[4 * i + 1] = v.y; a[4 * i + 2] = v.z; a[4 * i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < MM_TN / 4; ++j) {
                const float4 v =
                    *reinterpret_cast<const float4*>(&Bs[cur][kk][j * BLOCK_X * 4 + tx * 4]);
                b[4 * j + 0] = v.x; b[4 * j + 1] = v.y; b[4 * j + 2] = v.z; b[4 * j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < MM_TM; ++i)
#pragma unroll
                for (int j = 0; j < MM_TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }

        // The other buffer was last read before the previous barrier, so it is free.
        if (more) mm_stash(As[cur ^ 1], Bs[cur ^ 1], tid, ra, rb);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < MM_TM; ++i) {
        const int r = row0 + (i / 4) * BLOCK_Y * 4 + ty * 4 + (i % 4);
        if (r >= Width) continue;
        float* prow = P + (size_t)r * Width;
#pragma unroll
        for (int j4 = 0; j4 < MM_TN / 4; ++j4) {
            const int c = col0 + j4 * BLOCK_X * 4 + tx * 4;
            if (vec) {
                if (c < Width)  // Width % 4 == 0: the whole float4 is inside
                    *reinterpret_cast<float4*>(prow + c) =
                        make_float4(acc[i][4 * j4], acc[i][4 * j4 + 1], acc[i][4 * j4 + 2],
                                    acc[i][4 * j4 + 3]);
            } else {
#pragma unroll
                for (int jj = 0; jj < 4; ++jj)
                    if (c + jj < Width) prow[c + jj] = acc[i][4 * j4 + jj];
            }
        }
    }
}

__global__ void __launch_bounds__(MM_THREADS, MM_MIN_BLOCKS)
matmul(const float* __restrict__ M, const float* __restrict__ N, float* __restrict__ P,
       int Width)
{
    const bool vec = (Width & 3) == 0 && (((size_t)M | (size_t)N | (size_t)P) & 15) == 0;
    if (vec)
        mm_body(M, N, P, Width, true);
    else
        mm_body(M, N, P, Width, false);
}
