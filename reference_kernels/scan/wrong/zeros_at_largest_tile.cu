// Writes 0 with the largest TILE_X the lab accepts: every prefix sum is wrong.

#define BLOCK_X 1024
#define TILE_X (64 * BLOCK_X)

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    int start = blockIdx.x * TILE_X;
    for (int i = start + threadIdx.x; i < n && i < start + TILE_X; i += BLOCK_X) output[i] = 0.0f;
    if (threadIdx.x == 0) sums[blockIdx.x] = 0.0f;
}

__global__ void scan_sums(float* sums, int m) {}

__global__ void add_sums(float* output, const float* sums, int n) {}
