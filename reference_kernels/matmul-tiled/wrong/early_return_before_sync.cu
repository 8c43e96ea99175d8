// Known wrong (matmul-tiled): threads outside P return before the tile loop. They skip
// their share of the loads and the __syncthreads() calls, so the edge tiles compute
// from elements nobody loaded (only the last, partial tiles are wrong), and the
// barriers are not reached by every thread of those blocks.
#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty;
    int col = blockIdx.x * TILE_WIDTH + tx;
    if (row >= Width || col >= Width) return;
    float sum = 0.0f;
    for (int m = 0; m < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++m) {
        int c = m * TILE_WIDTH + tx, r = m * TILE_WIDTH + ty;
        Ms[ty][tx] = c < Width ? M[row * Width + c] : 0.0f;
        Ns[ty][tx] = r < Width ? N[r * Width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty][k] * Ns[k][tx];
        __syncthreads();
    }
    P[row * Width + col] = sum;
}
