// Variant: a single-pass scan whose blocks hand on their running totals. Block b scans its
// tile (Brent-Kung, 1024 elements per block of 512 threads), waits until block b - 1 has
// published the sum of everything before b's tile plus its own, adds that to its tile and
// publishes its own. scan_sums has nothing left to do, and add_sums only clears the flags
// for the next launch.
//
// Block b waits for block b - 1 by blockIdx: that ends because a GPU starts a grid's blocks
// in order, which CUDA does not promise (a block that takes its tile from an atomicAdd on a
// counter needs no such order). The CPU backend's passes start them in order too, its
// reversed pass a window of blocks at a time, parking a block that waits
// (docs/precision.md).

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
    __shared__ float before;  // the sum of every tile before this one
    const int tile = blockIdx.x;
    size_t start = (size_t)tile * TILE_X;
    for (int k = threadIdx.x; k < TILE_X; k += BLOCK_X) {
        XY[k] = start + k < (size_t)n ? input[start + k] : 0.0f;
    }
    brent_kung(XY);
    if (threadIdx.x == 0) {
        float carry = 0.0f;
        if (tile > 0) {
            while (published[tile - 1] == 0) {}
            __threadfence();
            carry = inclusive[tile - 1];
        }
        inclusive[tile] = carry + XY[TILE_X - 1];
        __threadfence();  // the sum is visible before its flag
        published[tile] = 1;
        before = carry;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < TILE_X; k += BLOCK_X) {
        if (start + k < (size_t)n) output[start + k] = XY[k] + before;
    }
}

__global__ void scan_sums(float* sums, int m) {}

__global__ void add_sums(float* output, const float* sums, int n)
{
    if (threadIdx.x == 0) published[blockIdx.x] = 0;  // every scan block has finished
}
