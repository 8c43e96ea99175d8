// Known wrong (histogram): no_atomics.cu with the bin's count read and written through
// memcpy of a size known at run time: the increments of two blocks collide as bins[v]++
// does. The CPU backend's grading builds once called the C library's memcpy, past the
// store hooks, so only the census case saw the collision: two public cases passed.
__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    size_t size = sizeof(unsigned int) * (n > 0);
    if (i < n) {
        unsigned int count;
        memcpy(&count, &bins[input[i]], size);
        ++count;
        memcpy(&bins[input[i]], &count, size);
    }
}
