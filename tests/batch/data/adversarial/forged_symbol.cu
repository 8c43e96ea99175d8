// Adversarial: defines a symbol in the CPU backend's own namespace, grader_sig_, whose
// data is not a kernel's registration (a count of 100 parameters in 16 bytes).
// Expected: a compile_error charged to the submission, never a grader failure.
extern "C" const int grader_sig_forged[4] = {0x47524431, 100, 0, 0};

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
