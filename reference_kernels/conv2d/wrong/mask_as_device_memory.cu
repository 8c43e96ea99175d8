// Known wrong (conv2d): a correct convolution, but the mask is declared __device__
// (global memory) instead of __constant__, which is this lab's rule.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__device__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= Height || col >= Width) return;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i) {
        int r = row - MASK_RADIUS + i;
        if (r < 0 || r >= Height) continue;
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int c = col - MASK_RADIUS + j;
            if (c < 0 || c >= Width) continue;
            sum += N[r * Width + c] * Mc[i * MASK_WIDTH + j];
        }
    }
    P[row * Width + col] = sum;
}
