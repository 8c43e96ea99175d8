// Known wrong (conv2d): fixed_shared_tile.cu with the tile loaded in an if/else: with
// MASK_WIDTH 7 a thread stores past the end of __shared__ tile[12][12] in one branch or
// the other, and the report names that store's line.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)
#define TILE_X 8
#define TILE_Y 8
#define BLOCK_X (TILE_X + MASK_WIDTH - 1)
#define BLOCK_Y (TILE_Y + MASK_WIDTH - 1)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    __shared__ float tile[12][12];
    int tx = threadIdx.x, ty = threadIdx.y;
    int r = blockIdx.y * TILE_Y - MASK_RADIUS + ty;
    int c = blockIdx.x * TILE_X - MASK_RADIUS + tx;
    if (r >= 0 && r < Height && c >= 0 && c < Width)
        tile[ty][tx] = N[r * Width + c];
    else
        tile[ty][tx] = 0.0f;
    __syncthreads();
    if (tx < TILE_X && ty < TILE_Y) {
        int row = blockIdx.y * TILE_Y + ty, col = blockIdx.x * TILE_X + tx;
        if (row < Height && col < Width) {
            float sum = 0.0f;
            for (int i = 0; i < MASK_WIDTH; ++i)
                for (int j = 0; j < MASK_WIDTH; ++j)
                    sum += tile[ty + i][tx + j] * Mc[i * MASK_WIDTH + j];
            P[row * Width + col] = sum;
        }
    }
}
