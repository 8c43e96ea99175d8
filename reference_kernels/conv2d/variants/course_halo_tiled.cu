// Variant for bench/tune_references.py: the course notes' halo-tiled design, written
// for comparison (the notes measured 0.9 TB/s at 8192 x 8192, mask 5, on the H200).
// One block of (TILE + MASK_WIDTH - 1)^2 threads loads the input tile with its halo,
// one element each; the first TILE x TILE threads compute one output each.

#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)
#define TILE_X 16
#define TILE_Y 16
#define BLOCK_X (TILE_X + MASK_WIDTH - 1)
#define BLOCK_Y (TILE_Y + MASK_WIDTH - 1)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* __restrict__ N, float* __restrict__ P, int Width, int Height)
{
    __shared__ float tile[BLOCK_Y][BLOCK_X];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int r = blockIdx.y * TILE_Y - MASK_RADIUS + ty;
    const int c = blockIdx.x * TILE_X - MASK_RADIUS + tx;
    tile[ty][tx] = (r >= 0 && r < Height && c >= 0 && c < Width) ? N[r * Width + c] : 0.f;
    __syncthreads();
    if (tx < TILE_X && ty < TILE_Y) {
        const int row = blockIdx.y * TILE_Y + ty, col = blockIdx.x * TILE_X + tx;
        if (row < Height && col < Width) {
            float sum = 0.f;
#pragma unroll
            for (int i = 0; i < MASK_WIDTH; ++i)
#pragma unroll
                for (int j = 0; j < MASK_WIDTH; ++j)
                    sum += tile[ty + i][tx + j] * Mc[i * MASK_WIDTH + j];
            P[row * Width + col] = sum;
        }
    }
}
