// Privatized bins in shared memory, counted with atomics, but never added to `bins`:
// the block's work is lost when it ends.

#define BLOCK_X 256

__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    __shared__ unsigned int hist[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += BLOCK_X) hist[b] = 0u;
    __syncthreads();
    int i = blockIdx.x * BLOCK_X + threadIdx.x;
    if (i < n) atomicAdd(&hist[input[i]], 1u);
    __syncthreads();
}
