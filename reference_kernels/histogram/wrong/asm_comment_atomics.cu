// Known wrong (histogram): right counts without an atomic, one thread per bin reading the
// whole input, with an asm statement whose text is a PTX comment naming atom. The lab asks
// for atomics: the rule reads instructions (PTX without comments), and on the CPU counts
// what ran.
__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    asm volatile("/*\n\tatom.global.add.u32 %r1, [%rd1], 1;\n*/");
    int bin = blockIdx.x * blockDim.x + threadIdx.x;
    if (blockIdx.x != 0 || bin >= NUM_BINS) return;
    unsigned int count = 0;
    for (int i = 0; i < n; ++i) count += input[i] == bin;
    bins[bin] = count;
}
