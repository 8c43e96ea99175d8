// conv3d-pitched reference: conv3d over rows padded to a pitch in bytes, which differs
// between N (pitchN) and P (pitchP). Row y of plane z of N starts at byte
// (z * H + y) * pitchN, of P at (z * H + y) * pitchP. Otherwise the same kernel as
// conv3d. Compute-bound at mask 5 (125 multiply-adds per output), so the
// goal is to keep the FMA units busy: few shared-memory reads per FMA, the mask in
// constant memory at compile-time addresses, and no bounds checks in the inner loops.
//
//  - A block of 32 x 8 threads owns a 32 x 32 x 32 tile of P (BLOCK 32x8x1,
//    TILE 32x32x32) and marches through it along z, one input plane at a time.
//  - Shared memory holds the current input plane with its halo (36 x 36 at mask 5) and
//    the next one, which is fetched into registers while the current one is used: one
//    __syncthreads() per plane. Planes whose halo is inside the volume load without
//    checks; edge tiles load 0 for ghost cells. Ghost planes (z < 0 or z >= D) are
//    skipped: they add nothing.
//  - Each thread computes 4 consecutive rows (y) of one column (x) for MASK_WIDTH output
//    planes at once: register blocking along y and z. Input plane zi contributes to
//    output planes zi - R .. zi + R, so the thread keeps MASK_WIDTH x 4 accumulators; a
//    row of input it has read into registers (MASK_WIDTH values) feeds up to
//    MASK_WIDTH^2 x 4 of its FMAs. After plane zi, output plane zi - R is complete: it is
//    stored and the accumulators shift by one plane.
//  - Per plane and thread: 8 x 5 shared reads and 500 FMAs at mask 5, and the mask
//    index of every FMA is a compile-time constant.
// Every W, H, D >= 1 works: stores outside the volume are skipped.

#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];  // [z][y][x]

#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
#ifndef BLOCK_Z
#define BLOCK_Z 1
#endif
#ifndef TILE_X
#define TILE_X BLOCK_X
#endif
#ifndef TILE_Y
#define TILE_Y 32
#endif
#ifndef TILE_Z
#define TILE_Z 32
#endif
#ifndef C3_MIN_BLOCKS
// The compiler keeps much of the mask in registers across the plane loop (about 120
// registers at mask 5). Two blocks per SM fit that without spills; mask 7 needs more
// registers than that allows and is only ever checked, never timed.
#define C3_MIN_BLOCKS (MASK_WIDTH > 5 ? 1 : 2)
#endif

#define C3_THREADS (BLOCK_X * BLOCK_Y)
#define C3_CY (TILE_Y / BLOCK_Y)          // consecutive rows per thread
#define C3_PW (TILE_X + MASK_WIDTH - 1)   // one input plane of the tile, halo included
#define C3_PH (TILE_Y + MASK_WIDTH - 1)
#define C3_PLANE (C3_PW * C3_PH)
#define C3_LOADS ((C3_PLANE + C3_THREADS - 1) / C3_THREADS)

static_assert(BLOCK_Z == 1 && TILE_X == BLOCK_X && TILE_Y % BLOCK_Y == 0,
              "one thread per column, TILE_Y / BLOCK_Y rows each, marching along z");

// Plane z of the input tile -> registers; 0 for ghost cells outside the volume.
static __device__ __forceinline__ void c3_fetch(const float* __restrict__ N, int sN, int W,
                                                int H, int z, int gx0, int gy0, bool inside,
                                                int tid, float (&v)[C3_LOADS])
{
    const float* base = N + (size_t)z * H * sN;
#pragma unroll
    for (int i = 0; i < C3_LOADS; ++i) {
        const int l = tid + i * C3_THREADS;
        if (C3_PLANE % C3_THREADS == 0 || l < C3_PLANE) {
            const int gy = gy0 + l / C3_PW, gx = gx0 + l % C3_PW;
            v[i] = (inside || (gy >= 0 && gy < H && gx >= 0 && gx < W))
                       ? __ldg(base + gy * sN + gx)
                       : 0.0f;
        }
    }
}

