// The loads are not guarded: the last block reads past the end of input whenever n is
// not a multiple of 2 * BLOCK_X.

#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[2 * BLOCK_X];
    unsigned int t = threadIdx.x, start = 2 * blockIdx.x * BLOCK_X;
    partial[t] = input[start + t];
    partial[BLOCK_X + t] = input[start + BLOCK_X + t];
    for (unsigned int stride = BLOCK_X; stride >= 1; stride /= 2) {
        __syncthreads();
        if (t < stride) partial[t] += partial[t + stride];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
