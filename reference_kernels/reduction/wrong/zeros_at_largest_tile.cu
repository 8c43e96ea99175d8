// Writes 0 with the largest TILE_X the lab accepts: every sum is wrong.

#define BLOCK_X 1024
#define TILE_X (64 * BLOCK_X)

__global__ void reduction(const float* input, float* output, int n)
{
    if (threadIdx.x == 0) output[blockIdx.x] = 0.0f;
}
