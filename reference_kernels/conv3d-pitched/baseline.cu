// conv3d-pitched baseline: one thread per output element (8 x 8 x 8 blocks), global
// memory only. Rows are padded: the row stride in floats is pitch / sizeof(float),
// and the input and output pitches differ.

#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];  // [z][y][x]

__global__ void conv3d_pitched(const float* N, float* P, size_t pitchN, size_t pitchP, int W,
                               int H, int D)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= W || y >= H || z >= D) return;

    int sN = (int)(pitchN / sizeof(float));
    int sP = (int)(pitchP / sizeof(float));
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i) {
        int zz = z - MASK_RADIUS + i;
        if (zz < 0 || zz >= D) continue;
        for (int j = 0; j < MASK_WIDTH; ++j) {
            int yy = y - MASK_RADIUS + j;
            if (yy < 0 || yy >= H) continue;
            for (int k = 0; k < MASK_WIDTH; ++k) {
                int xx = x - MASK_RADIUS + k;
                if (xx < 0 || xx >= W) continue;
                sum += N[(zz * H + yy) * sN + xx] * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
            }
        }
    }
    P[(z * H + y) * sP + x] = sum;
}
