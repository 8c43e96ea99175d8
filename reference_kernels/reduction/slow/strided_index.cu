// Slow but right (reduction): interleaved addressing with a strided index. Each thread
// adds its two inputs as it loads them; then at stride s thread t adds
// partial[2 * s * t + s] into partial[2 * s * t]: the working threads are together, but
// their words are 2 * s apart, so the lanes of a warp fall in the same banks: 2-way
// conflicts at the first step, 16-way by the fourth. Sequential addressing
// (partial[t] += partial[t + s] for t < s) reads consecutive words.

#define BLOCK_X 256
#define TILE_X (2 * BLOCK_X)

__global__ void reduction(const float* input, float* output, int n)
{
    __shared__ float partial[BLOCK_X];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * TILE_X + t;
    float first = i < (unsigned int)n ? input[i] : 0.0f;
    float second = i + BLOCK_X < (unsigned int)n ? input[i + BLOCK_X] : 0.0f;
    partial[t] = first + second;
    for (unsigned int s = 1; s < BLOCK_X; s *= 2) {
        __syncthreads();
        unsigned int index = 2 * s * t;
        if (index < BLOCK_X) partial[index] += partial[index + s];
    }
    if (t == 0) output[blockIdx.x] = partial[0];
}
