// Known wrong (matmul-tiled): each tile load checks the index along the tile loop but not
// the thread's own row (for M) or column (for N), and only the store is fully guarded. The
// product is right, but at Width 100 the threads past the edge read beyond the end of M
// and N. Only an access checker sees it: compute-sanitizer (--sanitize) or the CPU backend.
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
    float sum = 0.0f;
    for (int m = 0; m < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++m) {
        int k_col = m * TILE_WIDTH + tx, k_row = m * TILE_WIDTH + ty;
        Ms[ty][tx] = k_col < Width ? M[row * Width + k_col] : 0.0f;
        Ns[ty][tx] = k_row < Width ? N[k_row * Width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty][k] * Ns[k][tx];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
