// Known wrong (reduction): the last warp finishes the tree with __syncwarp(), but the
// __syncwarp() sits inside `if (lane < offset)`: once offset is 16, lanes 16..31 skip it
// and finish, and lanes 0..15 wait for them in vain.

#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[BLOCK_X];
    unsigned int t = threadIdx.x, lane = t % 32, start = 2 * blockIdx.x * BLOCK_X;
    float sum = start + t < (unsigned int)n ? input[start + t] : 0.0f;
    sum += start + BLOCK_X + t < (unsigned int)n ? input[start + BLOCK_X + t] : 0.0f;
    partial[t] = sum;
    for (unsigned int stride = BLOCK_X / 2; stride > 32; stride /= 2) {
        __syncthreads();
        if (t < stride) partial[t] += partial[t + stride];
    }
    __syncthreads();
    if (t < 32) {
        for (unsigned int offset = 32; offset > 0; offset /= 2) {
            if (lane < offset) {
                partial[t] += partial[t + offset];
                __syncwarp();
            }
        }
        if (t == 0) output[blockIdx.x] = partial[0];
    }
}
