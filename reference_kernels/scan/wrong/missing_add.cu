// A right scan of each block and of the block totals, but add_sums adds nothing: only
// the first block's elements are right.

#define BLOCK_X 1024
#define TILE_X BLOCK_X

// The inclusive scan of the block's values v (one per thread); every thread calls it.
__device__ float kogge_stone(float v, float (*XY)[BLOCK_X])
{
    const int t = threadIdx.x;
    int src = 0;
    XY[0][t] = v;
    for (int stride = 1; stride < BLOCK_X; stride *= 2) {
        __syncthreads();
        XY[1 - src][t] = t >= stride ? XY[src][t] + XY[src][t - stride] : XY[src][t];
        src = 1 - src;
    }
    return XY[src][t];
}

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    __shared__ float XY[2][BLOCK_X];
    int i = blockIdx.x * BLOCK_X + threadIdx.x;
    float v = kogge_stone(i < n ? input[i] : 0.0f, XY);
    if (i < n) output[i] = v;
    if (threadIdx.x == BLOCK_X - 1) sums[blockIdx.x] = v;
}

__global__ void scan_sums(float* sums, int m)
{
    __shared__ float XY[2][BLOCK_X];
    int t = threadIdx.x;
    float v = kogge_stone(t < m ? sums[t] : 0.0f, XY);
    if (t < m) sums[t] = v;
}

__global__ void add_sums(float* output, const float* sums, int n)
{
    // missing: output[i] += sums[blockIdx.x - 1] for blocks after the first
}
