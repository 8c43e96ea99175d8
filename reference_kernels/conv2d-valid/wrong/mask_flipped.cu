// Known wrong (conv2d-valid): the filter flipped in both directions, a true convolution
// where the lab computes a cross-correlation.
__constant__ float c_kernel[4096];

__global__ void conv2d_valid(const float* input, float* output, int input_rows,
                             int input_cols, int kernel_rows, int kernel_cols,
                             int output_rows, int output_cols)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= output_rows || col >= output_cols) return;
    float sum = 0.0f;
    for (int kr = 0; kr < kernel_rows; ++kr)
        for (int kc = 0; kc < kernel_cols; ++kc)
            sum += input[(row + kr) * input_cols + col + kc] *
                   c_kernel[(kernel_rows - 1 - kr) * kernel_cols + (kernel_cols - 1 - kc)];
    output[row * output_cols + col] = sum;
}
