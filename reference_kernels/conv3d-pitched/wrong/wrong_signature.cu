// Known wrong (conv3d-pitched): the pitches declared int (4 bytes) where the lab passes
// size_t (8 bytes): the interface check stops it before any case runs.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];

__global__ void conv3d_pitched(const float* N, float* P, int pitchN, int pitchP, int W, int H,
                               int D)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    int sN = pitchN / (int)sizeof(float), sP = pitchP / (int)sizeof(float);
    if (x >= W || y >= H || z >= D) return;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j)
            for (int k = 0; k < MASK_WIDTH; ++k) {
                int zz = z - MASK_RADIUS + i, yy = y - MASK_RADIUS + j, xx = x - MASK_RADIUS + k;
                if (xx < 0 || xx >= W || yy < 0 || yy >= H || zz < 0 || zz >= D) continue;
                sum += N[(zz * H + yy) * sN + xx] * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
            }
    P[(z * H + y) * sP + x] = sum;
}
