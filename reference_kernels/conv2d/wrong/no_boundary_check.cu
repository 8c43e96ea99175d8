// Known wrong (conv2d): ghost cells are handled, but threads past the right and bottom
// edges of the image still store their result: past the end of P, or into the first
// columns of the next row.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
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
