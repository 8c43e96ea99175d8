// Known wrong (reduction): thread 0 of each block adds the block's whole tile alone, one
// input after another, while the other threads return. With the largest tile the lab
// takes, one thread makes 65536 of the 100000 loads of case n-100000, the profile case.
// Its sums are right; it breaks the lab's rule that no thread makes more than 1/8 of the
// loads.
#define BLOCK_X 256
#define TILE_X 65536

__global__ void reduction(const float* input, float* output, int n)
{
    if (threadIdx.x != 0) return;
    size_t start = (size_t)blockIdx.x * TILE_X;
    float sum = 0.0f;
    for (size_t j = start; j < start + TILE_X && j < (size_t)n; ++j) sum += input[j];
    output[blockIdx.x] = sum;
}
