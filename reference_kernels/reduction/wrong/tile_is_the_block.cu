// Known wrong (reduction): each block sums 2 * BLOCK_X inputs, as the course's kernel
// does, but the file says TILE_X 256: the grader launches a block for every 256 inputs
// and expects each to sum 256, so the blocks' inputs overlap.

#define BLOCK_X 256
#define TILE_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[2 * BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int start = 2 * blockIdx.x * blockDim.x;
    partial[t] = start + t < (unsigned int)n ? input[start + t] : 0.0f;
    partial[BLOCK_X + t] =
        start + BLOCK_X + t < (unsigned int)n ? input[start + BLOCK_X + t] : 0.0f;
    for (unsigned int stride = BLOCK_X; stride >= 1; stride /= 2) {
        __syncthreads();
        if (t < stride) partial[t] += partial[t + stride];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
