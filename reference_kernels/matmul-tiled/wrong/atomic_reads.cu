// Known wrong (matmul-tiled): the naive multiply reading M and N through atomicAdd(p, 0),
// which returns the value and is no load: each element still comes from global memory
// Width times, and the traffic rule counts a warp's global atomic as reading 4 bytes a lane.
__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float sum = 0.0f;
        for (int k = 0; k < Width; ++k)
            sum += atomicAdd((float*)&M[row * Width + k], 0.0f) *
                   atomicAdd((float*)&N[k * Width + col], 0.0f);
        P[row * Width + col] = sum;
    }
}
