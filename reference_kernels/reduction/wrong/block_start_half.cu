// Known wrong (reduction): each block starts at blockIdx.x * BLOCK_X, where its 2 * BLOCK_X
// inputs start at 2 * blockIdx.x * BLOCK_X: the blocks' inputs overlap, and the second
// half of the input is never summed.
#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[2 * BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int start = blockIdx.x * BLOCK_X;
    partial[t] = start + t < (unsigned int)n ? input[start + t] : 0.0f;
    partial[BLOCK_X + t] =
        start + BLOCK_X + t < (unsigned int)n ? input[start + BLOCK_X + t] : 0.0f;
    for (unsigned int stride = 1; stride <= BLOCK_X; stride *= 2) {
        __syncthreads();
        if (t % stride == 0) partial[2 * t] += partial[2 * t + stride];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
