// Known wrong (conv2d): the loops run over MASK_WIDTH, but the halo offset is written as
// the number 2, right only for MASK_WIDTH 5. Every failing case is rectangular and the
// square ones pass, yet squareness is not the cause: the mask size is.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define RADIUS 2

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= Height || col >= Width) return;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int r = row - RADIUS + i, c = col - RADIUS + j;
            if (r >= 0 && r < Height && c >= 0 && c < Width)
                sum += N[r * Width + c] * Mc[i * MASK_WIDTH + j];
        }
    P[row * Width + col] = sum;
}
