// Known wrong (conv2d-valid): the filter size hard-coded to 3 x 3, the first public
// case's. Right for 64x64-k3x3, wrong for every other filter shape.
#define KSIZE 3

__constant__ float c_kernel[4096];

__global__ void conv2d_valid(const float* input, float* output, int input_rows,
                             int input_cols, int kernel_rows, int kernel_cols,
                             int output_rows, int output_cols)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= output_rows || col >= output_cols) return;
    float sum = 0.0f;
    for (int kr = 0; kr < KSIZE; ++kr)
        for (int kc = 0; kc < KSIZE; ++kc)
            if (kr < kernel_rows && kc < kernel_cols)
                sum += input[(row + kr) * input_cols + col + kc] * c_kernel[kr * KSIZE + kc];
    output[row * output_cols + col] = sum;
}
