// Known wrong (matmul-tiled): the naive multiply, with a __shared__ tile that is filled
// and never read. Shared memory that is only written does not tile anything.
#define TILE 16

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float tile[TILE][TILE];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.y % TILE][threadIdx.x % TILE] = 0.0f;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
