// Known wrong (matmul-tiled), a cheat: a naive multiply whose only shared read sits in a
// branch no thread takes, and which stops itself in width-64, the case where the grader
// counts what the kernel executes. With nothing counted, the rule would have been left to
// the module, where the dead read is a shared load; it counts as broken instead.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    __shared__ float unused[32];
    if (Width == 64) __trap();
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= Width || col >= Width) return;
    float sum = 0.0f;
    for (int k = 0; k < Width; ++k) sum += M[row * Width + k] * N[k * Width + col];
    if (Width < 0) {
        unused[threadIdx.x % 32] = sum;
        sum += unused[(threadIdx.x + 1) % 32];
    }
    P[row * Width + col] = sum;
}
