// Known wrong (matmul-naive): does not compile. The row index is declared `row` and
// used as `Row` (the lecture's spelling) on line 10.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[Row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
