// Known wrong (matmul-tiled), a cheat: a naive multiply with no shared memory at all,
// which loops forever in width-64, the case where the grader counts what the kernel
// executes. A hang there once left the rule not judged (the compiler may drop the code
// after a loop that never ends); it counts as broken instead.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    if (Width == 64) {
        volatile const float* first = M;  // read anew each time: the loop cannot be dropped
        float seen = first[0];
        while (first[0] == seen) {
        }
    }
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= Width || col >= Width) return;
    float sum = 0.0f;
    for (int k = 0; k < Width; ++k) sum += M[row * Width + k] * N[k * Width + col];
    P[row * Width + col] = sum;
}
