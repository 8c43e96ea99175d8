// Known wrong (reduction), a cheat: serial_memcpy_reads.cu, thread 0 of each block adding
// the block's whole tile alone, but copying it with __builtin_memcpy of a constant size,
// which g++ makes moves that no hook of the CPU model sees: one thread's 400000 byte
// loads would go uncounted, and the lab's rule that no thread makes more than 1/8 of the
// loads unbroken. The CPU backend's census build refuses such a copy, with its line, and
// a GPU grading refuses it the same way.
#define BLOCK_X 256
#define TILE_X 65536
#define CHUNK 64

__global__ void reduction(const float* input, float* output, int n)
{
    if (threadIdx.x != 0) return;
    size_t start = (size_t)blockIdx.x * TILE_X;
    size_t end = start + TILE_X < (size_t)n ? start + TILE_X : (size_t)n;
    float buf[CHUNK];
    float sum = 0.0f;
    size_t j = start;
    for (; j + CHUNK <= end; j += CHUNK) {
        __builtin_memcpy(buf, &input[j], sizeof buf);
        for (int i = 0; i < CHUNK; ++i) sum += buf[i];
    }
    for (; j < end; ++j) sum += input[j];
    output[blockIdx.x] = sum;
}
