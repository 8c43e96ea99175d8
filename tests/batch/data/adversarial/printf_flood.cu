// Adversarial: a correct kernel whose every thread prints a hundred lines.
// Expected: the output is capped (an output diagnostic), and the cases pass.
#include <cstdio>

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 0; i < 100; ++i)
        printf("flood %d %d %d: the quick brown fox jumps over the lazy dog\n", row, col, i);
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
