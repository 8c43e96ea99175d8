// Adversarial: a fork bomb in a global constructor, which runs when the module is loaded.
// Every process that exists prints how many of its forks succeeded.
// Expected: no process is created ("forked 0 of 16"); the kernel is then graded as usual.
#include <cstdio>
#include <unistd.h>

static int bomb()
{
    int forked = 0;
    for (int i = 0; i < 16; ++i)
        forked += fork() >= 0;
    printf("forked %d of 16\n", forked);
    return 0;
}
static int exploded = bomb();

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
