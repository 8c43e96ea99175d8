// Known wrong (matmul-tiled): the course's tiled kernel with its shared tiles held in half
// precision (__half), to halve the shared memory and its traffic; products and the sum
// are float. Each M and N value keeps 11 bits of its 24, so P is off by up to 2^-11 of
// its terms at every size: every case fails the precision test, on both backends.
#include <cuda_fp16.h>

#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ __half Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ __half Ns[TILE_WIDTH][TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty;
    int col = blockIdx.x * TILE_WIDTH + tx;
    float sum = 0.0f;
    for (int t = 0; t < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++t) {
        int mc = t * TILE_WIDTH + tx, nr = t * TILE_WIDTH + ty;
        Ms[ty][tx] = __float2half(row < Width && mc < Width ? M[row * Width + mc] : 0.0f);
        Ns[ty][tx] = __float2half(col < Width && nr < Width ? N[nr * Width + col] : 0.0f);
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += __half2float(Ms[ty][k]) * __half2float(Ns[k][tx]);
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
