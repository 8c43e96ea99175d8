// Known wrong (matmul-naive): Width declared size_t (8 bytes) where the lab passes an
// int (4 bytes). The interface check stops it before any case runs.
__global__ void matmul(const float* M, const float* N, float* P, size_t Width)
{
    size_t row = blockIdx.y * blockDim.y + threadIdx.y;
    size_t col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (size_t k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
