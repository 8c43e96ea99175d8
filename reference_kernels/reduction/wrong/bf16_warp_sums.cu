// Known wrong (reduction): each thread packs its two inputs into a bfloat16 pair
// (__floats2bfloat162_rn), each warp sums its pairs with shuffles and __hadd2, and the
// warp sums meet as floats. bfloat16 keeps 8 bits of a float's 24, so each block's sum is
// off by about 2^-9 of its terms at every size: every case fails the precision test, on
// both backends.
#include <cuda_bf16.h>

#define BLOCK_X 256
#define WARPS (BLOCK_X / 32)

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[WARPS];
    unsigned int t = threadIdx.x;
    unsigned int start = 2 * blockIdx.x * BLOCK_X;
    float a = start + t < (unsigned int)n ? input[start + t] : 0.0f;
    float b = start + BLOCK_X + t < (unsigned int)n ? input[start + BLOCK_X + t] : 0.0f;
    __nv_bfloat162 pair = __floats2bfloat162_rn(a, b);
    for (int offset = 16; offset > 0; offset >>= 1)
        pair = __hadd2(pair, __shfl_down_sync(0xffffffffu, pair, offset));
    if (t % 32 == 0) partial[t / 32] = __low2float(pair) + __high2float(pair);
    __syncthreads();
    if (t == 0) {
        float sum = 0.0f;
        for (int w = 0; w < WARPS; ++w) sum += partial[w];
        output[blockIdx.x] = sum;
    }
}
