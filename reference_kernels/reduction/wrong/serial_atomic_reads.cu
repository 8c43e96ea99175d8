// Known wrong (reduction): serial_thread.cu with every input read through an atomic that
// adds zero, which returns the element and is no load: thread 0 of each block adds the
// block's whole tile alone. The busiest-thread rule counts a thread's global atomics with
// its loads, so one thread still makes most of the profile case's reads.
#define BLOCK_X 256
#define TILE_X 65536

__global__ void reduction(const float* input, float* output, int n)
{
    if (threadIdx.x != 0) return;
    size_t start = (size_t)blockIdx.x * TILE_X;
    float sum = 0.0f;
    for (size_t j = start; j < start + TILE_X && j < (size_t)n; ++j)
        sum += atomicAdd((float*)&input[j], 0.0f);
    output[blockIdx.x] = sum;
}
