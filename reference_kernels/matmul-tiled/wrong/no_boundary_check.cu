// Known wrong (matmul-tiled): the course's first tiled kernel, which assumes Width is a
// multiple of TILE_WIDTH: Width / TILE_WIDTH tiles and no checks. Right at 64 and 256;
// at 100 the last products are dropped and spare threads read and write out of bounds.
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
    for (int m = 0; m < Width / TILE_WIDTH; ++m) {
        Ms[ty][tx] = M[row * Width + m * TILE_WIDTH + tx];
        Ns[ty][tx] = N[(m * TILE_WIDTH + ty) * Width + col];
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty][k] * Ns[k][tx];
        __syncthreads();
    }
    P[row * Width + col] = sum;
}
