// The first histogram a student writes: one thread per byte, bins[v]++ without atomics.
// Threads that add to the same bin at once overwrite each other's count (a race).

__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bins[input[i]]++;
}
