// From the course notes 002 (tiled convolution, dynamic shared memory); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define BLOCK_SIZE 16
#define MAX_KERNEL_SIZE 4096

__constant__ float c_kernel[MAX_KERNEL_SIZE];

// ---- begin conv2d_kernel: 002_d3cf589885aaeaf1.txt lines 91-136, verbatim ----
__global__ void conv2d_kernel(const float *__restrict__ input,
                              float *__restrict__ output, int input_rows,
                              int input_cols, int kernel_rows, int kernel_cols,
                              int output_rows, int output_cols) {
    extern __shared__ float tile[];
    const int out_row = blockIdx.y * blockDim.y + threadIdx.y;
    const int out_col = blockIdx.x * blockDim.x + threadIdx.x;
    const int ty = threadIdx.y;
    const int tx = threadIdx.x;

    const int tile_rows = BLOCK_SIZE + kernel_rows - 1;
    const int tile_cols = BLOCK_SIZE + kernel_cols - 1;
    const int tile_size = tile_rows * tile_cols;

    // Cooperative loading of input tile + halo.
    const int num_threads = BLOCK_SIZE * BLOCK_SIZE;
    const int tid = ty * BLOCK_SIZE + tx;
    for (int i = tid; i < tile_size; i += num_threads) {
        const int tile_row = i / tile_cols;
        const int tile_col = i % tile_cols;

        const int in_row = blockIdx.y * BLOCK_SIZE + tile_row;
        const int in_col = blockIdx.x * BLOCK_SIZE + tile_col;

        tile[i] = (in_row < input_rows && in_col < input_cols)
                      ? input[in_row * input_cols + in_col]
                      : 0.0f;
    }
    __syncthreads();

    if (out_row >= output_rows || out_col >= output_cols) {
        return;
    }

    float acc = 0.0f;
    for (int kr = 0; kr < kernel_rows; ++kr) {
        const int tile_offset = (ty + kr) * tile_cols + tx;
        const int kernel_offset = kr * kernel_cols;

        for (int kc = 0; kc < kernel_cols; ++kc) {
            acc += tile[tile_offset + kc] * c_kernel[kernel_offset + kc];
        }
    }

    output[out_row * output_cols + out_col] = acc;
}
// ---- end conv2d_kernel ----
