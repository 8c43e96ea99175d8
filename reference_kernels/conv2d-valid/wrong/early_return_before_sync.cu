// Known wrong (conv2d-valid): the course's tiled kernel with the output check moved
// before the tile load. Threads without an output element leave without loading their
// share of the tile, so in the last, partial blocks the others compute from tile
// elements nobody loaded; and the __syncthreads() is not reached by every thread.
#define BLOCK_X 16
#define BLOCK_Y 16

__constant__ float c_kernel[4096];

__global__ void conv2d_valid(const float* input, float* output, int input_rows,
                             int input_cols, int kernel_rows, int kernel_cols,
                             int output_rows, int output_cols)
{
    extern __shared__ float tile[];
    int out_row = blockIdx.y * BLOCK_Y + threadIdx.y;
    int out_col = blockIdx.x * BLOCK_X + threadIdx.x;
    if (out_row >= output_rows || out_col >= output_cols) return;

    int tile_rows = BLOCK_Y + kernel_rows - 1, tile_cols = BLOCK_X + kernel_cols - 1;
    int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    for (int i = tid; i < tile_rows * tile_cols; i += BLOCK_X * BLOCK_Y) {
        int r = blockIdx.y * BLOCK_Y + i / tile_cols, c = blockIdx.x * BLOCK_X + i % tile_cols;
        tile[i] = (r < input_rows && c < input_cols) ? input[r * input_cols + c] : 0.0f;
    }
    __syncthreads();

    float sum = 0.0f;
    for (int kr = 0; kr < kernel_rows; ++kr)
        for (int kc = 0; kc < kernel_cols; ++kc)
            sum += tile[(threadIdx.y + kr) * tile_cols + threadIdx.x + kc] *
                   c_kernel[kr * kernel_cols + kc];
    output[out_row * output_cols + out_col] = sum;
}
