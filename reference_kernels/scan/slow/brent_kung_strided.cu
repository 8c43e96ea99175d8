// Slow but right (scan): the course's Brent-Kung scan, each block of 512 threads scanning
// a tile of 1024 floats in place in shared memory. In its reduction tree thread t adds
// into XY[(t + 1) * 2 * stride - 1], and in the distribution tree into
// XY[(t + 1) * 2 * stride - 1 + stride]: the lanes of a warp are 2 * stride words apart,
// so from stride 16 on every one of them is in the same bank, and the accesses before
// are 2-, 4- and 8-way conflicts. Keeping the working threads' words together (or
// padding the index every 32 words) would leave none.

#define BLOCK_X 512
#define TILE_X (2 * BLOCK_X)

// The inclusive scan of the tile in XY; every thread calls it.
__device__ void brent_kung(float* XY)
{
    const int t = threadIdx.x;
    for (int stride = 1; stride <= BLOCK_X; stride *= 2) {
        __syncthreads();
        int index = (t + 1) * 2 * stride - 1;
        if (index < TILE_X) XY[index] += XY[index - stride];
    }
    for (int stride = TILE_X / 4; stride > 0; stride /= 2) {
        __syncthreads();
        int index = (t + 1) * 2 * stride - 1;
        if (index + stride < TILE_X) XY[index + stride] += XY[index];
    }
    __syncthreads();
}

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    __shared__ float XY[TILE_X];
    int i = blockIdx.x * TILE_X + threadIdx.x;
    XY[threadIdx.x] = i < n ? input[i] : 0.0f;
    XY[threadIdx.x + BLOCK_X] = i + BLOCK_X < n ? input[i + BLOCK_X] : 0.0f;
    brent_kung(XY);
    if (i < n) output[i] = XY[threadIdx.x];
    if (i + BLOCK_X < n) output[i + BLOCK_X] = XY[threadIdx.x + BLOCK_X];
    if (threadIdx.x == 0) sums[blockIdx.x] = XY[TILE_X - 1];
}

__global__ void scan_sums(float* sums, int m)
{
    __shared__ float XY[TILE_X];
    int t = threadIdx.x;
    XY[t] = t < m ? sums[t] : 0.0f;
    XY[t + BLOCK_X] = t + BLOCK_X < m ? sums[t + BLOCK_X] : 0.0f;
    brent_kung(XY);
    if (t < m) sums[t] = XY[t];
    if (t + BLOCK_X < m) sums[t + BLOCK_X] = XY[t + BLOCK_X];
}

__global__ void add_sums(float* output, const float* sums, int n)
{
    int i = blockIdx.x * TILE_X + threadIdx.x;
    if (blockIdx.x == 0) return;
    float before = sums[blockIdx.x - 1];
    if (i < n) output[i] += before;
    if (i + BLOCK_X < n) output[i + BLOCK_X] += before;
}
