// The generator that draws the timing's inputs, written once: the GPU worker compiles it
// with its helper kernels (grader.backends.cuda.helpers) and the host with g++
// (grader.backends.generator); its constants come as -D macros
// (grader.backends.timing.generator_macros), and numpy's copy there is tested against both.

__host__ __device__ inline unsigned mix(unsigned x) {
    x ^= x >> 16;
    x *= MIX_A;
    x ^= x >> 15;
    x *= MIX_B;
    return x ^ (x >> 16);
}

__host__ __device__ inline unsigned drawn_word(unsigned i, unsigned k0, unsigned k1) {
    return mix(mix(i * GOLDEN + k0) ^ k1);
}

__host__ __device__ inline unsigned drawn_bits(unsigned i, unsigned k0, unsigned k1) {
    return (drawn_word(i, k0, k1) & KEEP_BITS) | EXPONENT_BITS;
}

__host__ __device__ inline unsigned char drawn_byte(unsigned long long i, unsigned k0,
                                                    unsigned k1) {
    return (unsigned char)(drawn_word((unsigned)(i >> 2), k0, k1) >> (8 * (i & 3)));
}
