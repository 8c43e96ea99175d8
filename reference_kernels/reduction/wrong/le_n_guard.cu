// Known wrong (reduction): the loads are guarded with i <= n: the thread with i = n reads
// one element past the end of input.
#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[2 * BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int start = 2 * blockIdx.x * BLOCK_X;
    unsigned int i = start + t, j = start + BLOCK_X + t;
    partial[t] = i <= (unsigned int)n ? input[i] : 0.0f;
    partial[BLOCK_X + t] = j <= (unsigned int)n ? input[j] : 0.0f;
    for (unsigned int stride = 1; stride <= BLOCK_X; stride *= 2) {
        __syncthreads();
        if (t % stride == 0) partial[2 * t] += partial[2 * t + stride];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
