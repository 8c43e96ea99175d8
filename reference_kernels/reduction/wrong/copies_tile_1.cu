// Known wrong (reduction), a cheat: TILE_X 1, so that each block's "sum" is one input,
// copied, and the grader's own adding of the blocks' sums would do the whole reduction.
// The lab needs TILE_X of at least 64: no case runs.
#define BLOCK_X 32
#define TILE_X 1

__global__ void reduction(const float* input, float* output, int n)
{
    if (threadIdx.x == 0 && blockIdx.x < n) output[blockIdx.x] = input[blockIdx.x];
}
