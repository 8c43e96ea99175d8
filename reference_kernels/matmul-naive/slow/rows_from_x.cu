// Slow but right (matmul-naive): the row from threadIdx.x and the column from
// threadIdx.y, the course's layout turned round. The 32 lanes of a warp hold 16 rows:
// each load of M touches 16 sectors where the right layout's touch 2, and each store to
// P 16 rows. Every case passes; the profile shows the loads uncoalesced.

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
