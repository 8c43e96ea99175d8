// Known wrong (conv3d): written for 4 x 4 x 4 blocks (TILE_SIZE 4) without saying so:
// the grader launches its default 8 x 8 x 8 blocks, and the launch warning names every
// axis of a 3D launch, z too.

#define TILE_SIZE 4
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];  // [z][y][x]

__global__ void conv3d(const float* N, float* P, int W, int H, int D)
{
    int x = blockIdx.x * TILE_SIZE + threadIdx.x;
    int y = blockIdx.y * TILE_SIZE + threadIdx.y;
    int z = blockIdx.z * TILE_SIZE + threadIdx.z;
    if (x >= W || y >= H || z >= D) return;

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
                sum += N[(zz * H + yy) * W + xx] * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
            }
        }
    }
    P[(z * H + y) * W + x] = sum;
}
