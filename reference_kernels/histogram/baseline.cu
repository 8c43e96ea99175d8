// histogram baseline: the course's first histogram kernel. One thread per byte, each
// adding 1 to its bin in global memory with atomicAdd; default blocks of 256 threads.

__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[input[i]], 1u);
}
