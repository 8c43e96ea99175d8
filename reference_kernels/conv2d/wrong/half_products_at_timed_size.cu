// Known wrong (conv2d), a cheat: the course's kernel at every graded size, and at
// 4096 x 4096 or more, a size only the timing uses, each product taken in half precision
// (__hmul of the pixel and the mask value as __half), added in float. The timed outputs
// fail the precision test: no speed points. The CPU backend, which times nothing, grades
// it as a GPU grades its cases.
#include <cuda_fp16.h>

#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= Height || col >= Width) return;
    const bool timed = (long long)Width * Height >= 4096LL * 4096;

    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i) {
        int r = row - MASK_RADIUS + i;
        if (r < 0 || r >= Height) continue;
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int c = col - MASK_RADIUS + j;
            if (c < 0 || c >= Width) continue;
            float n = N[r * Width + c], m = Mc[i * MASK_WIDTH + j];
            sum += timed ? __half2float(__hmul(__float2half(n), __float2half(m))) : n * m;
        }
    }
    P[row * Width + col] = sum;
}
