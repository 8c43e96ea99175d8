// Slow but right (conv3d): the naive kernel with the depth from threadIdx.x and the
// column from threadIdx.z, each block's cube of threads (8 x 8 x 8) turned round. The
// lanes of a warp hold 8 planes and 4 rows of the volume: a load of N touches a sector
// per lane where the right layout's touch 2 or 3, and each store to P too.

#ifndef MASK_WIDTH
#define MASK_WIDTH 5
#endif
#define MASK_RADIUS (MASK_WIDTH / 2)

__constant__ float Mc[MASK_WIDTH * MASK_WIDTH * MASK_WIDTH];  // [z][y][x]

__global__ void conv3d(const float* N, float* P, int W, int H, int D)
{
    // the cube of threads covers its block of the volume either way round
    int x = blockIdx.x * blockDim.x + threadIdx.z;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.x;
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
