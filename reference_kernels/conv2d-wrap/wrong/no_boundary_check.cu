// Known wrong (conv2d-wrap): correct wrapping, but threads past the right and bottom
// edges still store, past the end of P or into the next row.
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
        int r = ((row - MASK_RADIUS + i) % Height + Height) % Height;
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int c = ((col - MASK_RADIUS + j) % Width + Width) % Width;
            sum += N[r * Width + c] * Mc[i * MASK_WIDTH + j];
        }
    }
    P[row * Width + col] = sum;
}
