// Known wrong (conv2d-valid): a correct kernel, but the filter array is __device__
// (global memory) where the lab asks for __constant__.
__device__ float c_kernel[4096];

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
            sum += input[(row + kr) * input_cols + col + kc] * c_kernel[kr * kernel_cols + kc];
    output[row * output_cols + col] = sum;
}
