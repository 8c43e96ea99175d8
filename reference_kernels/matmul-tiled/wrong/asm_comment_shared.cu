// Known wrong (matmul-tiled): the naive multiply, with an asm statement whose text is a
// PTX comment naming a shared-memory load. No instruction reads shared memory: the rule
// reads instructions (PTX without comments), and on the CPU counts what ran.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    asm volatile("/*\n\tld.shared.f32 %f1, [%r1];\n*/");
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += M[row * Width + k] * N[k * Width + col];
        P[row * Width + col] = sum;
    }
}
