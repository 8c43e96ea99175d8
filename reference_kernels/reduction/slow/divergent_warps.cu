// Slow but right (reduction): the course's first tree, interleaved addressing with
// divergent warps. At stride s the threads with t % (2 * s) == 0 add, so from the first
// step on every warp has lanes idle, and every warp stays busy until s reaches 32:
// twice the requests that keeping the working threads together (t < s) would make.

#define BLOCK_X 256
#define TILE_X BLOCK_X

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * TILE_X + t;
    partial[t] = i < (unsigned int)n ? input[i] : 0.0f;
    for (unsigned int s = 1; s < BLOCK_X; s *= 2) {
        __syncthreads();
        if (t % (2 * s) == 0) partial[t] += partial[t + s];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