__global__ void __launch_bounds__(C3_THREADS, C3_MIN_BLOCKS)
conv3d_pitched(const float* __restrict__ N, float* __restrict__ P, size_t pitchN,
               size_t pitchP, int W, int H, int D)
{
    // Row strides in floats. Pitches are byte counts; rows of floats make them multiples
    // of 4.
    const int sN = (int)(pitchN / sizeof(float));
    const int sP = (int)(pitchP / sizeof(float));
    __shared__ float plane[2][C3_PH][C3_PW];
    float* flat0 = &plane[0][0][0];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * BLOCK_X + tx;
    const int x0 = blockIdx.x * TILE_X, y0 = blockIdx.y * TILE_Y, z0 = blockIdx.z * TILE_Z;
    const int gx0 = x0 - MASK_RADIUS, gy0 = y0 - MASK_RADIUS;
    const bool inside = gx0 >= 0 && gy0 >= 0 && gx0 + C3_PW <= W && gy0 + C3_PH <= H;

    const int zend = min(z0 + TILE_Z, D);    // this block stores planes z0 .. zend-1
    const int zfirst = max(z0 - MASK_RADIUS, 0);
    const int zlast = zend - 1 + MASK_RADIUS;  // planes past D are ghosts: no work

    const int ox = x0 + tx, oy = y0 + ty * C3_CY;
    const bool store_x = ox < W;

    // acc[s][cy]: output plane zi - R + s while input plane zi is processed.
    float acc[MASK_WIDTH][C3_CY];
#pragma unroll
    for (int s = 0; s < MASK_WIDTH; ++s)
#pragma unroll
        for (int cy = 0; cy < C3_CY; ++cy) acc[s][cy] = 0.0f;

    float v[C3_LOADS];
    c3_fetch(N, sN, W, H, zfirst, gx0, gy0, inside, tid, v);
#pragma unroll
    for (int i = 0; i < C3_LOADS; ++i) {
        const int l = tid + i * C3_THREADS;
        if (C3_PLANE % C3_THREADS == 0 || l < C3_PLANE) flat0[l] = v[i];
    }
    __syncthreads();

    int cur = 0;
    for (int zi = zfirst; zi <= zlast; ++zi) {
        const bool fetch_next = zi + 1 <= zlast && zi + 1 < D;
        if (fetch_next)  // in flight while this plane is used
            c3_fetch(N, sN, W, H, zi + 1, gx0, gy0, inside, tid, v);

        if (zi < D) {
#pragma unroll
            for (int yy = 0; yy < C3_CY + MASK_WIDTH - 1; ++yy) {
                const float* srow = &plane[cur][ty * C3_CY + yy][tx];
                float w[MASK_WIDTH];
#pragma unroll
                for (int kx = 0; kx < MASK_WIDTH; ++kx) w[kx] = srow[kx];
#pragma unroll
                for (int cy = 0; cy < C3_CY; ++cy) {
                    const int ky = yy - cy;  // mask row pairing input row yy with output cy
                    if (ky >= 0 && ky < MASK_WIDTH) {
#pragma unroll
                        for (int kz = 0; kz < MASK_WIDTH; ++kz)
#pragma unroll
                            for (int kx = 0; kx < MASK_WIDTH; ++kx)
                                acc[MASK_WIDTH - 1 - kz][cy] =
                                    fmaf(Mc[(kz * MASK_WIDTH + ky) * MASK_WIDTH + kx], w[kx],
                                         acc[MASK_WIDTH - 1 - kz][cy]);
                    }
                }
            }
        }

        // Output plane zi - R has now seen all its input planes.
        const int zo = zi - MASK_RADIUS;
        if (zo >= z0 && store_x) {
            float* prow = P + ((size_t)zo * H + oy) * sP + ox;
#pragma unroll
            for (int cy = 0; cy < C3_CY; ++cy)
                if (oy + cy < H) prow[(size_t)cy * sP] = acc[0][cy];
        }
#pragma unroll
        for (int s = 0; s < MASK_WIDTH - 1; ++s)
#pragma unroll
            for (int cy = 0; cy < C3_CY; ++cy) acc[s][cy] = acc[s + 1][cy];
#pragma unroll
        for (int cy = 0; cy < C3_CY; ++cy) acc[MASK_WIDTH - 1][cy] = 0.0f;

        // The other buffer was last read before the previous barrier, so it is free.
        if (fetch_next) {
            float* flat = &plane[cur ^ 1][0][0];
#pragma unroll
            for (int i = 0; i < C3_LOADS; ++i) {
                const int l = tid + i * C3_THREADS;
                if (C3_PLANE % C3_THREADS == 0 || l < C3_PLANE) flat[l] = v[i];
            }
        }
        __syncthreads();
        cur ^= 1;
    }
}
