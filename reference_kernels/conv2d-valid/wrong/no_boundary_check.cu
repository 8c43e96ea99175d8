// Known wrong (conv2d-valid): no check that the thread has an output element. Threads
// of the last row and column of blocks read past the end of the input and write past
// the end of the output (or into its next row).
__constant__ float c_kernel[4096];

__global__ void conv2d_valid(const float* input, float* output, int input_rows,
                             int input_cols, int kernel_rows, int kernel_cols,
                             int output_rows, int output_cols)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float sum = 0.0f;
    for (int kr = 0; kr < kernel_rows; ++kr)
        for (int kc = 0; kc < kernel_cols; ++kc)
            sum += input[(row + kr) * input_cols + col + kc] * c_kernel[kr * kernel_cols + kc];
    output[row * output_cols + col] = sum;
}
