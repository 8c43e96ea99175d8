// Known wrong: multiplies M and N rounded to TF32 (10 bits of mantissa, as tensor cores
// round them, here done with integer arithmetic) and adds in float. Every product is
// off by up to 2^-10 of itself: far more than float32's rounding at every size.

__device__ float tf32(float x)
{
    return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u);
}

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += tf32(M[row * Width + k]) * tf32(N[k * Width + col]);
        P[row * Width + col] = sum;
    }
}
