// Adversarial: a global constructor that allocates memory until it cannot, writing into
// each 256 MiB chunk. Expected: the allocation is refused (an address-space limit, so at
// the same size however much of it was touched) and the submission crashes. Touching only
// a page of each chunk keeps it off the case timeout where page faults are slow (a VM
// that zeroed 4 GiB of pages in 17 s took the whole-chunk memset past its 2 s).
#include <cstdlib>
#include <cstring>

static int hog()
{
    for (int i = 0; i < 1024; ++i) {  // at most 256 GiB
        void* chunk = malloc(256u << 20);
        if (!chunk)
            abort();
        memset(chunk, 1, 4096);
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
