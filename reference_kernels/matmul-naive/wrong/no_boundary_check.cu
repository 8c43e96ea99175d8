// Known wrong (matmul-naive): no boundary check. Spare threads of the last row and
// column of blocks (Width = 100 with 16 x 16 blocks) read past the ends of M and N and
// store past the end of P, or into the next row of P.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int k = 0; k < Width; ++k)
        sum += M[row * Width + k] * N[k * Width + col];
    P[row * Width + col] = sum;
}
