// Known wrong (conv2d-wrap): wraps with a plain %, but in C -1 % Width is -1, so ghost
// cells above and left of the image read before the start of N.
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
        int r = (row - MASK_RADIUS + i) % Height;
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int c = (col - MASK_RADIUS + j) % Width;
            sum += N[r * Width + c] * Mc[i * MASK_WIDTH + j];
        }
    }
    P[row * Width + col] = sum;
}
