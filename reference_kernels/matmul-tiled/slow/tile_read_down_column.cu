// Slow but right (matmul-tiled): 32 x 32 tiles with N's tile kept transposed,
// Nt[c][k] = N(m*32 + k, col0 + c), so that the product reads Nt[tx][k]: the 32 lanes of
// a warp read one column of the tile, 32 words 32 apart, all in one bank: every such
// load is a 32-way bank conflict, and so is every store into Nt. A [32][33] tile would
// put the column in 32 banks.

#define TILE_WIDTH 32
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nt[TILE_WIDTH][TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty;
    int col = blockIdx.x * TILE_WIDTH + tx;
    float sum = 0.0f;
    for (int m = 0; m < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++m) {
        int c = m * TILE_WIDTH + tx, r = m * TILE_WIDTH + ty;
        Ms[ty][tx] = (row < Width && c < Width) ? M[row * Width + c] : 0.0f;
        Nt[tx][ty] = (r < Width && col < Width) ? N[r * Width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty][k] * Nt[tx][k];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
