// Known wrong (conv3d): written for 4 x 4 x 4 blocks; the file defines BLOCK_X and
// BLOCK_Y but not BLOCK_Z, so the grader's default BLOCK_Z 8 runs, and the blocks,
// stepped by 4 along z, cover only the first half or so of the volume's depth.

#define TILE 4
#define BLOCK_X TILE
#define BLOCK_Y TILE
#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];  // [z][y][x]

__global__ void conv3d(const float* N, float* P, int W, int H, int D)
{
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    int z = blockIdx.z * TILE + threadIdx.z;
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
