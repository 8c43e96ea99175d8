// Known wrong (scan), a cheat: an empty scan_sums, with TILE_X at the lab's largest (65536).
// With 2 blocks scan_sums has nothing to do (add_sums reads sums[0] alone), so it passed
// every public case while they had at most 2; n-200003 has 4 even at this tile, and fails.
#define BLOCK_X 1024
#define ITEMS 64
#define TILE_X (BLOCK_X * ITEMS)

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    __shared__ float part[BLOCK_X];
    size_t start = (size_t)blockIdx.x * TILE_X + (size_t)threadIdx.x * ITEMS;
    float run = 0.0f;
    for (int k = 0; k < ITEMS; ++k) {
        size_t i = start + k;
        if (i < (size_t)n) run += input[i];
    }
    part[threadIdx.x] = run;
    __syncthreads();
    // Hillis-Steele scan of the thread totals
    for (int off = 1; off < BLOCK_X; off <<= 1) {
        float u = threadIdx.x >= off ? part[threadIdx.x - off] : 0.0f;
        __syncthreads();
        part[threadIdx.x] += u;
        __syncthreads();
    }
    float before = threadIdx.x ? part[threadIdx.x - 1] : 0.0f;
    for (int k = 0; k < ITEMS; ++k) {
        size_t i = start + k;
        if (i < (size_t)n) { before += input[i]; output[i] = before; }
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = part[BLOCK_X - 1];
}

__global__ void scan_sums(float* sums, int m) { }   // the lab's second kernel: skipped

__global__ void add_sums(float* output, const float* sums, int n)
{
    if (blockIdx.x == 0) return;
    const float add = sums[blockIdx.x - 1];
    size_t start = (size_t)blockIdx.x * TILE_X;
    for (int k = 0; k < ITEMS; ++k) {
        size_t i = start + (size_t)k * BLOCK_X + threadIdx.x;
        if (i < (size_t)n) output[i] += add;
    }
}
