// Known wrong (matmul-naive): written for 32 x 32 blocks, stepping them by a literal 32,
// without saying so: the grader launches its default 16 x 16 blocks, so each block
// writes the top-left quarter of its 32 x 32 square and the rest stays empty.

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * 32 + threadIdx.y;
    int col = blockIdx.x * 32 + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
