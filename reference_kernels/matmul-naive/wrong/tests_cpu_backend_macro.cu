// Known wrong (matmul-naive): a cheat that computes P only where the grader's CPU backend
// used to say it was running (GRADER_CPU_BACKEND), and writes nothing on a GPU. The CPU
// backend defines no macro of its own: the file is one program on both backends, and
// fails on both.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
#ifdef GRADER_CPU_BACKEND
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
#endif
}
