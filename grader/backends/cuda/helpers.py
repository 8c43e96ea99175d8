"""The grader's own GPU kernels (never a submission's): the generator that draws timing
inputs (floats, 4-byte integers or bytes), the gathers that read a sample of an output
back, the fill of shared memory before a case, the hold that keeps a timed run's
launches queued until all of them are, and a fused multiply-add loop that measures the
GPU's fp32 peak. The generator is generator.h, which the host builds too
(grader.backends.generator), its constants -D macros from grader.backends.timing."""

from __future__ import annotations

from grader.backends.generator import GENERATOR
from grader.backends.timing import generator_macros

SOURCE = (
    GENERATOR.read_text()
    + r"""
// A float32 buffer: each word shaped into a float in +-[0.5, 1.0).
extern "C" __global__ void draw(unsigned* out, unsigned long long n, unsigned k0, unsigned k1) {
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += step)
        out[i] = drawn_bits((unsigned)i, k0, k1);
}

// A buffer of 4-byte integers: the words themselves.
extern "C" __global__ void draw_words(unsigned* out, unsigned long long n, unsigned k0,
                                      unsigned k1) {
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += step)
        out[i] = drawn_word((unsigned)i, k0, k1);
}

// A buffer of bytes: byte i is byte i % 4 of word i / 4 (little endian). Byte stores,
// since the buffer need not start on a word.
extern "C" __global__ void draw_bytes(unsigned char* out, unsigned long long n, unsigned k0,
                                      unsigned k1) {
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += step)
        out[i] = drawn_byte(i, k0, k1);
}

extern "C" __global__ void gather(const unsigned* src, const unsigned* index, unsigned* dst,
                                  int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[index[i]];
}

extern "C" __global__ void gather_bytes(const unsigned char* src, const unsigned* index,
                                        unsigned char* dst, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[index[i]];
}

// Every word of the shared memory a block may have, set to the fill, before a case runs:
// a kernel that reads shared memory no thread wrote reads NaN, as on the CPU backend,
// and not whatever an earlier kernel left (often zeros, which can look right).
extern "C" __global__ void fill_shared(unsigned fill, int words) {
    extern __shared__ unsigned shared[];
    volatile unsigned* out = shared;
    for (int i = threadIdx.x; i < words; i += blockDim.x) out[i] = fill;
}

// Keeps the stream waiting until the host sets *open (mapped host memory), or `limit_ns`
// has passed: the launches queued behind it then run back to back, so a timed interval
// never includes the host's time to launch them.
extern "C" __global__ void hold(volatile unsigned* open, unsigned long long limit_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (!*open && now - start < limit_ns);
}

// Eight independent chains per thread keep every fp32 unit busy.
extern "C" __global__ void fma_peak(float* out, int iterations, float b, float c) {
    float a0 = threadIdx.x * 1e-6f, a1 = a0 + 1.0f, a2 = a0 + 2.0f, a3 = a0 + 3.0f;
    float a4 = a0 + 4.0f, a5 = a0 + 5.0f, a6 = a0 + 6.0f, a7 = a0 + 7.0f;
    #pragma unroll 8
    for (int i = 0; i < iterations; ++i) {
        a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
        a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
    }
    float sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    if (sum == 1234.5f) out[0] = sum;  // never true, but the compiler cannot know
}
"""
)

FMA_CHAINS = 8  # fused multiply-adds per loop iteration of fma_peak, per thread


def options() -> list[str]:
    return [f"-D{name}={value}" for name, value in generator_macros().items()]
