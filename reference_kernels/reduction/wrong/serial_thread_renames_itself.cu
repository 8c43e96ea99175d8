// Known wrong (reduction): serial_thread.cu, whose CPU build (where nvcc does not compile
// it) writes threadIdx.x before each load, so that the grader's watch of its accesses
// would take its 65536 loads for 256 threads' 256 each. A profile runs every block as
// fibers, whose running thread the runner notes itself: the busiest-thread rule still sees
// one thread make them all.
#define BLOCK_X 256
#define TILE_X 65536
#ifndef __NVCC__
#define RENAME(j) (*(volatile unsigned*)&threadIdx.x = (unsigned)((j) % 256))
#else
#define RENAME(j) ((void)0)
#endif

__global__ void reduction(const float* input, float* output, int n)
{
    if (threadIdx.x != 0) return;
    size_t start = (size_t)blockIdx.x * TILE_X;
    float sum = 0.0f;
    for (size_t j = start; j < start + TILE_X && j < (size_t)n; ++j) {
        RENAME(j);
        sum += input[j];
    }
    output[blockIdx.x] = sum;
}
