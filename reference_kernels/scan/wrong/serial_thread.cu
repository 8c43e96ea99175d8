// Known wrong (scan): thread 0 of each block scans the block's whole tile alone, one input
// after another, and so do the totals' scan and the add; the other threads return. With
// the largest tile the lab takes, one thread makes every load of case n-1024, the profile
// case. Its sums are right; it breaks the lab's rule that no thread makes more than 1/8
// of the loads.
#define BLOCK_X 512
#define TILE_X 65536

__global__ void scan(const float* input, float* output, float* sums, int n)
{
    if (threadIdx.x != 0) return;
    size_t start = (size_t)blockIdx.x * TILE_X;
    float running = 0.0f;
    for (size_t j = start; j < start + TILE_X && j < (size_t)n; ++j) {
        running += input[j];
        output[j] = running;
    }
    sums[blockIdx.x] = running;
}

__global__ void scan_sums(float* sums, int m)
{
    if (threadIdx.x != 0) return;
    float running = 0.0f;
    for (int j = 0; j < m; ++j) {
        running += sums[j];
        sums[j] = running;
    }
}

__global__ void add_sums(float* output, const float* sums, int n)
{
    if (threadIdx.x != 0 || blockIdx.x == 0) return;
    size_t start = (size_t)blockIdx.x * TILE_X;
    float before = sums[blockIdx.x - 1];
    for (size_t j = start; j < start + TILE_X && j < (size_t)n; ++j) output[j] += before;
}
