// Known wrong (conv3d-pitched): the pitches used as row strides in floats, but they are
// in bytes, so every row after the first is four times too far: reads and writes go
// far past the ends of N and P.
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
    if (x >= W || y >= H || z >= D) return;
    float sum = 0.0f;
    for (int i = 0; i < MASK_WIDTH; ++i)
        for (int j = 0; j < MASK_WIDTH; ++j)
            for (int k = 0; k < MASK_WIDTH; ++k) {
                int zz = z - MASK_RADIUS + i, yy = y - MASK_RADIUS + j, xx = x - MASK_RADIUS + k;
                if (xx < 0 || xx >= W || yy < 0 || yy >= H || zz < 0 || zz >= D) continue;
                sum += N[(zz * H + yy) * pitchN + xx] * Mc[(i * MASK_WIDTH + j) * MASK_WIDTH + k];
            }
    P[(z * H + y) * pitchP + x] = sum;
}
