// Known wrong (reduction): serial_thread.cu, whose other threads load inputs they need
// nothing of, seven times thread 0's loads between them, and throw the sums away: thread 0
// makes 1/8 of the kernel's own loads, but all of the reference's. Its sums are right.
#define BLOCK_X 256
#define TILE_X 65536

__global__ void reduction(const float* input, float* output, int n)
{
    size_t start = (size_t)blockIdx.x * TILE_X;
    if (threadIdx.x != 0) {
        float sink = 0.0f;
        for (size_t j = start + threadIdx.x; j < start + 8 * TILE_X; j += BLOCK_X - 1)
            sink += input[j % (size_t)n];
        if (sink == 1234.5f) output[blockIdx.x] = sink;  // never: it keeps the loads
        return;
    }
    float sum = 0.0f;
    for (size_t j = start; j < start + TILE_X && j < (size_t)n; ++j) sum += input[j];
    output[blockIdx.x] = sum;
}
