// Known wrong (matmul-tiled), a cheat: a correct tiled kernel at every graded size that
// rounds M and N to TF32 (10 bits of mantissa, as tensor cores do; here with integer
// arithmetic) when Width >= 2048, a size only the timing uses. Its timed outputs pass
// the element-by-element bound there, but not the precision test: no speed points.
#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__device__ float tf32(float x)
{
    return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH];
    const bool timed = Width >= 2048;
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty;
    int col = blockIdx.x * TILE_WIDTH + tx;
    float sum = 0.0f;
    for (int t = 0; t < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++t) {
        int mc = t * TILE_WIDTH + tx, nr = t * TILE_WIDTH + ty;
        float m = (row < Width && mc < Width) ? M[row * Width + mc] : 0.0f;
        float n = (col < Width && nr < Width) ? N[nr * Width + col] : 0.0f;
        Ms[ty][tx] = timed ? tf32(m) : m;
        Ns[ty][tx] = timed ? tf32(n) : n;
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty][k] * Ns[k][tx];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
