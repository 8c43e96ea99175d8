// reduction baseline: the course's first reduction kernel. Each thread loads two
// elements (TILE_X = 2 * BLOCK_X, the default), and the tree adds neighbours at a stride
// that doubles each step: partial[2t] += partial[2t + stride] for threads t with
// t % stride == 0, a __syncthreads() before every step.

#define BLOCK_X 256

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[2 * BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int start = 2 * blockIdx.x * BLOCK_X;
    partial[t] = start + t < (unsigned int)n ? input[start + t] : 0.0f;
    partial[BLOCK_X + t] =
        start + BLOCK_X + t < (unsigned int)n ? input[start + BLOCK_X + t] : 0.0f;
    for (unsigned int stride = 1; stride <= BLOCK_X; stride *= 2) {
        __syncthreads();
        if (t % stride == 0) partial[2 * t] += partial[2 * t + stride];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
