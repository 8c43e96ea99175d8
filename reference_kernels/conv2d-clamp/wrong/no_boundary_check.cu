// Known wrong (conv2d-clamp): correct clamping, but threads past the right and bottom
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
        int r = min(max(row - MASK_RADIUS + i, 0), Height - 1);
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int c = min(max(col - MASK_RADIUS + j, 0), Width - 1);
            sum += N[r * Width + c] * Mc[i * MASK_WIDTH + j];
        }
    }
    P[row * Width + col] = sum;
}
