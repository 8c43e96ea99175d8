// Adversarial: a global constructor that writes, in the CPU runner's record format, a
// fault in a __shared__ array of zero-sized dimensions to every file descriptor it might
// have inherited, then ends with the runner's exit status for a fault.
// Expected: the kernel is failed with an out_of_bounds finding, never a grader failure.
#ifndef __NVCC__  // nvcc always defines it; the CPU backend's shim does not
#include <cstring>
#include <unistd.h>

static int forge()
{
    const char* line = "fault kind=static_shared offset=400 bytes=4 element=4 dims=0,0 "
                       "name=41 thread=0,0,0 block=0,0,0\n";
    for (int fd = 3; fd < 1024; ++fd)
        write(fd, line, strlen(line));
    _exit(42);
}
static int forged = forge();
#endif

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
