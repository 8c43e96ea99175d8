// Slow but right (conv2d): the course's naive kernel with the row from threadIdx.x and
// the column from threadIdx.y, each block's square of threads turned round. The lanes
// of a warp hold 16 rows of the image, 16 pixels apart in the column they share: each
// load of N touches a sector per row where the right layout's touch 2 or 3, and each
// store to P too. Every case passes; the profile shows the loads uncoalesced.

#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    // the block's square of threads (16 x 16) covers its tile either way round
    int row = blockIdx.y * blockDim.y + threadIdx.x;
    int col = blockIdx.x * blockDim.x + threadIdx.y;
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
