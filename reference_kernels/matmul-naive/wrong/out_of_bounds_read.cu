// Known wrong (matmul-naive): the k loop runs one step too far (k <= Width). Every
// thread reads N[Width * Width + col], past the end of N (and the last row reads past
// the end of M). Nothing is written out of bounds.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k <= Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
