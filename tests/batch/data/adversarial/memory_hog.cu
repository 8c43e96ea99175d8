// Adversarial: a global constructor that allocates and touches memory until it cannot.
// Expected: the allocation is refused (an address-space limit) and the submission crashes.
#include <cstdlib>
#include <cstring>

static int hog()
{
    for (int i = 0; i < 1024; ++i) {  // at most 256 GiB
        void* chunk = malloc(256u << 20);
        if (!chunk)
            abort();
        memset(chunk, 1, 256u << 20);
    }
    return 0;
}
static int hogged = hog();

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
