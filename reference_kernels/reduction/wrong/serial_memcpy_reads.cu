// Known wrong (reduction): serial_thread.cu, thread 0 of each block adding the block's
// whole tile alone, but copying it with memcpy into a local buffer, 64 floats at a time,
// and adding the buffer. Its sums are right; a GPU copies byte by byte, so one thread makes
// 262144 of the 400000 byte loads of case n-100000, the profile case, and breaks the lab's
// rule that no thread makes more than 1/8 of the loads. The CPU model once missed a copy
// (g++ makes it moves or a call of the C library that no hook sees): 0 loads, no finding.
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
    for (size_t j = start; j < end; j += CHUNK) {
        size_t count = end - j < CHUNK ? end - j : CHUNK;
        memcpy(buf, &input[j], count * sizeof(float));
        for (size_t i = 0; i < count; ++i) sum += buf[i];
    }
    output[blockIdx.x] = sum;
}
