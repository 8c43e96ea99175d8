// Known wrong (reduction): the tree keeps each thread's running sum in a register, and
// every thread of the block stores its own sum into output[blockIdx.x]; only thread 0's
// is the block's total. Which store lands last is up to the order the threads run in.

#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[BLOCK_X];
    unsigned int t = threadIdx.x, start = 2 * blockIdx.x * BLOCK_X;
    float sum = start + t < (unsigned int)n ? input[start + t] : 0.0f;
    sum += start + BLOCK_X + t < (unsigned int)n ? input[start + BLOCK_X + t] : 0.0f;
    partial[t] = sum;
    for (unsigned int stride = BLOCK_X / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (t < stride) partial[t] = sum = sum + partial[t + stride];
    }
    output[blockIdx.x] = sum;
}
