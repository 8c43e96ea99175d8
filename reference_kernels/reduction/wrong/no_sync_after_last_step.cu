// Known wrong (reduction): the tree's __syncthreads() sits at the top of each step, so
// nothing separates the last step from what follows it: every thread reads partial[0]
// and stores it while thread 0 may still be making its last addition to it. The CPU's
// thread orders agree on the output; a GPU's warps need not.

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
        if (t < stride) partial[t] += partial[t + stride];
    }
    output[blockIdx.x] = partial[0];
}
