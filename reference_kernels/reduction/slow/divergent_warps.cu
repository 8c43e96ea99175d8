// Slow but right (reduction): the course's first tree, interleaved addressing with
// divergent warps. Each thread adds its two inputs as it loads them, then at stride s
// the threads with t % (2 * s) == 0 add, so from the first step on every warp has lanes
// idle, and every warp stays busy until s reaches 32: far more requests than keeping
// the working threads together (t < s) would make.

#define BLOCK_X 256
#define TILE_X (2 * BLOCK_X)

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * TILE_X + t;
    float first = i < (unsigned int)n ? input[i] : 0.0f;
    float second = i + BLOCK_X < (unsigned int)n ? input[i + BLOCK_X] : 0.0f;
    partial[t] = first + second;
    for (unsigned int s = 1; s < BLOCK_X; s *= 2) {
        __syncthreads();
        if (t % (2 * s) == 0) partial[t] += partial[t + s];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
