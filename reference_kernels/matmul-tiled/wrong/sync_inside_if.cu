// Known wrong (matmul-tiled): the whole tile loop, barriers included, sits inside the
// bounds check, so threads outside P skip the __syncthreads() (and the loads the partial
// tiles need) while the rest of their block waits there.
#define TILE_WIDTH 16

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty, col = blockIdx.x * TILE_WIDTH + tx;
    if (row < Width && col < Width) {
        float acc = 0.0f;
        for (int m = 0; m < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++m) {
            int k = m * TILE_WIDTH;
            Ms[ty][tx] = k + tx < Width ? M[row * Width + k + tx] : 0.0f;
            Ns[ty][tx] = k + ty < Width ? N[(k + ty) * Width + col] : 0.0f;
            __syncthreads();
            for (int j = 0; j < TILE_WIDTH; ++j) acc += Ms[ty][j] * Ns[j][tx];
            __syncthreads();
        }
        P[row * Width + col] = acc;
    }
}
