// Known wrong (matmul-naive): a while loop that never advances k, so the kernel never
// finishes. It reads nothing out of bounds: it only hangs.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        int k = 0;
        while (k < Width) {
            sum += M[row * Width + k] * N[k * Width + col];
        }
        P[row * Width + col] = sum;
    }
}
