// Known wrong (conv2d): ghost cells tested on the flat index only. A column just past
// the left or right edge lands in the neighbouring row instead of counting as 0, so
// the outputs within MASK_WIDTH/2 of the left and right edges are wrong.
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
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int idx = (row - MASK_RADIUS + i) * Width + (col - MASK_RADIUS + j);
            if (idx >= 0 && idx < Width * Height)
                sum += N[idx] * Mc[i * MASK_WIDTH + j];
        }
    P[row * Width + col] = sum;
}
