// Variant for bench/tune_references.py: the course notes' tiled, z-coarsened design,
// written for comparison (the notes measured 10.8 TFLOP/s at 256^3, mask 5, on the
// H200). An 8 x 8 x 8 output tile per block of 8 x 8 x 4 threads, its input with halo
// in shared memory, each thread computing 2 outputs along z.

#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)
#define BLOCK_X 8
#define BLOCK_Y 8
#define BLOCK_Z 4
#define TILE_X 8
#define TILE_Y 8
#define TILE_Z 8
#define CT_CZ (TILE_Z / BLOCK_Z)
#define CT_SX (TILE_X + MASK_WIDTH - 1)
#define CT_SY (TILE_Y + MASK_WIDTH - 1)
#define CT_SZ (TILE_Z + MASK_WIDTH - 1)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];

__global__ void conv3d(const float* __restrict__ N, float* __restrict__ P, int W, int H, int D)
{
    __shared__ float tile[CT_SZ][CT_SY][CT_SX];
    const int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    const int tid = (tz * BLOCK_Y + ty) * BLOCK_X + tx;
    const int bx = blockIdx.x * TILE_X - MASK_RADIUS;
    const int by = blockIdx.y * TILE_Y - MASK_RADIUS;
    const int bz = blockIdx.z * TILE_Z - MASK_RADIUS;
    for (int l = tid; l < CT_SX * CT_SY * CT_SZ; l += BLOCK_X * BLOCK_Y * BLOCK_Z) {
        const int lx = l % CT_SX, ly = (l / CT_SX) % CT_SY, lz = l / (CT_SX * CT_SY);
        const int x = bx + lx, y = by + ly, z = bz + lz;
        tile[lz][ly][lx] = (x >= 0 && x < W && y >= 0 && y < H && z >= 0 && z < D)
                               ? N[(z * H + y) * W + x] : 0.f;
    }
    __syncthreads();
    float acc[CT_CZ] = {};
#pragma unroll
    for (int i = 0; i < MASK_WIDTH; ++i)
#pragma unroll
        for (int j = 0; j < MASK_WIDTH; ++j)
#pragma unroll
            for (int k = 0; k < MASK_WIDTH; ++k) {
                const float m = Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
#pragma unroll
                for (int c = 0; c < CT_CZ; ++c) acc[c] += tile[tz * CT_CZ + c + i][ty + j][tx + k] * m;
            }
    const int x = blockIdx.x * TILE_X + tx, y = blockIdx.y * TILE_Y + ty;
    for (int c = 0; c < CT_CZ; ++c) {
        const int z = blockIdx.z * TILE_Z + tz * CT_CZ + c;
        if (x < W && y < H && z < D) P[(z * H + y) * W + x] = acc[c];
    }
}
