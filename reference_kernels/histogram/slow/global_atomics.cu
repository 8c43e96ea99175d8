// Slow but right (histogram): each thread counts 4 bytes, a block's threads reading
// consecutive bytes together (coalesced), but every count is an atomicAdd on the bins in
// global memory: threads all over the GPU queue on the same 256 words. The reference
// counts into a private copy of the bins in shared memory and adds it to `bins` once
// per block.

#define BLOCK_X 256
#define TILE_X (4 * BLOCK_X)

__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    int start = blockIdx.x * TILE_X + threadIdx.x;
    for (int i = start; i < start + TILE_X && i < n; i += BLOCK_X)
        atomicAdd(&bins[input[i]], 1u);
}
