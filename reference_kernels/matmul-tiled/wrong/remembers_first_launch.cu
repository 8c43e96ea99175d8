// Known wrong (matmul-tiled), a cheat: computes the product at the timed size once, notes
// that in a __device__ variable (the last block to finish sets it), and returns at once on
// every later launch of that size, leaving the first result in P. Every timed launch
// draws fresh inputs and poisons P first, so the second one is caught.
#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__device__ int done_width = 0;
__device__ unsigned int finished = 0;

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    if (Width >= 2048 && done_width == Width) return;
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty;
    int col = blockIdx.x * TILE_WIDTH + tx;
    float sum = 0.0f;
    for (int t = 0; t < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++t) {
        int mc = t * TILE_WIDTH + tx, nr = t * TILE_WIDTH + ty;
        Ms[ty][tx] = (row < Width && mc < Width) ? M[row * Width + mc] : 0.0f;
        Ns[ty][tx] = (col < Width && nr < Width) ? N[nr * Width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty][k] * Ns[k][tx];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
    if (Width >= 2048 && tx == 0 && ty == 0) {
        __threadfence();
        if (atomicAdd(&finished, 1u) == gridDim.x * gridDim.y - 1) done_width = Width;
    }
}
