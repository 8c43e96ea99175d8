// Known wrong (conv2d): one thread per output, guarded by the image's bounds, but the
// mask's neighbours are read without a ghost-cell check: at every edge of the image the
// mask reaches rows and columns outside it (before the start of N at the top, past its
// end at the bottom, the neighbouring row at the left and right), whatever the image's
// size.
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
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i) {
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int r = row - MASK_RADIUS + i;
            int c = col - MASK_RADIUS + j;
            sum += N[r * Width + c] * Mc[i * MASK_WIDTH + j];
        }
    }
    P[row * Width + col] = sum;
}
