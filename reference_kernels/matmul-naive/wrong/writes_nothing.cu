// Known wrong (matmul-naive): the store sits inside the k loop behind a test that is
// never true (k == Width), so nothing is ever written to P.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k) {
            sum += M[row * Width + k] * N[k * Width + col];
            if (k == Width)  // meant: after the last k
                P[row * Width + col] = sum;
        }
    }
}
