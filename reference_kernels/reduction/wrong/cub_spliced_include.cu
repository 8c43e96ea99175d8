// Known wrong (reduction): CUB does the block's sum, included through a line splice
// after the #, which the text check does not join: only what the compile read shows it.
#\
include <cub/block/block_reduce.cuh>

#ifndef BLOCK_X
#define BLOCK_X 256
#endif
#ifndef TILE_X
#define TILE_X (2 * BLOCK_X)
#endif

__global__ void reduction(const float* input, float* output, int n)
{
    typedef cub::BlockReduce<float, BLOCK_X> Reduce;
    __shared__ typename Reduce::TempStorage temp;
    int base = blockIdx.x * TILE_X;
    float v = 0.0f;
    for (int i = threadIdx.x; i < TILE_X; i += BLOCK_X)
        if (base + i < n) v += input[base + i];
    float sum = Reduce(temp).Sum(v);
    if (threadIdx.x == 0) output[blockIdx.x] = sum;
}
