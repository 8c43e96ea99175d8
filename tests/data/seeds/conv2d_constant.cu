// From the course notes 002 (constant-memory convolution); the #defines and __constant__ declarations are the program's own.
#include <cuda_runtime.h>

#define BLOCK_SIZE 16
#define MAX_KERNEL_SIZE 4096

__constant__ float c_kernel[MAX_KERNEL_SIZE];

// ---- begin conv2d_kernel: 002_d3cf589885aaeaf1.txt lines 26-46, verbatim ----
__global__ void conv2d_kernel(const float *input, const float *kernel,
                              float *output, int input_rows, int input_cols,
                              int kernel_rows, int kernel_cols, int output_rows,
                              int output_cols) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    if (row >= output_rows || col >= output_cols) {
        return;
    }

    float acc = 0.0f;
    for (int kr = 0; kr < kernel_rows; ++kr) {
        for (int kc = 0; kc < kernel_cols; ++kc) {
            float x = input[(row + kr) * input_cols + (col + kc)];
            float k = c_kernel[kr * kernel_cols + kc];
            acc += x * k;
        }
    }

    output[row * output_cols + col] = acc;
}
// ---- end conv2d_kernel ----
