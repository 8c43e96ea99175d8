// scan reference: a work-efficient block scan, three kernels the grader launches in order.
//
//  - A block of 512 threads scans a tile of 2048 floats (TILE_X = 4 * BLOCK_X), so one
//    block of scan_sums covers the 512 block totals of the largest case (n = 1024^2).
//  - The tile goes through shared memory: coalesced loads (thread t reads t, t + 512,
//    ...), then each thread takes 4 consecutive floats as one float4 and scans them in
//    registers. The 512 thread totals are scanned by warps with shuffles (5 steps), the
//    16 warp totals by the first warp; each thread adds the sum before it to its 4 and
//    the tile goes back out with coalesced stores. O(n) additions in all, two barriers.
//  - scan_sums runs the same block scan on the block totals, in place; add_sums adds
//    sums[b - 1] to every element of block b > 0, coalesced.
// Elements past n load as 0 and are not stored, so every n >= 1 works.

#define BLOCK_X 512
#define ITEMS 4
#define TILE_X (BLOCK_X * ITEMS)
#define WARPS (BLOCK_X / 32)
#define FULL 0xffffffffu

// The inclusive scan of v across the block; the block's total in *total.
__device__ __forceinline__ float block_scan(float v, float* warp_sums, float* total)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int offset = 1; offset < 32; offset <<= 1) {
        float u = __shfl_up_sync(FULL, v, offset);
        if (lane >= offset) v += u;
    }
    if (lane == 31) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float w = lane < WARPS ? warp_sums[lane] : 0.0f;
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
            float u = __shfl_up_sync(FULL, w, offset);
            if (lane >= offset) w += u;
        }
        if (lane < WARPS) warp_sums[lane] = w;
    }
    __syncthreads();
    if (warp > 0) v += warp_sums[warp - 1];
    *total = warp_sums[WARPS - 1];
    return v;
}

// Scan `len` <= TILE_X floats from in to out (in may be out); returns the total.
__device__ __forceinline__ float scan_tile(const float* in, float* out, int len, float4* tile4,
                                           float* warp_sums)
{
    float* tile = reinterpret_cast<float*>(tile4);
    const int t = threadIdx.x;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int i = k * BLOCK_X + t;
        tile[i] = i < len ? in[i] : 0.0f;
    }
    __syncthreads();
    float4 a = tile4[t];
    a.y += a.x;
    a.z += a.y;
    a.w += a.z;
    float total;
    float before = block_scan(a.w, warp_sums, &total) - a.w;
    a.x += before;
    a.y += before;
    a.z += before;
    a.w += before;
    tile4[t] = a;  // every read of the tile happened before block_scan's barriers
    __syncthreads();
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int i = k * BLOCK_X + t;
        if (i < len) out[i] = tile[i];
    }
    return total;
}

__global__ void __launch_bounds__(BLOCK_X) scan(const float* input, float* output, float* sums,
                                                int n)
{
    __shared__ float4 tile4[BLOCK_X];
    __shared__ float warp_sums[WARPS];
    size_t start = (size_t)blockIdx.x * TILE_X;
    int len = (size_t)n - start < (size_t)TILE_X ? (int)((size_t)n - start) : TILE_X;
    float total = scan_tile(input + start, output + start, len, tile4, warp_sums);
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

__global__ void __launch_bounds__(BLOCK_X) scan_sums(float* sums, int m)
{
    __shared__ float4 tile4[BLOCK_X];
    __shared__ float warp_sums[WARPS];
    scan_tile(sums, sums, m, tile4, warp_sums);
}

__global__ void __launch_bounds__(BLOCK_X) add_sums(float* output, const float* sums, int n)
{
    if (blockIdx.x == 0) return;
    const float add = sums[blockIdx.x - 1];
    size_t start = (size_t)blockIdx.x * TILE_X;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        size_t i = start + k * BLOCK_X + threadIdx.x;
        if (i < (size_t)n) output[i] += add;
    }
}
