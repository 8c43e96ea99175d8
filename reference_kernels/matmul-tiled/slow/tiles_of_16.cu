// Slow but right (matmul-tiled): the course's tiled kernel, as most students hand it in.
// 16 x 16 tiles loaded by rows (coalesced), no bank conflict, one output a thread: each
// element of M and N is read from global memory Width / 16 times, 4 times the
// reference's 128 x 128 tiles with 8 x 8 outputs a thread. It tiles; it reuses too little.

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
        int k = m * TILE_WIDTH + tx, r = m * TILE_WIDTH + ty;
        Ms[ty][tx] = (row < Width && k < Width) ? M[row * Width + k] : 0.0f;
        Ns[ty][tx] = (r < Width && col < Width) ? N[r * Width + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE_WIDTH; ++j)
            sum += Ms[ty][j] * Ns[j][tx];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
