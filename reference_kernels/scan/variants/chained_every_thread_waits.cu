// Variant: the single-pass scan of chained_by_block_index.cu, where every thread of block
// b waits for block b - 1's flag and reads its total itself, with no thread handing it on
// through shared memory. On a GPU each thread spins on the flag; the CPU backend once made
// each of them load it 4096 times before it gave its turn away, and such a scan of 1024
// blocks timed out there (docs/precision.md).

#define BLOCK_X 512
#define TILE_X (2 * BLOCK_X)
#define MAX_BLOCKS 1024  // the lab's largest n is 1024 tiles

__device__ volatile float inclusive[MAX_BLOCKS];  // the sum of tiles 0 .. b
__device__ volatile int published[MAX_BLOCKS];    // 1 once inclusive[b] holds it

// The inclusive scan of XY[0 .. TILE_X) in place; every thread of the block calls it.
__device__ void brent_kung(float* XY)
{
    for (int stride = 1; stride <= BLOCK_X; stride *= 2) {
        __syncthreads();
        int i = (threadIdx.x + 1) * 2 * stride - 1;
        if (i < TILE_X) XY[i] += XY[i - stride];
    }
    for (int stride = TILE_X / 4; stride > 0; stride /= 2) {
        __syncthreads();
        int i = (threadIdx.x + 1) * 2 * stride - 1;
        if (i + stride < TILE_X) XY[i + stride] += XY[i];
    }
    __syncthreads();
}

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    __shared__ float XY[TILE_X];
    const int tile = blockIdx.x;
    size_t start = (size_t)tile * TILE_X;
    for (int k = threadIdx.x; k < TILE_X; k += BLOCK_X) {
        XY[k] = start + k < (size_t)n ? input[start + k] : 0.0f;
    }
    brent_kung(XY);
    float before = 0.0f;  // the sum of every tile before this one
    if (tile > 0) {
        while (published[tile - 1] == 0) {}  // every thread waits
        __threadfence();
        before = inclusive[tile - 1];
    }
    if (threadIdx.x == 0) {
        inclusive[tile] = before + XY[TILE_X - 1];
        __threadfence();  // the sum is visible before its flag
        published[tile] = 1;
    }
    for (int k = threadIdx.x; k < TILE_X; k += BLOCK_X) {
        if (start + k < (size_t)n) output[start + k] = XY[k] + before;
    }
}

__global__ void scan_sums(float* sums, int m) {}

__global__ void add_sums(float* output, const float* sums, int n)
{
    if (threadIdx.x == 0) published[blockIdx.x] = 0;  // every scan block has finished
}
