// Known wrong (conv3d): ghost cells tested on the flat index only. A neighbour just past
// the left or right face (or the top or bottom of a plane) lands in another row or
// plane instead of counting as 0: only the outputs near the faces are wrong.
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
    if (x >= W || y >= H || z >= D) return;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j)
            for (int k = 0; k < MASK_WIDTH; ++k) {
                int zz = z - MASK_RADIUS + i, yy = y - MASK_RADIUS + j, xx = x - MASK_RADIUS + k;
                int idx = (zz * H + yy) * W + xx;
                if (idx < 0 || idx >= W * H * D) continue;
                sum += N[idx] * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
            }
    P[(z * H + y) * W + x] = sum;
}
