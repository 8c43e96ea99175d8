// Known wrong (matmul-tiled): the tile of M is a flat __shared__ array indexed with Width as
// its row stride, where its rows are TILE_WIDTH long: from the second row on, threads store
// and read far past the end of Ms. On a GPU the access leaves the block's shared memory and
// stops the kernel; the report names __shared__ memory, the thread and the line (memcheck,
// run once by the grader where compute-sanitizer is installed).
#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH * TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH * TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty;
    int col = blockIdx.x * TILE_WIDTH + tx;
    float sum = 0.0f;
    for (int m = 0; m < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++m) {
        int c = m * TILE_WIDTH + tx, r = m * TILE_WIDTH + ty;
        Ms[ty * Width + tx] = (row < Width && c < Width) ? M[row * Width + c] : 0.0f;
        Ns[ty * TILE_WIDTH + tx] = (r < Width && col < Width) ? N[r * Width + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty * Width + k] * Ns[k * TILE_WIDTH + tx];
        __syncthreads();
    }
    if (row < Width && col < Width)
        P[row * Width + col] = sum;
}
