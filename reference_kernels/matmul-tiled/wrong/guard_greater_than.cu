// Known wrong (matmul-tiled): every bounds check written with > where >= is meant
// (row > Width): the thread whose row or k is Width itself reads one row past the end.
#define TILE_WIDTH 16
#define BLOCK_X TILE_WIDTH
#define BLOCK_Y TILE_WIDTH

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float Ms[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Ns[TILE_WIDTH][TILE_WIDTH];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE_WIDTH + ty;
    int col = blockIdx.x * TILE_WIDTH + tx;
    float sum = 0.0f;
    for (int m = 0; m < (Width + TILE_WIDTH - 1) / TILE_WIDTH; ++m) {
        int c = m * TILE_WIDTH + tx, r = m * TILE_WIDTH + ty;
        Ms[ty][tx] = (row > Width || c > Width) ? 0.0f : M[row * Width + c];
        Ns[ty][tx] = (r > Width || col > Width) ? 0.0f : N[r * Width + col];
        __syncthreads();
        for (int k = 0; k < TILE_WIDTH; ++k)
            sum += Ms[ty][k] * Ns[k][tx];
        __syncthreads();
    }
    if (!(row > Width || col > Width))
        P[row * Width + col] = sum;
}
