// Known wrong (histogram), a cheat: right at every graded size, with privatized bins and
// atomics, but it returns at once when n > 4 Mi bytes, past the largest case (4000037) and
// short of the size only the timing uses (32 Mi). The bins arrive zeroed, so a skipped
// launch leaves them 0; every timed launch is checked, and that costs the speed points.

#define BLOCK_X 256

__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    if (n > (1 << 22)) return;
    __shared__ unsigned int hist[NUM_BINS];
    for (int b = threadIdx.x; b < NUM_BINS; b += BLOCK_X) hist[b] = 0u;
    __syncthreads();
    int i = blockIdx.x * BLOCK_X + threadIdx.x;
    if (i < n) atomicAdd(&hist[input[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < NUM_BINS; b += BLOCK_X)
        if (hist[b]) atomicAdd(&bins[b], hist[b]);
}
