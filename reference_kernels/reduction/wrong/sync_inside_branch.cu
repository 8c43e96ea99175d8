// The barrier moved inside the if: only the threads with t < stride reach it, so the
// threads of a block wait at different barriers (undefined behaviour on a GPU).

#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[2 * BLOCK_X];
    unsigned int t = threadIdx.x, start = 2 * blockIdx.x * BLOCK_X;
    partial[t] = start + t < (unsigned int)n ? input[start + t] : 0.0f;
    partial[BLOCK_X + t] =
        start + BLOCK_X + t < (unsigned int)n ? input[start + BLOCK_X + t] : 0.0f;
    __syncthreads();
    for (unsigned int stride = BLOCK_X; stride >= 1; stride /= 2) {
        if (t < stride) {
            partial[t] += partial[t + stride];
            __syncthreads();
        }
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
