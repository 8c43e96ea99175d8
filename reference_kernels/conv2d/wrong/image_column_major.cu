// Known wrong (conv2d): the image read and written column-major (element (r, c) at
// c * Height + r), where the lab's images are row-major (r * Width + c); the mask is
// indexed right. For a square image this gives the result of the mask with its axes
// exchanged; for any other, something further off.
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
        int r = row - MASK_RADIUS + i;
        if (r < 0 || r >= Height) continue;
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int c = col - MASK_RADIUS + j;
            if (c < 0 || c >= Width) continue;
            sum += N[c * Height + r] * Mc[i * MASK_WIDTH + j];
        }
    }
    P[col * Height + row] = sum;
}
