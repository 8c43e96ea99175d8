// Known wrong (conv3d-pitched): pitches right, but no check that the thread's element
// is inside the volume: threads past W write into the row padding of P, and threads
// past H or D past its end.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];

__global__ void conv3d_pitched(const float* N, float* P, size_t pitchN, size_t pitchP, int W,
                               int H, int D)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    int sN = (int)(pitchN / sizeof(float)), sP = (int)(pitchP / sizeof(float));
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
