// Known wrong (matmul-tiled): TILE_WIDTH 32, but no BLOCK_X/BLOCK_Y, so the grader
// launches its default 16 x 16 blocks over 16 x 16 tiles: three quarters of each 32 x 32
// shared tile are never loaded and each block computes the wrong outputs.
#define TILE_WIDTH 32

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty, col = blockIdx.x * TILE_WIDTH + tx;
    float acc = 0.0f;
    for (int m = 0; m < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++m) {
        int k = m * TILE_WIDTH;
        Ms[ty][tx] = (row < Width && k + tx < Width) ? M[row * Width + k + tx] : 0.0f;
        Ns[ty][tx] = (col < Width && k + ty < Width) ? N[(k + ty) * Width + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE_WIDTH; ++j) acc += Ms[ty][j] * Ns[j][tx];
        __syncthreads();
    }
    if (row < Width && col < Width) P[row * Width + col] = acc;
}
