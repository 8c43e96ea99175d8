// Known wrong (conv3d): no check that the thread's element is inside the volume.
// Threads of the last blocks (20 x 18 x 12 with 8 x 8 x 8 blocks) store past the end of
// P or into the wrong row and plane.
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];

__global__ void conv3d(const float* N, float* P, int W, int H, int D)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j)
            for (int k = 0; k < MASK_WIDTH; ++k) {
                int zz = z - MASK_RADIUS + i, yy = y - MASK_RADIUS + j, xx = x - MASK_RADIUS + k;
                if (xx < 0 || xx >= W || yy < 0 || yy >= H || zz < 0 || zz >= D) continue;
                sum += N[(zz * H + yy) * W + xx] * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
            }
    P[(z * H + y) * W + x] = sum;
}
