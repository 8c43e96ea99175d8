// Known wrong (conv2d): the halo-tiled kernel written around input coordinates. Only the
// inner threads compute, but every thread stores: the halo threads store 0 into outputs
// that belong to the neighbouring blocks, so blocks overwrite each other and the result
// depends on which block runs last.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)
#define TILE_X 16
#define TILE_Y 16
#define BLOCK_X (TILE_X + MASK_WIDTH - 1)
#define BLOCK_Y (TILE_Y + MASK_WIDTH - 1)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    __shared__ float tile[BLOCK_Y][BLOCK_X];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * TILE_Y - MASK_RADIUS + ty;
    int c = blockIdx.x * TILE_X - MASK_RADIUS + tx;
    tile[ty][tx] = (r >= 0 && r < Height && c >= 0 && c < Width) ? N[r * Width + c] : 0.0f;
    __syncthreads();
    float sum = 0.0f;
    if (ty >= MASK_RADIUS && ty < BLOCK_Y - MASK_RADIUS &&
        tx >= MASK_RADIUS && tx < BLOCK_X - MASK_RADIUS) {
        for (int i = 0; i < MASK_WIDTH; ++i)
            for (int j = 0; j < MASK_WIDTH; ++j)
                sum += tile[ty - MASK_RADIUS + i][tx - MASK_RADIUS + j] * Mc[i * MASK_WIDTH + j];
    }
    if (r >= 0 && r < Height && c >= 0 && c < Width)
        P[r * Width + c] = sum;
}
