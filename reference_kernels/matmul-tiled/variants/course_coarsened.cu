// Variant for bench/tune_references.py: the design of the course notes' best tiled
// kernel, written for comparison (the notes measured 14.1 TFLOP/s at n = 4096 on the
// H200). 32 x 32 tiles in padded shared memory, 16 x 16 threads, 2 x 2 outputs per
// thread, loads that read 0 past the edge.

#define BLOCK_X 16
#define BLOCK_Y 16
#define TILE_X 32
#define TILE_Y 32
#define CC_T 32  // tile edge
#define CC_C 2   // outputs per thread on each axis

__global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
matmul(const float* __restrict__ M, const float* __restrict__ N, float* __restrict__ P,
       int Width)
{
    __shared__ float Ms[CC_T][CC_T + 1];
    __shared__ float Ns[CC_T][CC_T + 1];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BLOCK_X + tx;
    const int row0 = blockIdx.y * CC_T, col0 = blockIdx.x * CC_T;
    float acc[CC_C][CC_C] = {{0.f, 0.f}, {0.f, 0.f}};

    for (int k0 = 0; k0 < Width; k0 += CC_T) {
        for (int l = tid; l < CC_T * CC_T; l += BLOCK_X * BLOCK_Y) {
            const int r = l / CC_T, c = l % CC_T;
            Ms[r][c] = (row0 + r < Width && k0 + c < Width) ? M[(row0 + r) * Width + k0 + c] : 0.f;
            Ns[r][c] = (k0 + r < Width && col0 + c < Width) ? N[(k0 + r) * Width + col0 + c] : 0.f;
        }
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < CC_T; ++k) {
            float a[CC_C], b[CC_C];
            for (int i = 0; i < CC_C; ++i) a[i] = Ms[ty * CC_C + i][k];
            for (int j = 0; j < CC_C; ++j) b[j] = Ns[k][tx * CC_C + j];
            for (int i = 0; i < CC_C; ++i)
                for (int j = 0; j < CC_C; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < CC_C; ++i)
        for (int j = 0; j < CC_C; ++j) {
            const int r = row0 + ty * CC_C + i, c = col0 + tx * CC_C + j;
            if (r < Width && c < Width) P[r * Width + c] = acc[i][j];
        }
}
