// Known wrong (matmul-tiled), a cheat: right at every graded size, but it returns at once
// when Width >= 2048, a size that only the timing uses. Every timed launch is checked, so
// its output, still poisoned, costs the speed points.
#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    if (Width >= 2048) return;
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty;
    int col = blockIdx.x * TILE_WIDTH + tx;
    float sum = 0.0f;
    for (int t = 0; t < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++t) {
        int mc = t * TILE_WIDTH + tx, nr = t * TILE_WIDTH + ty;
        Ms[ty][tx] = (row < Width && mc < Width) ? M[row * Width + mc] : 0.0f;
        Ns[ty][tx] = (col < Width && nr < Width) ? N[nr * Width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty][k] * Ns[k][tx];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
