// Known wrong (matmul-naive): in 32 x 8 blocks, the row comes from the x index and the
// column from blockIdx.y * blockDim.x + threadIdx.y: consecutive blocks along y step
// the column by 32 while their threads cover 8, so 8 columns of every 32 are written.

#define BLOCK_X 32
#define BLOCK_Y 8

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.x + threadIdx.y;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
