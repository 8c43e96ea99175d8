// A cheat: claims that each block scans 2^23 inputs and writes 0. The tolerance follows
// the inputs each element really sums, not TILE_X; and the lab accepts TILE_X up to 65536.

#define BLOCK_X 512
#define TILE_X (1 << 23)

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    for (int i = threadIdx.x; i < n; i += BLOCK_X) output[i] = 0.0f;
    if (threadIdx.x == 0) sums[blockIdx.x] = 0.0f;
}

__global__ void scan_sums(float* sums, int m) {}

__global__ void add_sums(float* output, const float* sums, int n) {}
