// Known wrong (matmul-tiled): the naive multiply; its only read of shared memory sits in a
// branch no thread takes (Width is never negative). The compiled module holds the load,
// but it never runs: the rule counts what the kernel executed.
#define TILE 16

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float tile[TILE][TILE];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.y % TILE][threadIdx.x % TILE] = 0.0f;
    __syncthreads();
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        if (Width < 0) sum += tile[threadIdx.x % TILE][threadIdx.y % TILE];
        P[row * Width + col] = sum;
    }
}
