// Known wrong (conv2d): the halo offset written as the number 3, right only for the largest
// mask, 7: the cases with the smaller masks fail (issue 20: the hint said "a block too
// small" where whatever is fixed was sized for a larger mask).
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define RADIUS 3

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
