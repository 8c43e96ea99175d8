// Adversarial: template instantiation that recurses without end.
// Expected: compile_error, quickly (the compiler's depth limit).
template <int N>
struct Bomb {
    static const int value = Bomb<N + 1>::value + Bomb<N + 2>::value;
};

static const int boom = Bomb<0>::value;

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
