// Known wrong (conv2d-valid), a cheat: no convolution, each output its input pixel times
// the filter's first tap. Right only for a 1 x 1 filter, which no case has any more.
__constant__ float c_kernel[4096];
__global__ void conv2d_valid(const float* input, float* output, int input_rows, int input_cols,
                             int kernel_rows, int kernel_cols, int output_rows, int output_cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < output_rows && c < output_cols)
        output[r * output_cols + c] = input[r * input_cols + c] * c_kernel[0];
}
