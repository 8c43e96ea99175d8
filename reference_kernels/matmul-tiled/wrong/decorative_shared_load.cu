// Known wrong (matmul-tiled): the naive multiply with a shared store and load added for
// show. Each sum passes through a __shared__ array on its way to P, so a load from shared
// memory runs in every case, but every element of M and N still comes from global memory
// Width times: each output element reads what the naive kernel's reads.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float shown[16][16];
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        shown[threadIdx.y][threadIdx.x] = sum;
        P[row * Width + col] = shown[threadIdx.y][threadIdx.x];
    }
}
