// Known wrong (conv3d): a 6 x 6 x 6 output tile loaded with its halo by a block of
// (6 + MASK_WIDTH - 1)^3 threads: 512 at mask 3 and 1000 at mask 5, but 12^3 = 1728 at
// mask 7, more than a block may have, so those launches are refused.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)
#define TILE 6
#define TILE_X TILE
#define TILE_Y TILE
#define TILE_Z TILE
#define BLOCK_X (TILE + MASK_WIDTH - 1)
#define BLOCK_Y (TILE + MASK_WIDTH - 1)
#define BLOCK_Z (TILE + MASK_WIDTH - 1)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];  // [z][y][x]

__global__ void conv3d(const float* N, float* P, int W, int H, int D)
{
    __shared__ float tile[BLOCK_Z][BLOCK_Y][BLOCK_X];
    int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    int x = blockIdx.x * TILE - MASK_RADIUS + tx;
    int y = blockIdx.y * TILE - MASK_RADIUS + ty;
    int z = blockIdx.z * TILE - MASK_RADIUS + tz;
    bool inside = x >= 0 && x < W && y >= 0 && y < H && z >= 0 && z < D;
    tile[tz][ty][tx] = inside ? N[(z * H + y) * W + x] : 0.0f;
    __syncthreads();
    if (tx >= TILE || ty >= TILE || tz >= TILE) return;
    int ox = blockIdx.x * TILE + tx, oy = blockIdx.y * TILE + ty, oz = blockIdx.z * TILE + tz;
    if (ox >= W || oy >= H || oz >= D) return;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j)
            for (int k = 0; k < MASK_WIDTH; ++k)
                sum += tile[tz + i][ty + j][tx + k] * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
    P[(oz * H + oy) * W + ox] = sum;
}
