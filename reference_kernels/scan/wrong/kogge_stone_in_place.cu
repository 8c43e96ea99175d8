// Kogge-Stone in one buffer, without double buffering: in a step, thread t reads
// XY[t - stride] while thread t - stride may already have added to it in the same step
// (a race between reading and writing, with no barrier between them).

#define BLOCK_X 1024
#define TILE_X BLOCK_X

__device__ float kogge_stone(float v, float* XY)
{
    const int t = threadIdx.x;
    XY[t] = v;
    for (int stride = 1; stride < BLOCK_X; stride *= 2) {
        __syncthreads();
        if (t >= stride) XY[t] += XY[t - stride];
    }
    __syncthreads();
    return XY[t];
}

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    __shared__ float XY[BLOCK_X];
    int i = blockIdx.x * BLOCK_X + threadIdx.x;
    float v = kogge_stone(i < n ? input[i] : 0.0f, XY);
    if (i < n) output[i] = v;
    if (threadIdx.x == BLOCK_X - 1) sums[blockIdx.x] = v;
}

__global__ void scan_sums(float* sums, int m)
{
    __shared__ float XY[BLOCK_X];
    int t = threadIdx.x;
    float v = kogge_stone(t < m ? sums[t] : 0.0f, XY);
    if (t < m) sums[t] = v;
}

__global__ void add_sums(float* output, const float* sums, int n)
{
    int i = blockIdx.x * BLOCK_X + threadIdx.x;
    if (blockIdx.x > 0 && i < n) output[i] += sums[blockIdx.x - 1];
}
