// Privatized bins, but no __syncthreads() between counting and merging: a thread adds
// its bins to `bins` while other threads of its block are still counting into them.

#define BLOCK_X 256
#define TILE_X (BLOCK_X * 8)

__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    __shared__ unsigned int hist[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += BLOCK_X) hist[b] = 0u;
    __syncthreads();
    for (int k = 0; k < TILE_X / BLOCK_X; ++k) {
        int i = blockIdx.x * TILE_X + k * BLOCK_X + threadIdx.x;
        if (i < n) atomicAdd(&hist[input[i]], 1u);
    }
    // missing: __syncthreads();
    for (int b = threadIdx.x; b < NUM_BINS; b += BLOCK_X) {
        if (hist[b]) atomicAdd(&bins[b], hist[b]);
    }
}
