// Known wrong (matmul-tiled): the naive multiply, one thread per element of P, copying M's
// row into a local buffer with memcpy 16 floats at a time. Each element still reads 2*Width
// floats of global memory (a GPU's device memcpy is a loop of byte loads), the naive
// kernel's amount, and breaks the traffic rule. The CPU model once missed the copies (g++
// makes a 64-byte one moves that no hook sees): M's reads, half of it, did not count.
#define CHUNK 16

__global__ void matmul(const float* M, const float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width && col < Width) {
        float chunk[CHUNK];
        float sum = 0.0f;
        for (int k = 0; k < Width; k += CHUNK) {
            int count = Width - k < CHUNK ? Width - k : CHUNK;
            if (count == CHUNK)
                memcpy(chunk, &M[row * Width + k], CHUNK * sizeof(float));
            else
                memcpy(chunk, &M[row * Width + k], count * sizeof(float));
            for (int j = 0; j < count; ++j)
                sum += chunk[j] * N[(k + j) * Width + col];
        }
        P[row * Width + col] = sum;
    }
}
