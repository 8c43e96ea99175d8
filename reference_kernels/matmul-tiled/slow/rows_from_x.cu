// Slow but right (matmul-tiled): a tiled kernel with the row from threadIdx.x and the
// column from threadIdx.y. Its tile loads read M down a column and N down a column, so
// the lanes of a warp touch 16 rows of each: uncoalesced. The tiles have a column of
// padding, so reading them in shared memory has no bank conflict.

#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH + 1];  // Ms[r][k]: M(row0 + r, m*T + k)
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH + 1];  // Ns[k][c]: N(m*T + k, col0 + c)
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.x * TILE_WIDTH + tx;
    int col = blockIdx.y * TILE_WIDTH + ty;
    float sum = 0.0f;
    for (int m = 0; m < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++m) {
        int k = m * TILE_WIDTH + ty, r = m * TILE_WIDTH + tx;
        Ms[tx][ty] = (row < Width && k < Width) ? M[row * Width + k] : 0.0f;
        Ns[tx][ty] = (r < Width && col < Width) ? N[r * Width + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE_WIDTH; ++j)
            sum += Ms[tx][j] * Ns[j][ty];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
