// Known wrong (conv2d): an unguarded #define MASK_WIDTH 5. Where the grader sets 5 the
// two agree; where it sets 3 or 7 (hidden cases) the file replaces the grader's value.
#define MASK_WIDTH 5

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH];

__global__ void conv2d(const float* N, float* P, int Width, int Height)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= Height || col >= Width) return;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int r = row - MASK_WIDTH / 2 + i, c = col - MASK_WIDTH / 2 + j;
            if (r >= 0 && r < Height && c >= 0 && c < Width)
                sum += N[r * Width + c] * Mc[i * MASK_WIDTH + j];
        }
    P[row * Width + col] = sum;
}
