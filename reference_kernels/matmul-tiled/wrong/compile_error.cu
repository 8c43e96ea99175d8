// Known wrong (matmul-tiled): does not compile. The tile size is #defined as TILE_SIZE
// but the index computation (line 11) uses TILE_WIDTH.
#define TILE_SIZE 16
#define BLOCK_X TILE_SIZE
#define BLOCK_Y TILE_SIZE

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_SIZE][TILE_SIZE];
    __shared__ float Ns[TILE_SIZE][TILE_SIZE];
    int row = blockIdx.y * TILE_WIDTH + threadIdx.y;
    int col = blockIdx.x * TILE_WIDTH + threadIdx.x;
    float sum = 0.0f;
    for (int m = 0; m < (Width + TILE_SIZE - 1) / TILE_SIZE; ++m) {
        int c = m * TILE_SIZE + threadIdx.x, r = m * TILE_SIZE + threadIdx.y;
        Ms[threadIdx.y][threadIdx.x] = (row < Width && c < Width) ? M[row * Width + c] : 0.0f;
        Ns[threadIdx.y][threadIdx.x] = (r < Width && col < Width) ? N[r * Width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE_SIZE; ++k)
            sum += Ms[threadIdx.y][k] * Ns[k][threadIdx.x];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
