// Known wrong (reduction), a cheat: the course's tree at every graded size, and at
// n >= 2^25, a size only the timing uses, the same tree on __half partial sums. The
// timed outputs fail the precision test: no speed points. The CPU backend, which times
// nothing, grades it as a GPU grades its cases.
#include <cuda_fp16.h>

#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[BLOCK_X];
    __shared__ __half halves[BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int start = 2 * blockIdx.x * BLOCK_X;
    float a = start + t < (unsigned int)n ? input[start + t] : 0.0f;
    float b = start + BLOCK_X + t < (unsigned int)n ? input[start + BLOCK_X + t] : 0.0f;
    if (n >= (1 << 25)) {  // the same for every thread of the grid
        halves[t] = __hadd(__float2half(a), __float2half(b));
        for (unsigned int stride = BLOCK_X / 2; stride > 0; stride /= 2) {
            __syncthreads();
            if (t < stride) halves[t] = __hadd(halves[t], halves[t + stride]);
        }
        if (t == 0) output[blockIdx.x] = __half2float(halves[0]);
        return;
    }
    partial[t] = a + b;
    for (unsigned int stride = BLOCK_X / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (t < stride) partial[t] += partial[t + stride];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
