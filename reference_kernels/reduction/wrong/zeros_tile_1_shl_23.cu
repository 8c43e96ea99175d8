// A cheat: claims that each block sums 2^23 inputs and writes 0. The tolerance follows
// the inputs each sum really adds, not TILE_X; and the lab accepts TILE_X up to 65536.

#define BLOCK_X 256
#define TILE_X (1 << 23)

__global__ void reduction(const float* input, float* output, int n)
{
    if (threadIdx.x == 0) output[blockIdx.x] = 0.0f;
}
