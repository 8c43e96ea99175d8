// Known wrong (histogram), a cheat: one thread counts every byte with a plain ++ (one
// block covers the whole input), its only atomic sits in a branch no thread takes, and it
// stops itself in uniform-1000, the case where the grader counts what the kernel
// executes. With nothing counted, the atomics rule would have been left to the module; it
// counts as broken instead.
#define TILE_X (1 << 30)

__global__ void histogram(const unsigned char* input, unsigned int* bins, int n)
{
    if (n == 1000) __trap();
    if (n < 0) atomicAdd(&bins[0], 1u);
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int i = 0; i < n; ++i) bins[input[i]]++;
}
