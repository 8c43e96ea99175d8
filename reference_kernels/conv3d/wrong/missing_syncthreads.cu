// Known wrong (conv3d): the course's tiled, z-coarsened kernel (12 x 12 x 12 shared
// tile, 8 x 8 x 4 threads, 2 outputs each along z) without the __syncthreads()
// between loading the tile and reading it: a race on shared memory.
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
#define SX (TILE_X + MASK_WIDTH - 1)
#define SY (TILE_Y + MASK_WIDTH - 1)
#define SZ (TILE_Z + MASK_WIDTH - 1)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];

__global__ void conv3d(const float* N, float* P, int W, int H, int D)
{
    __shared__ float tile[SZ][SY][SX];
    int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    int tid = (tz * BLOCK_Y + ty) * BLOCK_X + tx;
    int bx = blockIdx.x * TILE_X - MASK_RADIUS;
    int by = blockIdx.y * TILE_Y - MASK_RADIUS;
    int bz = blockIdx.z * TILE_Z - MASK_RADIUS;
    for (int l = tid; l < SX * SY * SZ; l += BLOCK_X * BLOCK_Y * BLOCK_Z) {
        int lx = l % SX, ly = (l / SX) % SY, lz = l / (SX * SY);
        int x = bx + lx, y = by + ly, z = bz + lz;
        tile[lz][ly][lx] = (x >= 0 && x < W && y >= 0 && y < H && z >= 0 && z < D)
                               ? N[(z * H + y) * W + x] : 0.0f;
    }
    float acc[2] = {0.0f, 0.0f};
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j)
            for (int k = 0; k < MASK_WIDTH; ++k) {
                float m = Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
                for (int c = 0; c < 2; ++c) acc[c] += tile[tz * 2 + c + i][ty + j][tx + k] * m;
            }
    int x = blockIdx.x * TILE_X + tx, y = blockIdx.y * TILE_Y + ty;
    for (int c = 0; c < 2; ++c) {
        int z = blockIdx.z * TILE_Z + tz * 2 + c;
        if (x < W && y < H && z < D) P[(z * H + y) * W + x] = acc[c];
    }
}
